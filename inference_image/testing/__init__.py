"""TEST DOUBLES for running the real Triton server on a machine without GPUs.

``cpu_llm`` stands in for the TensorRT-LLM step (same tensors, decoupled, deterministic echo);
``assets`` writes the tiny byte-level tokenizer and the stand-in engine directory it reads. Nothing
here is used by a served repository unless the stand-in is asked for by name (serve-local, tests).
"""
