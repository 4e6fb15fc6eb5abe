"""Triton model-repository templates, one package per model (TensorRT-LLM's in-flight batching layout).

Each package holds ``config.pbtxt.tmpl`` (rendered strictly by ``inference_platform.inference_image.render``) and, for
Python-backend models, ``model.py`` (copied as ``<model>/1/model.py``). ``llm_io.pbtxt`` is the one
input/output block of the LLM step, shared by ``tensorrt_llm``, ``neuron_llm`` and the CPU stand-in
so the ensemble can call any of them.
"""
