"""The LLM-API model's text contract (``inference_image/llmapi/contract.py``) for an engine that works in token ids.

The OpenAI server sends the same tensors to whichever Triton model serves the stack: ``tensorrt_llm`` (the LLM API
does the tokenizing, stop strings and detokenizing itself) or ``neuron_llm``, whose engine (NxD Inference, driven by
``runtime.neuron_engine``) takes and returns token ids. This module is that engine's side of the contract:

- ``parse_text_request``: ``text_input`` tokenized (``sampling_param_add_special_tokens``), sampling parameters,
  the model's stop tokens as one-token stop words, stop strings kept as text; refusals name the input.
- ``TextStream``: the engine's token chunks as contract outputs: ``text_output`` (new text per streamed response,
  the whole answer otherwise; a stop string ends the answer before it and is never sent, so the tail that could
  still become one is held back), ``finish_reason`` ("" until the end, then stop | length | cancelled),
  ``num_input_tokens``, ``num_output_tokens`` (cumulative) and ``num_cached_tokens`` (always 0: no reuse on Neuron).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from inference_platform.inference_image.runtime.detokenize import IncrementalText
from inference_platform.inference_image.runtime.generation import FinishReason, SequenceState
from inference_platform.inference_image.runtime.llm_request import LlmRequest, SamplingParams
from inference_platform.inference_image.runtime.tokenizer import Tokenizer

DEFAULT_MAX_TOKENS = 32
"""The LLM API's SamplingParams default, for a request without sampling_param_max_tokens."""
NOT_ON_NEURON = "structured output is not available on Neuron (catalog/serving_features.py)"
_Number = TypeVar("_Number", bool, int, float)
_Default = TypeVar("_Default")

_REASONS: dict[FinishReason | None, str] = {
    FinishReason.END_ID: "stop",
    FinishReason.STOP_WORD: "stop",
    FinishReason.LENGTH: "length",
    FinishReason.STOPPED: "cancelled",
    FinishReason.CANCELLED: "cancelled",
}


class TextRequestError(ValueError):
    """A request the contract refuses; the message names the input."""


@dataclass(frozen=True)
class TextRequest:
    llm: LlmRequest
    stop_strings: tuple[str, ...]


REFUSED_ON_NEURON = {
    "sampling_param_n": "one sequence per request",
    "sampling_param_best_of": "one sequence per request",
    "sampling_param_logprobs": "no logprobs from the on-device sampler",
    "sampling_param_logit_bias": "no logits bias in the on-device sampler",
    "sampling_param_ignore_eos": "the end tokens always end a sequence",
    "sampling_param_include_stop_str_in_output": "stop strings are never sent",
}
"""Contract inputs the Neuron engine does not implement: refused when set to anything but their default."""
_DEFAULTS = {"sampling_param_n": 1, "sampling_param_best_of": 1, "sampling_param_logprobs": 0}


def parse_text_request(
    tensors: Mapping[str, np.ndarray | None], tokenizer: Tokenizer, *, stop_token_ids: tuple[int, ...], max_seq_len: int
) -> TextRequest:
    guide = _string(tensors, "guided_decoding_guide_type")
    if guide:
        raise TextRequestError(f"guided_decoding_guide_type: got {guide!r}; {NOT_ON_NEURON}")
    for name, why in REFUSED_ON_NEURON.items():
        value = _first(tensors, name)
        if value is not None and value not in (_DEFAULTS.get(name, False), b"", ""):
            raise TextRequestError(f"{name}: not available on Neuron ({why})")
    text = _string(tensors, "text_input")
    if not text:
        raise TextRequestError("text_input: required, one non-empty string")
    ids = tokenizer.encode(text, add_special_tokens=_scalar(tensors, "sampling_param_add_special_tokens", bool, True))
    if len(ids) >= max_seq_len:
        raise TextRequestError(f"text_input: {len(ids)} tokens; the model takes at most {max_seq_len - 1}")
    max_tokens = _scalar(tensors, "sampling_param_max_tokens", int, DEFAULT_MAX_TOKENS)
    if max_tokens < 1:
        raise TextRequestError(f"sampling_param_max_tokens: got {max_tokens}; at least 1")
    seed = _scalar(tensors, "sampling_param_seed", int, None)
    sampling = SamplingParams(
        temperature=_scalar(tensors, "sampling_param_temperature", float, 1.0),
        top_k=_scalar(tensors, "sampling_param_top_k", int, 0),
        top_p=_scalar(tensors, "sampling_param_top_p", float, 0.0),
        seed=seed,
        presence_penalty=_scalar(tensors, "sampling_param_presence_penalty", float, 0.0),
        frequency_penalty=_scalar(tensors, "sampling_param_frequency_penalty", float, 0.0),
        repetition_penalty=_scalar(tensors, "sampling_param_repetition_penalty", float, 1.0),
    )
    given = tensors.get("sampling_param_stop_token_ids")
    extra_stops = () if given is None else tuple(int(t) for t in np.asarray(given).reshape(-1))
    llm = LlmRequest(
        input_ids=tuple(ids),
        max_new_tokens=max_tokens,
        end_id=None,
        pad_id=None,
        streaming=_scalar(tensors, "streaming", bool, False),
        exclude_input_in_output=True,  # the contract never echoes the prompt
        stop_words=tuple((int(t),) for t in (*stop_token_ids, *extra_stops)),
        min_tokens=max(0, _scalar(tensors, "sampling_param_min_tokens", int, 0)),
        sampling=sampling,
        stop=_scalar(tensors, "stop", bool, False),
    )
    stops = tuple(s for s in _strings(tensors, "sampling_param_stop") if s)
    return TextRequest(llm=llm, stop_strings=stops)


