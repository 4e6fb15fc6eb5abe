"""TEST DOUBLES for running the real Triton server on a machine without GPUs.

``cpu_llm_api`` stands in for TensorRT-LLM's PyTorch engine behind the production LLM-API model;
``assets`` writes the tiny byte-level tokenizer. Nothing here is used by a served repository unless the
stand-in is asked for by name (serve-local, tests).
"""
