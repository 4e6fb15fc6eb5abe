"""One OpenAI request end to end: the prompt, the limits, the engine call, the response objects and ``usage``.

``usage`` is the engine's own count (``num_input_tokens``, ``num_output_tokens``, ``num_cached_tokens`` of the
``tensorrt_llm`` model), in every response and in the last chunk of every stream.
"""

from __future__ import annotations

import contextlib
import json
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from inference_platform.catalog.serving_contract import USAGE_COMMENT_PREFIX
from inference_platform.inference_image.openai_api.chat_template import ChatTemplateError
from inference_platform.inference_image.openai_api.errors import (
    CONTEXT_LENGTH_EXCEEDED,
    SERVER_ERROR,
    ApiError,
    invalid,
    unknown_model,
)
from inference_platform.inference_image.openai_api.llm_client import (
    FINISH_REASONS,
    EngineError,
    TritonLlm,
    Update,
    engine_inputs,
)
from inference_platform.inference_image.openai_api.model_files import Prompt, Prompting
from inference_platform.inference_image.openai_api.requests import Generation
from inference_platform.inference_image.readiness import GenerationCheck, deadline_from_env

COMPLETIONS_DEFAULT_MAX_TOKENS = 16
"""OpenAI's default ``max_tokens`` for /v1/completions (chat defaults to what the context leaves)."""
DONE = b"data: [DONE]\n\n"


@dataclass(frozen=True, kw_only=True)
class Limits:
    max_input_len: int
    """Longest prompt in tokens (the engine's ``max_input_len``)."""
    max_seq_len: int
    """Longest prompt + completion in tokens (the engine's ``max_seq_len``)."""


@dataclass
class _Tally:
    """What the engine has said about one request so far."""

    text: str = ""
    finish: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_tokens: int | None = None

    def add(self, update: Update) -> None:
        self.text += update.delta
        self.finish = update.finish_reason or self.finish
        for name in ("input_tokens", "output_tokens", "cached_tokens"):
            value = getattr(update, name)
            if value is not None:
                setattr(self, name, value)

    def finish_reason(self) -> str:
        return FINISH_REASONS.get(self.finish or "stop", "stop")

    def running(self) -> bytes:
        """The usage so far as the SSE comment line the edge meters (``serving_contract.USAGE_COMMENT_PREFIX``);
        empty until the engine has given both counts."""
        if self.input_tokens is None or self.output_tokens is None:
            return b""
        counts = {
            "prompt_tokens": self.input_tokens,
            "completion_tokens": self.output_tokens,
            "total_tokens": self.input_tokens + self.output_tokens,
            "cached_tokens": self.cached_tokens or 0,
        }
        return (USAGE_COMMENT_PREFIX + json.dumps(counts, separators=(",", ":")) + "\n").encode()

    def usage(self) -> dict[str, Any]:
        if self.input_tokens is None or self.output_tokens is None:
            raise EngineError("the model returned no token counts (num_input_tokens/num_output_tokens)")
        return {
            "prompt_tokens": self.input_tokens,
            "completion_tokens": self.output_tokens,
            "total_tokens": self.input_tokens + self.output_tokens,
            "prompt_tokens_details": {"cached_tokens": self.cached_tokens or 0},
        }