class TextStream:
    """One request's outputs, fed the engine's chunks in order."""

    def __init__(self, request: TextRequest, tokenizer: Tokenizer) -> None:
        self.request = request
        self._text = IncrementalText(tokenizer, skip_special_tokens=True)
        self._answer = ""
        self._sent = 0
        self.stopped_by_string = False
        self.done = False

    def outputs(self, tokens: tuple[int, ...], state: SequenceState, *, final: bool) -> dict[str, np.ndarray] | None:
        """The response for this chunk; None when nothing is due (held-back text, or already finished)."""
        if self.done:
            return None
        piece = self._text.add(tokens)
        if final:
            piece += self._text.flush()
        self._answer += piece
        cut = self._stop_at()
        if cut is not None:
            self._answer, self.stopped_by_string, final = self._answer[:cut], True, True
        if not final and not self.request.llm.streaming:
            return None
        upto = len(self._answer) if final else len(self._answer) - self._held_back()
        if self.request.llm.streaming:
            text, self._sent = self._answer[self._sent : upto], max(self._sent, upto)
        else:
            text = self._answer
        if not final and not text:
            return None
        self.done = final
        reason = "stop" if self.stopped_by_string else (_REASONS.get(state.finish_reason, "") if final else "")
        generated = len(state.generated) - (1 if state.finish_reason == FinishReason.STOP_WORD else 0)
        return {
            "text_output": np.array([text.encode()], dtype=np.object_),
            "finish_reason": np.array([reason.encode()], dtype=np.object_),
            "num_input_tokens": np.array([len(self.request.llm.input_ids)], dtype=np.int32),
            "num_output_tokens": np.array([max(0, generated)], dtype=np.int32),
            "num_cached_tokens": np.array([0], dtype=np.int32),
        }

    def _stop_at(self) -> int | None:
        found = [i for i in (self._answer.find(s) for s in self.request.stop_strings) if i >= 0]
        return min(found) if found else None

    def _held_back(self) -> int:
        """Length of the answer's tail that is a proper prefix of a stop string (it may still become one)."""
        tail = 0
        for stop in self.request.stop_strings:
            for n in range(min(len(stop) - 1, len(self._answer)), 0, -1):
                if self._answer.endswith(stop[:n]):
                    tail = max(tail, n)
                    break
        return tail


def _first(tensors: Mapping[str, np.ndarray | None], name: str) -> object | None:
    value = tensors.get(name)
    if value is None or np.asarray(value).size == 0:
        return None
    return np.asarray(value).reshape(-1)[0]


def _scalar(
    tensors: Mapping[str, np.ndarray | None], name: str, kind: type[_Number], default: _Default
) -> _Number | _Default:
    value = _first(tensors, name)
    if value is None:
        return default
    try:
        raw: Any = value.item() if hasattr(value, "item") else value  # whatever the request sent: kind() judges it
        return kind(raw)
    except (TypeError, ValueError):
        raise TextRequestError(f"{name}: got {value!r}; expected {kind.__name__}") from None


def _decode(value: object) -> str:
    if isinstance(value, bytes):
        try:
            return value.decode()
        except UnicodeDecodeError:
            raise TextRequestError("a string input is not UTF-8") from None
    return str(value)


def _string(tensors: Mapping[str, np.ndarray | None], name: str) -> str | None:
    value = _first(tensors, name)
    return None if value is None else _decode(value)


def _strings(tensors: Mapping[str, np.ndarray | None], name: str) -> list[str]:
    value = tensors.get(name)
    return [] if value is None else [_decode(v) for v in np.asarray(value).reshape(-1)]
