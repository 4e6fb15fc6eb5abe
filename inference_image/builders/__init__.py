"""The Neuron compiler that runs inside the Neuron image on an Inferentia/Trainium node (its framework
imports lazily). It executes a ``build_plan`` plan; everything it decides is in the plan, which is tested
here. GPU stacks compile nothing (TensorRT-LLM's LLM API loads the checkpoint)."""
