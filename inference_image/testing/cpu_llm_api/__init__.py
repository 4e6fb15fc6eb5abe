"""TEST DOUBLE: the TensorRT-LLM LLM API, as much of it as our ``tensorrt_llm`` Triton model calls, on CPU.

The image's model imports ``LLM``, ``SamplingParams`` and ``GuidedDecodingParams`` from the module named by
``LLM_ENGINE_MODULE`` (default ``tensorrt_llm``); serve-local and the tests name this one instead, so the
production model.py, config.pbtxt and model.yaml run unchanged and only the PyTorch engine is replaced.
It behaves as TensorRT-LLM 1.2.1's LLM API where our product depends on it (``engine``: the executor loop, the
shared iteration stats, cancellation, KV capacity and prefix reuse with exact ``cached_tokens``, ``n``/``best_of``,
``logprobs``, one sampling generator for the engine); instead of a model it echoes the last text of the prompt.
Limits: docs/serving.md.
"""

from inference_platform.inference_image.testing.cpu_llm_api.engine import LLM, RequestOutput
from inference_platform.inference_image.testing.cpu_llm_api.params import GuidedDecodingParams, SamplingParams

__all__ = ["LLM", "GuidedDecodingParams", "RequestOutput", "SamplingParams"]
