"""The serving runtime on TensorRT-LLM's PyTorch LLM API: the pinned release, its argument schema, the
``tensorrt_llm`` Triton model and its configuration rendered from the serving settings."""
