"""TEST DOUBLE: the TensorRT-LLM LLM API, as much of it as our ``tensorrt_llm`` Triton model calls, on CPU.

The image's model imports ``LLM``, ``SamplingParams`` and ``GuidedDecodingParams`` from the module named by
``LLM_ENGINE_MODULE`` (default ``tensorrt_llm``); serve-local and the tests name this one instead, so the
production model.py, config.pbtxt and model.yaml run unchanged and only the PyTorch engine is replaced.
What it does instead of a model: it echoes the last text of the prompt (the words shuffled by ``seed`` when
sampling), ends with the tokenizer's EOS, honours ``max_tokens``/``max_seq_len``/stop strings, constrains
guided requests to their JSON schema or regex for real (``guided``), counts KV-cache blocks reused across
requests (``blocks``), and runs up to ``max_batch_size`` requests at once. Limits: docs/serving.md.
"""

from inference_platform.inference_image.testing.cpu_llm_api.engine import LLM, RequestOutput
from inference_platform.inference_image.testing.cpu_llm_api.params import GuidedDecodingParams, SamplingParams

__all__ = ["LLM", "GuidedDecodingParams", "RequestOutput", "SamplingParams"]
