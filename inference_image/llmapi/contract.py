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
    # Ours (the LLM API's SamplingParams.add_special_tokens): false for a prompt the chat template rendered.
    Tensor("sampling_param_add_special_tokens", "TYPE_BOOL", (1,), optional=True),
    # Ours: GUIDE_TYPES, and the schema JSON / regex / EBNF (none for json_object).
    Tensor("guided_decoding_guide_type", "TYPE_STRING", (1,), optional=True),
    Tensor("guided_decoding_guide", "TYPE_STRING", (1,), optional=True),
    Tensor("stop", "TYPE_BOOL", (1,), optional=True),
)

OUTPUTS = (
    # Streaming: the text new in this response; otherwise the whole answer.
    Tensor("text_output", "TYPE_STRING", (1,)),
    # "" until the last response, then stop | length | cancelled | timeout.
    Tensor("finish_reason", "TYPE_STRING", (1,)),
    Tensor("num_input_tokens", "TYPE_INT32", (1,)),
    Tensor("num_output_tokens", "TYPE_INT32", (1,)),
    Tensor("num_cached_tokens", "TYPE_INT32", (1,)),
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
