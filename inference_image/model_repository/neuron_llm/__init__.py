"""The ``neuron_llm`` model: the LLM step on AWS Neuron through NxD Inference (Python backend)."""
