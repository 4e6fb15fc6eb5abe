"""The inference image: Triton model-repository templates, their strict renderer, the engine builder
(``prepare``), the container entrypoint and the Triton Python models (tokenizer, detokenizer, BLS,
Neuron LLM). ``inference_platform.inference_image.testing`` holds the CPU stand-in for the TensorRT-LLM step (a test
double, never shipped in a served repository unless asked for by name).
"""
