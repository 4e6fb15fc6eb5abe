"""Template of the ``tensorrt_llm`` model: the TensorRT-LLM C++ backend (in-flight batching)."""
