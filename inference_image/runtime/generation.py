"""Stopping rules and response shaping of the LLM step, as TensorRT-LLM applies them.

A ``SequenceState`` receives the engine's tokens one at a time and says what to send: in streaming
mode one response per new token, otherwise one response with the whole output at the end. It stops
on ``end_id`` (not included in the output, ignored before ``min_tokens``), on a stop word (included),
at ``request_output_len`` new tokens and at ``max_seq_len`` total tokens.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from enum import Enum

from inference_platform.inference_image.runtime.llm_request import LlmRequest


class FinishReason(Enum):
    END_ID = "end_id"
    STOP_WORD = "stop_word"
    LENGTH = "length"
    STOPPED = "stopped"
    CANCELLED = "cancelled"


@dataclass(frozen=True)
class Chunk:
    """One response: ``tokens`` are its output_ids (beam 1); ``final`` closes the request."""

    tokens: tuple[int, ...]
    final: bool
    log_probs: tuple[float, ...] = ()


@dataclass
class Timings:
    """Nanosecond wall-clock stamps for the perf-metric outputs."""

    arrival_ns: int = field(default_factory=time.time_ns)
    first_scheduled_ns: int = 0
    first_token_ns: int = 0
    last_token_ns: int = 0


class SequenceState:
    def __init__(self, request: LlmRequest, *, exclude_input_default: bool, max_seq_len: int | None = None) -> None:
        self.request = request
        self.exclude_input = (
            exclude_input_default if request.exclude_input_in_output is None else request.exclude_input_in_output
        )
        limit = request.max_new_tokens
        if max_seq_len is not None:
            limit = min(limit, max_seq_len - len(request.input_ids))
        self.limit = max(1, limit)
        self.generated: list[int] = []
        self.log_probs: list[float] = []
        self.finish_reason: FinishReason | None = None
        self.timings = Timings()

    @property
    def done(self) -> bool:
        return self.finish_reason is not None

    def push(self, token: int, log_prob: float = 0.0) -> Chunk | None:
        """Feed the engine's next token; returns the response to send, if any."""
        if self.done:
            return None
        now = time.time_ns()
        if not self.timings.first_scheduled_ns:
            self.timings.first_scheduled_ns = now
        end_id = self.request.end_id
        if end_id is not None and token == end_id:
            if len(self.generated) >= self.request.min_tokens:
                return self.finish(FinishReason.END_ID)
            return None  # TensorRT-LLM masks EOS until min_tokens; an engine that emits it anyway is ignored
        self.generated.append(int(token))
        self.log_probs.append(float(log_prob))
        self.timings.first_token_ns = self.timings.first_token_ns or now
        self.timings.last_token_ns = now
        if self._hit_stop_word():
            return self.finish(FinishReason.STOP_WORD, with_last=True)
        if len(self.generated) >= self.limit:
            return self.finish(FinishReason.LENGTH, with_last=True)
        if self.request.streaming:
            return Chunk((int(token),), final=False, log_probs=(float(log_prob),))
        return None

    def finish(self, reason: FinishReason, *, with_last: bool = False) -> Chunk:
        """Close the request; the final response (streaming: the last token or nothing new)."""
        self.finish_reason = reason
        if self.request.streaming:
            if with_last and self.generated:
                return Chunk((self.generated[-1],), final=True, log_probs=(self.log_probs[-1],))
            return Chunk((), final=True)
        prompt = () if self.exclude_input else self.request.input_ids
        return Chunk(tuple(prompt) + tuple(self.generated), final=True, log_probs=tuple(self.log_probs))

    def _hit_stop_word(self) -> bool:
        tail = self.generated
        return any(len(word) <= len(tail) and tuple(tail[-len(word) :]) == word for word in self.request.stop_words)


def completes_word(history: list[int], token: int, words: tuple[tuple[int, ...], ...]) -> bool:
    """True when ``token`` would complete one of ``words`` (bad words are never emitted)."""
    for word in words:
        prefix = len(word) - 1
        if word[-1] == token and len(history) >= prefix and tuple(history[len(history) - prefix :]) == word[:-1]:
            return True
    return False
