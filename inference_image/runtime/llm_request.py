"""One request to the LLM step, read from the tensors of NVIDIA's ``tensorrt_llm`` contract.

Shared by the Neuron model and the CPU stand-in so both read requests exactly alike. Tensors arrive
as the Python backend hands them over: with a leading batch dimension, scalars reshaped to ``[batch]``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from inference_platform.inference_image.runtime.words import from_word_list

GUIDE_TYPES = ("json", "json_schema", "regex", "ebnf_grammar")
# Input tensors of the step (model_repository/llm_io.pbtxt) that parse_request reads.
LLM_INPUTS = (
    "input_ids",
    "input_lengths",
    "request_output_len",
    "end_id",
    "pad_id",
    "stop_words_list",
    "bad_words_list",
    "embedding_bias",
    "beam_width",
    "temperature",
    "runtime_top_k",
    "runtime_top_p",
    "len_penalty",
    "repetition_penalty",
    "min_tokens",
    "presence_penalty",
    "frequency_penalty",
    "seed",
    "return_log_probs",
    "return_context_logits",
    "return_generation_logits",
    "return_perf_metrics",
    "exclude_input_in_output",
    "stop",
    "streaming",
    "guided_decoding_guide_type",
    "guided_decoding_guide",
)


class RequestError(ValueError):
    """The request cannot be served as sent; the message is returned to the client."""


@dataclass(frozen=True)
class SamplingParams:
    temperature: float = 1.0
    top_k: int = 0
    """0: no top-k limit (TensorRT-LLM's default)."""
    top_p: float = 0.0
    """0: no nucleus limit."""
    seed: int | None = None
    repetition_penalty: float = 1.0
    presence_penalty: float = 0.0
    frequency_penalty: float = 0.0
    length_penalty: float = 0.0

    @property
    def greedy(self) -> bool:
        return self.top_k == 1 or self.temperature == 0.0


@dataclass(frozen=True)
class LlmRequest:
    input_ids: tuple[int, ...]
    max_new_tokens: int
    end_id: int | None
    pad_id: int | None
    streaming: bool
    exclude_input_in_output: bool | None
    """None: the model's configured default."""
    stop_words: tuple[tuple[int, ...], ...] = ()
    bad_words: tuple[tuple[int, ...], ...] = ()
    beam_width: int = 1
    min_tokens: int = 0
    sampling: SamplingParams = field(default_factory=SamplingParams)
    embedding_bias: tuple[float, ...] = ()
    return_log_probs: bool = False
    return_context_logits: bool = False
    return_generation_logits: bool = False
    return_perf_metrics: bool = False
    guide_type: str | None = None
    guide: str | None = None
    stop: bool = False
    """A client's request to end generation at once (TensorRT-LLM's ``stop`` input)."""


def parse_request(tensors: Mapping[str, np.ndarray | None], *, max_seq_len: int | None = None) -> LlmRequest:
    """An LlmRequest from the step's input tensors; RequestError names the offending tensor."""
    ids = _required(tensors, "input_ids")
    if ids.ndim != 2 or ids.shape[0] != 1:
        raise RequestError(f"input_ids: one sequence per request, got shape {list(ids.shape)}")
    length = _scalar(tensors, "input_lengths", int, default=ids.shape[1])
    if not 1 <= length <= ids.shape[1]:
        raise RequestError(f"input_lengths: {length} does not fit {ids.shape[1]} input_ids (at least 1 token)")
    input_ids = tuple(int(t) for t in ids[0, :length])
    max_new = _scalar(tensors, "request_output_len", int, default=None)
    if max_new is None or max_new < 1:
        raise RequestError(f"request_output_len: must be >= 1, got {max_new}")
    if max_seq_len is not None and length + 1 > max_seq_len:
        raise RequestError(f"input of {length} tokens leaves no room below max_seq_len {max_seq_len}")
    end_id = _scalar(tensors, "end_id", int, default=-1)
    pad_id = _scalar(tensors, "pad_id", int, default=-1)
    beam_width = _scalar(tensors, "beam_width", int, default=1)
    if beam_width < 1:
        raise RequestError(f"beam_width: must be >= 1, got {beam_width}")
    guide_type = _text(tensors, "guided_decoding_guide_type")
    guide = _text(tensors, "guided_decoding_guide")
    if guide_type is not None and guide_type not in GUIDE_TYPES:
        raise RequestError(f"guided_decoding_guide_type: {guide_type!r} is not one of {', '.join(GUIDE_TYPES)}")
    if guide_type not in (None, "json") and not guide:
        raise RequestError(f"guided_decoding_guide: required with guide type {guide_type}")
    bias = tensors.get("embedding_bias")
    try:
        stop_words = from_word_list(tensors.get("stop_words_list"))
        bad_words = from_word_list(tensors.get("bad_words_list"))
    except ValueError as err:
        raise RequestError(f"stop_words_list/bad_words_list: {err}") from None
    return LlmRequest(
        input_ids=input_ids,
        max_new_tokens=max_new,
        end_id=None if end_id < 0 else end_id,
        pad_id=None if pad_id < 0 else pad_id,
        streaming=_scalar(tensors, "streaming", bool, default=False),
        exclude_input_in_output=_scalar(tensors, "exclude_input_in_output", bool, default=None),
        stop_words=tuple(tuple(w) for w in stop_words),
        bad_words=tuple(tuple(w) for w in bad_words),
        beam_width=beam_width,
        min_tokens=max(0, _scalar(tensors, "min_tokens", int, default=0)),
        sampling=SamplingParams(
            temperature=_scalar(tensors, "temperature", float, default=1.0),
            top_k=_scalar(tensors, "runtime_top_k", int, default=0),
            top_p=_scalar(tensors, "runtime_top_p", float, default=0.0),
            seed=_scalar(tensors, "seed", int, default=None),
            repetition_penalty=_scalar(tensors, "repetition_penalty", float, default=1.0),
            presence_penalty=_scalar(tensors, "presence_penalty", float, default=0.0),
            frequency_penalty=_scalar(tensors, "frequency_penalty", float, default=0.0),
            length_penalty=_scalar(tensors, "len_penalty", float, default=0.0),
        ),
        embedding_bias=() if bias is None else tuple(float(x) for x in np.asarray(bias).reshape(-1)),
        return_log_probs=_scalar(tensors, "return_log_probs", bool, default=False),
        return_context_logits=_scalar(tensors, "return_context_logits", bool, default=False),
        return_generation_logits=_scalar(tensors, "return_generation_logits", bool, default=False),
        return_perf_metrics=_scalar(tensors, "return_perf_metrics", bool, default=False),
        guide_type=guide_type,
        guide=guide,
        stop=_scalar(tensors, "stop", bool, default=False),
    )


def _required(tensors: Mapping[str, np.ndarray | None], name: str) -> np.ndarray:
    value = tensors.get(name)
    if value is None:
        raise RequestError(f"{name}: required")
    return np.asarray(value)


def _scalar(tensors, name, kind, *, default):
    value = tensors.get(name)
    if value is None:
        return default
    array = np.asarray(value).reshape(-1)
    if array.size == 0:
        return default
    if array.size != 1:
        raise RequestError(f"{name}: expected one value per request, got {array.size}")
    item = array[0]
    return bool(item) if kind is bool else kind(item)


def _text(tensors: Mapping[str, np.ndarray | None], name: str) -> str | None:
    value = tensors.get(name)
    if value is None:
        return None
    array = np.asarray(value).reshape(-1)
    if array.size == 0:
        return None
    if array.size != 1:
        raise RequestError(f"{name}: expected one string per request, got {array.size}")
    item = array[0]
    text = item.decode("utf-8") if isinstance(item, bytes) else str(item)
    return text or None