class Service:
    def __init__(
        self,
        *,
        served_model: str,
        prompting: Prompting,
        engine: TritonLlm,
        limits: Limits,
        streaming_engine: bool,
        created: int | None = None,
    ) -> None:
        self.served_model = served_model
        self.prompting = prompting
        self.engine = engine
        self.limits = limits
        self.streaming_engine = streaming_engine
        """Whether the model is decoupled (it refuses ``streaming`` otherwise; a stream then gets one chunk)."""
        self.created = created if created is not None else int(time.time())
        self.readiness = GenerationCheck(self._one_token, deadline_seconds=deadline_from_env())
        """The pod's readiness (``/health``): a token seen lately, else a 1-token generation in time."""

    async def _one_token(self) -> None:
        prompt = self.prompting.prompt("ok", templated=False)
        probe = Generation(
            kind="completion",
            model=self.served_model,
            prompt="ok",
            stream=False,
            include_usage=False,
            max_tokens=1,
            temperature=None,
            top_p=None,
            seed=None,
            stop=(),
            frequency_penalty=None,
            presence_penalty=None,
            guide=None,
        )
        async for _ in self.engine.generate(engine_inputs(probe, prompt, max_tokens=1, streaming=False)):
            pass

    def model_card(self) -> dict[str, Any]:
        return {"id": self.served_model, "object": "model", "created": self.created, "owned_by": "inference-platform"}

    def prepare(self, generation: Generation) -> tuple[Prompt, int]:
        """The engine prompt and max_tokens, or the OpenAI error a request beyond the model's limits gets."""
        if generation.model != self.served_model:
            raise unknown_model(generation.model, self.served_model)
        chat = generation.kind == "chat"
        prompt = self.prompting.prompt(self._prompt_text(generation), templated=chat)
        field = "messages" if chat else "prompt"
        if prompt.tokens > self.limits.max_input_len:
            raise invalid(
                f"This model's maximum input length is {self.limits.max_input_len} tokens. However, your "
                f"{field} resulted in {prompt.tokens} tokens. Please reduce the length of the {field}.",
                param=field,
                code=CONTEXT_LENGTH_EXCEEDED,
            )
        room = self.limits.max_seq_len - prompt.tokens
        max_tokens = generation.max_tokens
        if max_tokens is None:
            max_tokens = room if chat else min(room, COMPLETIONS_DEFAULT_MAX_TOKENS)
        elif max_tokens > room:
            raise invalid(
                f"This model's maximum context length is {self.limits.max_seq_len} tokens. However, you requested "
                f"{prompt.tokens + max_tokens} tokens ({prompt.tokens} in the {field}, {max_tokens} for the "
                "completion). Please reduce the length of the messages or completion.",
                param="max_tokens",
                code=CONTEXT_LENGTH_EXCEEDED,
            )
        return prompt, max_tokens

    def _prompt_text(self, generation: Generation) -> str:
        if generation.kind == "completion":
            return generation.prompt
        template = self.prompting.chat_template
        if template is None:
            raise invalid("this model has no chat template: use /v1/completions", param="messages")
        try:
            return template.render(generation.messages, add_generation_prompt=True)
        except ChatTemplateError as err:
            raise invalid(f"the model's chat template refused the messages: {err}", param="messages") from None

    async def _updates(self, generation: Generation, prompt: Prompt, max_tokens: int) -> AsyncIterator[Update]:
        # A whole answer is streamed from the engine too: Triton notices a closed connection only when it
        # writes, so without a response per token a client that left would hold its slot to the end.
        streaming = self.streaming_engine
        inputs = engine_inputs(generation, prompt, max_tokens=max_tokens, streaming=streaming)
        async with contextlib.aclosing(self.engine.generate(inputs)) as updates:
            async for update in updates:
                if update.delta or update.output_tokens:
                    self.readiness.note_token()
                yield update

    async def complete(self, generation: Generation) -> dict[str, Any]:
        prompt, max_tokens = self.prepare(generation)
        tally = _Tally()
        try:
            async for update in self._updates(generation, prompt, max_tokens):
                tally.add(update)
            usage = tally.usage()
        except EngineError as err:
            raise ApiError(500, f"the model failed: {err.message}", type=SERVER_ERROR) from None
        out = _envelope(generation)
        if generation.kind == "chat":
            message = {"role": "assistant", "content": tally.text}
            out["choices"] = [
                {"index": 0, "message": message, "logprobs": None, "finish_reason": tally.finish_reason()}
            ]
        else:
            out["choices"] = [
                {"index": 0, "text": tally.text, "logprobs": None, "finish_reason": tally.finish_reason()}
            ]
        out["usage"] = usage
        return out

    def stream(self, generation: Generation, *, metered: bool = False) -> AsyncIterator[bytes]:
        """Server-sent events. Raises ApiError before the first byte; a later failure becomes an error event.
        ``metered`` (the edge asked, ``serving_contract.USAGE_METER_HEADER``): the running usage goes before each
        event that adds tokens, and before the last one, as a comment line."""
        prompt, max_tokens = self.prepare(generation)
        return self._events(generation, prompt, max_tokens, metered)

    async def _events(
        self, generation: Generation, prompt: Prompt, max_tokens: int, metered: bool = False
    ) -> AsyncIterator[bytes]:
        chat = generation.kind == "chat"
        envelope = _envelope(generation, chunk=True)
        tally = _Tally()
        if chat:
            yield _sse(envelope | {"choices": [_choice({"delta": {"role": "assistant", "content": ""}})]})
        try:
            async for update in self._updates(generation, prompt, max_tokens):
                tally.add(update)
                if update.delta:
                    part = {"delta": {"content": update.delta}} if chat else {"text": update.delta}
                    yield (tally.running() if metered else b"") + _sse(envelope | {"choices": [_choice(part)]})
            usage = tally.usage()
        except (EngineError, ApiError) as err:
            # The status line is long gone: OpenAI's clients raise on an event that carries "error".
            error = {"message": f"the model failed: {err.message}", "type": SERVER_ERROR, "param": None, "code": None}
            yield (tally.running() if metered else b"") + _sse({"error": error})
            yield DONE
            return
        if metered:
            # Tokens the engine counted without text (a stop sequence, a held-back partial character) count too.
            yield tally.running()
        final = envelope | {"choices": [_choice({"delta": {}} if chat else {"text": ""}, tally.finish_reason())]}
        if generation.include_usage:
            # OpenAI's form when stream_options.include_usage is set: one more chunk, no choices, the usage.
            yield _sse(final | {"usage": None})
            yield _sse(envelope | {"choices": [], "usage": usage})
        else:
            yield _sse(final | {"usage": usage})
        yield DONE


def _choice(part: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
    return {"index": 0, **part, "logprobs": None, "finish_reason": finish_reason}


def _envelope(generation: Generation, *, chunk: bool = False) -> dict[str, Any]:
    if generation.kind == "chat":
        ident, kind = f"chatcmpl-{uuid.uuid4().hex}", "chat.completion.chunk" if chunk else "chat.completion"
    else:
        ident, kind = f"cmpl-{uuid.uuid4().hex}", "text_completion"
    return {"id": ident, "object": kind, "created": int(time.time()), "model": generation.model}


def _sse(data: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n\n"
