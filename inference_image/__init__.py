"""The inference images: the container entrypoint and its drain supervisor (``serve``, ``drain``), the model
repository the pod renders from the stack's settings (GPU: TensorRT-LLM's LLM API behind our ``tensorrt_llm``
Python model, ``llmapi/``; Neuron: ``neuron/``), the OpenAI server in front of Triton (``openai_api/``), Neuron
compilation (``prepare``) and the readiness check. ``inference_platform.inference_image.testing`` holds the CPU
stand-in for the LLM API (a test double, never shipped in a served repository unless asked for by name).
"""
