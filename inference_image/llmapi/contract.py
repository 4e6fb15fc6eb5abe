"""The tensors of our ``tensorrt_llm`` model: what the OpenAI server sends and reads, what model.py serves.

Names follow TensorRT-LLM's own LLM-API model (``triton_backend/all_models/llmapi/tensorrt_llm/config.pbtxt``,
``SOURCE``) wherever it has the tensor; it has no guided-decoding input and no token counts, which issue 20
needs (``response_format``, ``usage``), so those are added under the names the C++ backend and Triton's
OpenAI frontend already use for them (``guided_decoding_guide_type``/``guided_decoding_guide``,
``num_input_tokens``/``num_output_tokens``). docs/serving.md says why the model is ours.
"""

from __future__ import annotations

from dataclasses import dataclass

MODEL_NAME = "tensorrt_llm"
SOURCE = (
    "NVIDIA/TensorRT-LLM triton_backend/all_models/llmapi/tensorrt_llm/config.pbtxt and 1/helpers.py "
    "(the 1.2 line): text_input STRING [-1], streaming BOOL [1], sampling_param_* [1], stop BOOL [1]"
)
GUIDE_TYPES = ("json_object", "json_schema", "regex", "ebnf")


@dataclass(frozen=True)
class Tensor:
    name: str
    data_type: str
    dims: tuple[int, ...]
    optional: bool = False


INPUTS = (
    Tensor("text_input", "TYPE_STRING", (-1,)),
    Tensor("streaming", "TYPE_BOOL", (1,), optional=True),
    Tensor("sampling_param_temperature", "TYPE_FP32", (1,), optional=True),
    Tensor("sampling_param_top_k", "TYPE_INT32", (1,), optional=True),
    Tensor("sampling_param_top_p", "TYPE_FP32", (1,), optional=True),
    Tensor("sampling_param_frequency_penalty", "TYPE_FP32", (1,), optional=True),
    Tensor("sampling_param_presence_penalty", "TYPE_FP32", (1,), optional=True),
    Tensor("sampling_param_max_tokens", "TYPE_INT32", (1,), optional=True),
    Tensor("sampling_param_stop", "TYPE_STRING", (-1,), optional=True),
    Tensor("sampling_param_seed", "TYPE_UINT64", (1,), optional=True),
    Tensor("sampling_param_exclude_input_from_output", "TYPE_BOOL", (1,), optional=True),
    # Ours (the LLM API's SamplingParams fields of the same name; issue 27 maps the OpenAI/vLLM extensions to them).
    Tensor("sampling_param_add_special_tokens", "TYPE_BOOL", (1,), optional=True),
    Tensor("sampling_param_min_tokens", "TYPE_INT32", (1,), optional=True),
    Tensor("sampling_param_ignore_eos", "TYPE_BOOL", (1,), optional=True),
    Tensor("sampling_param_repetition_penalty", "TYPE_FP32", (1,), optional=True),
    Tensor("sampling_param_stop_token_ids", "TYPE_INT32", (-1,), optional=True),
    Tensor("sampling_param_include_stop_str_in_output", "TYPE_BOOL", (1,), optional=True),
    Tensor("sampling_param_skip_special_tokens", "TYPE_BOOL", (1,), optional=True),
    Tensor("sampling_param_n", "TYPE_INT32", (1,), optional=True),
    Tensor("sampling_param_best_of", "TYPE_INT32", (1,), optional=True),
    Tensor("sampling_param_logprobs", "TYPE_INT32", (1,), optional=True),
    # JSON {"<token id>": bias}: the model makes SamplingParams.embedding_bias (one float per vocabulary entry) of it.
    Tensor("sampling_param_logit_bias", "TYPE_STRING", (1,), optional=True),
    # Ours: GUIDE_TYPES, and the schema JSON / regex / EBNF (none for json_object).
    Tensor("guided_decoding_guide_type", "TYPE_STRING", (1,), optional=True),
    Tensor("guided_decoding_guide", "TYPE_STRING", (1,), optional=True),
    Tensor("stop", "TYPE_BOOL", (1,), optional=True),
    # Ours: a liveness ping answered by the model's own event loop, never by the engine (liveness_* outputs).
    Tensor("liveness", "TYPE_BOOL", (1,), optional=True),
)

OUTPUTS = (
    # One entry per returned sequence (n). Streaming: the text new in this response; otherwise the whole answer.
    Tensor("text_output", "TYPE_STRING", (-1,)),
    # "" until a sequence's last response, then stop | length | cancelled | timeout.
    Tensor("finish_reason", "TYPE_STRING", (-1,)),
    Tensor("num_input_tokens", "TYPE_INT32", (1,)),
    Tensor("num_output_tokens", "TYPE_INT32", (-1,)),
    # The engine's exact count (GenerationResult.cached_tokens), not reused blocks x block size.
    Tensor("num_cached_tokens", "TYPE_INT32", (1,)),
    # With sampling_param_logprobs: per sequence, JSON {"ids": [new token ids], "top": [[[id, logprob, rank], ...]]}.
    Tensor("logprobs", "TYPE_STRING", (-1,)),
    # Seconds from the engine's arrival to its first scheduling of the request (perf metrics' timing).
    Tensor("queue_time_s", "TYPE_FP32", (1,)),
    # Answer to a liveness ping: requests the model holds, and seconds since the engine last showed progress.
    Tensor("liveness_in_flight", "TYPE_INT32", (1,)),
    Tensor("liveness_stalled_s", "TYPE_FP32", (1,)),
)

# config.pbtxt parameters model.py reads.
PARAMETER_LLM_CONFIG = "llm_config"
PARAMETER_STOP_WORDS = "stop_words"
PARAMETER_CANCELLATION_PERIOD = "cancellation_check_period_ms"
LLM_CONFIG_FILE = "model.yaml"
CANCELLATION_CHECK_PERIOD_MS = 100
"""Upstream's default (model.py: cancellation_check_period_ms, 100): a dropped client frees its slot
within 0.1 s."""


def io_block(kind: str, tensors: tuple[Tensor, ...]) -> str:
    """``input [...]`` or ``output [...]`` in Triton's protobuf text format."""
    entries = []
    for t in tensors:
        dims = ", ".join(str(d) for d in t.dims)
        optional = "    optional: true\n" if t.optional else ""
        entries.append(
            f'  {{\n    name: "{t.name}"\n    data_type: {t.data_type}\n    dims: [ {dims} ]\n{optional}  }}'
        )
    return f"{kind} [\n" + ",\n".join(entries) + "\n]\n"
