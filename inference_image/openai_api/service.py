"""One OpenAI request end to end: the prompt, the limits, the guide check, the engine call, the response objects.

``usage`` is the engine's own count (``num_input_tokens``, ``num_output_tokens`` per sequence,
``num_cached_tokens``): in every whole answer, and in a stream only when the client asks (``stream_options``
``include_usage``: OpenAI's extra last chunk with no choices; ``continuous_usage_stats`` as well: in every chunk),
as OpenAI, vLLM and trtllm-serve do. ``n`` choices come from one engine request (the LLM API's ``n``/``best_of``).
Tools: ``tools.py``; logprobs: ``logprobs.py``; guides: ``guides.py``; metrics: ``metrics.py``.
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
import uuid
from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import orjson

from inference_platform.catalog.serving_contract import USAGE_COMMENT_PREFIX
from inference_platform.inference_image.liveness import LivenessCheck, stall_from_env
from inference_platform.inference_image.openai_api import fields
from inference_platform.inference_image.openai_api.chat_template import ChatTemplateError
from inference_platform.inference_image.openai_api.errors import (
    CONTEXT_LENGTH_EXCEEDED,
    SERVER_ERROR,
    ApiError,
    invalid,
    unknown_model,
)
from inference_platform.inference_image.openai_api.guides import GuideChecker, check_schema
from inference_platform.inference_image.openai_api.llm_client import (
    FINISH_REASONS,
    EngineError,
    TritonLlm,
    Update,
    engine_inputs,
)
from inference_platform.inference_image.openai_api.logprobs import TokenText, chat_entries, completion_block, parse
from inference_platform.inference_image.openai_api.metrics import RequestRecord, ServerMetrics
from inference_platform.inference_image.openai_api.model_files import Prompt, Prompting
from inference_platform.inference_image.openai_api.requests import Generation
from inference_platform.inference_image.openai_api.server_file import NEURON, ServerFile
from inference_platform.inference_image.openai_api.tools import ToolStream, parse_calls
from inference_platform.inference_image.readiness import GenerationCheck, deadline_from_env

LOG = logging.getLogger("openai_api")
COMPLETIONS_DEFAULT_MAX_TOKENS = 16
"""OpenAI's default ``max_tokens`` for /v1/completions (chat defaults to what the context leaves)."""
DONE = b"data: [DONE]\n\n"


@dataclass(frozen=True, kw_only=True)
class Limits:
    max_input_len: int
    """Longest prompt in tokens (the engine's ``max_input_len``)."""
    max_seq_len: int
    """Longest prompt + completion in tokens (the engine's ``max_seq_len``)."""


@dataclass(frozen=True)
class RequestContext:
    """Who asked and when: the request id (taken from ``X-Request-Id`` or made), the edge's client id."""

    request_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    client: str = "none"
    started: float = field(default_factory=time.monotonic)


@dataclass
class _Choice:
    """What the engine has said about one returned sequence so far."""

    text: str = ""
    finish: str | None = None
    output_tokens: int = 0
    logprobs: list[tuple[int, list[tuple[int, float, int | None]]]] = field(default_factory=list)


@dataclass
class _Tally:
    choices: list[_Choice]
    input_tokens: int | None = None
    cached_tokens: int | None = None
    queue_seconds: float | None = None

    def add(self, update: Update) -> None:
        for i, delta in enumerate(update.deltas[: len(self.choices)]):
            self.choices[i].text += delta
        for i, reason in enumerate(update.finish_reasons[: len(self.choices)]):
            self.choices[i].finish = reason or self.choices[i].finish
        for i, count in enumerate(update.output_tokens[: len(self.choices)]):
            self.choices[i].output_tokens = count
        for i, entry in enumerate(update.logprobs[: len(self.choices)]):
            self.choices[i].logprobs.extend(parse(entry))
        if update.input_tokens is not None:
            self.input_tokens = update.input_tokens
        if update.cached_tokens is not None:
            self.cached_tokens = update.cached_tokens
        if update.queue_seconds is not None:
            self.queue_seconds = update.queue_seconds

    def running(self) -> bytes:
        """The usage so far as the SSE comment line the edge meters (``serving_contract.USAGE_COMMENT_PREFIX``):
        cumulative, so the edge keeps the last one; empty until the engine has given the prompt's count."""
        if self.input_tokens is None:
            return b""
        completion = sum(c.output_tokens for c in self.choices)
        counts = {
            "prompt_tokens": self.input_tokens,
            "completion_tokens": completion,
            "total_tokens": self.input_tokens + completion,
            "cached_tokens": self.cached_tokens or 0,
        }
        return USAGE_COMMENT_PREFIX.encode() + orjson.dumps(counts) + b"\n"

    def usage(self) -> dict[str, Any]:
        if self.input_tokens is None:
            raise EngineError("the model returned no token counts (num_input_tokens/num_output_tokens)")
        completion = sum(c.output_tokens for c in self.choices)
        return {
            "prompt_tokens": self.input_tokens,
            "completion_tokens": completion,
            "total_tokens": self.input_tokens + completion,
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
        server: ServerFile | None = None,
        guides: GuideChecker | None = None,
        metrics: ServerMetrics | None = None,
        created: int | None = None,
        answers_for: tuple[str, ...] = (),
    ) -> None:
        self.served_model = served_model
        self.answers_for = answers_for
        """Other models' names this server answers too, as itself (``serving.fallbackFor``: the edge's fallback)."""
        self.prompting = prompting
        self.engine = engine
        self.limits = limits
        self.server = server or ServerFile()
        self.guides = guides
        self.metrics = metrics or ServerMetrics(served_model, self.server.ttft_buckets_s)
        self.streaming_engine = streaming_engine
        """Whether the model is decoupled (it refuses ``streaming`` otherwise; a stream then gets one chunk)."""
        self.created = created if created is not None else int(time.time())
        self.tokens = TokenText(prompting.tokenizer)
        self.readiness = GenerationCheck(self._one_token, deadline_seconds=deadline_from_env())
        """The pod's readiness (``/health``): a token seen lately, else a 1-token generation in time."""
        self.liveness = LivenessCheck(
            engine.liveness, deadline_seconds=deadline_from_env(), stall_seconds=stall_from_env()
        )
        """The pod's liveness (``/live``): the model's process answers, and its engine is not stalled with work."""

    async def _one_token(self) -> None:
        prompt = self.prompting.prompt("ok", templated=False)
        probe = Generation(
            kind="completion", model=self.served_model, prompt="ok", stream=False, include_usage=False, max_tokens=1,
            temperature=None, top_p=None, stop=(), frequency_penalty=None, presence_penalty=None, guide=None,
        )  # fmt: skip
        async for _ in self.engine.generate(engine_inputs(probe, prompt, max_tokens=1, streaming=False)):
            pass

    def model_card(self) -> dict[str, Any]:
        return {"id": self.served_model, "object": "model", "created": self.created, "owned_by": "inference-platform"}

    # -- before the engine ------------------------------------------------------------------------------------
    async def admit(self, generation: Generation, ctx: RequestContext) -> tuple[Prompt, int]:
        """Everything a request must pass before the engine sees it: model, runtime, prompt, limits, guide."""
        if generation.model != self.served_model and generation.model not in self.answers_for:
            raise unknown_model(generation.model, self.served_model)
        self._runtime_refusals(generation)
        if generation.ignored:
            LOG.warning(
                "request %s (client %s): accepted without effect: %s%s", ctx.request_id, ctx.client,
                ", ".join(generation.ignored), f" (seed: {fields.SEED_NOT_HONOURED})" if "seed" in generation.ignored else "",
            )  # fmt: skip
        prompt, max_tokens = self.prepare(generation)
        await self._check_guide(generation)
        return prompt, max_tokens

    def _runtime_refusals(self, generation: Generation) -> None:
        label = self.server.runtime_label
        if self.server.runtime == NEURON:
            asked = {
                "response_format": generation.guide is not None and generation.tools is None,
                "tools": generation.tools is not None,
                "n": generation.n > 1,
                "best_of": (generation.best_of or 1) > 1,
                "logprobs": generation.logprobs is not None,
                "logit_bias": bool(generation.logit_bias),
                "ignore_eos": bool(generation.ignore_eos),
                "include_stop_str_in_output": bool(generation.include_stop_str_in_output),
            }
            for name, given in asked.items():
                if given:
                    raise invalid(f"{name} is not supported by the {label} runtime (docs/serving.md)", param=name)
        if generation.guide is not None and self.server.guided_backend == "none":
            param = "tool_choice" if generation.tools is not None else "response_format"
            raise invalid(
                f"{param}: guided decoding is off on this stack (serving.guidedDecoding.backend: none)", param=param
            )
        if generation.n > 1 or (generation.best_of or 1) > 1:
            greedy = (
                generation.temperature == 0
                or generation.top_k == 1
                or (generation.temperature is None and generation.top_p is None and generation.top_k is None)
            )
            if greedy:
                raise invalid(
                    f"n and best_of above 1 need sampling (temperature > 0, top_p or top_k): the {label} LLM API "
                    "refuses several greedy returns", param="n",
                )  # fmt: skip

    async def _check_guide(self, generation: Generation) -> None:
        guide = generation.guide
        if guide is None:
            return
        limits = self.server.guide_limits
        if guide.kind == "json_schema" and guide.text is not None:
            check_schema(json.loads(guide.text), limits, param=generation.guide_param)
        if self.guides is not None:
            await self.guides.check(guide, param=generation.guide_param)

    def prepare(self, generation: Generation) -> tuple[Prompt, int]:
        """The engine prompt and max_tokens, or the OpenAI error a request beyond the model's limits gets."""
        chat = generation.kind == "chat"
        prompt = self.prompting.prompt(self._prompt_text(generation), templated=chat)
        field_name = "messages" if chat else "prompt"
        if prompt.tokens > self.limits.max_input_len:
            raise invalid(
                f"This model's maximum input length is {self.limits.max_input_len} tokens. However, your "
                f"{field_name} resulted in {prompt.tokens} tokens. Please reduce the length of the {field_name}.",
                param=field_name,
                code=CONTEXT_LENGTH_EXCEEDED,
            )
        room = self.limits.max_seq_len - prompt.tokens
        max_tokens = generation.max_tokens
        if max_tokens is None:
            max_tokens = room if chat else min(room, COMPLETIONS_DEFAULT_MAX_TOKENS)
        elif max_tokens > room:
            raise invalid(
                f"This model's maximum context length is {self.limits.max_seq_len} tokens. However, you requested "
                f"{prompt.tokens + max_tokens} tokens ({prompt.tokens} in the {field_name}, {max_tokens} for the "
                "completion). Please reduce the length of the messages or completion.",
                param="max_tokens",
                code=CONTEXT_LENGTH_EXCEEDED,
            )
        return prompt, max(1, max_tokens)

    def _prompt_text(self, generation: Generation) -> str:
        if generation.kind == "completion":
            return generation.prompt
        template = self.prompting.chat_template
        if template is None:
            raise invalid("this model has no chat template: use /v1/completions", param="messages")
        tools = list(generation.tools.specs) if generation.tools is not None else None
        try:
            return template.render(generation.messages, tools=tools, add_generation_prompt=True)
        except ChatTemplateError as err:
            raise invalid(f"the model's chat template refused the messages: {err}", param="messages") from None

    # -- the engine ------------------------------------------------------------------------------------------
    async def _updates(
        self, generation: Generation, prompt: Prompt, max_tokens: int, ctx: RequestContext, record: RequestRecord
    ) -> AsyncGenerator[Update, None]:
        # A whole answer is streamed from the engine too: Triton notices a closed connection only when it
        # writes, so without a response per token a client that left would hold its slot to the end.
        inputs = engine_inputs(generation, prompt, max_tokens=max_tokens, streaming=self.streaming_engine)
        async with contextlib.aclosing(self.engine.generate(inputs, request_id=ctx.request_id)) as updates:
            async for update in updates:
                if any(update.deltas) or update.output_tokens:
                    self.readiness.note_token()
                    record.token()
                yield update

    async def complete(
        self, generation: Generation, prompt: Prompt, max_tokens: int, ctx: RequestContext
    ) -> dict[str, Any]:
        tally = _Tally([_Choice() for _ in range(generation.n)])
        record = self.metrics.start(client=ctx.client, started=ctx.started, prompt_tokens=prompt.tokens)
        try:
            async for update in self._updates(generation, prompt, max_tokens, ctx, record):
                tally.add(update)
            usage = tally.usage()
        except EngineError as err:
            record.fail()
            raise ApiError(500, f"the model failed: {err.message}", type=SERVER_ERROR) from None
        out = _envelope(generation, ctx)
        out["choices"] = [self._whole_choice(generation, i, choice) for i, choice in enumerate(tally.choices)]
        out["usage"] = usage
        record.finish(usage, tally.queue_seconds, [c["finish_reason"] for c in out["choices"]])
        return out

    def _whole_choice(self, generation: Generation, index: int, choice: _Choice) -> dict[str, Any]:
        reason = _finish_reason(choice.finish)
        if generation.kind == "completion":
            logprobs = completion_block(choice.logprobs, self.tokens, 0) if generation.logprobs else None
            return {"index": index, "text": choice.text, "logprobs": logprobs, "finish_reason": reason}
        message: dict[str, Any] = {"role": "assistant", "content": choice.text}
        tools = generation.tools
        if tools is not None:
            calls = parse_calls(choice.text, tools)
            if calls:
                message = {"role": "assistant", "content": None, "tool_calls": [c.message() for c in calls]}
                if reason == "stop" and tools.choice != "named":
                    reason = "tool_calls"
        logprobs = (
            {"content": chat_entries(choice.logprobs, generation.top_logprobs, self.tokens)}
            if generation.logprobs
            else None
        )
        return {"index": index, "message": message, "logprobs": logprobs, "finish_reason": reason}

    async def events(
        self, generation: Generation, prompt: Prompt, max_tokens: int, ctx: RequestContext, *, metered: bool = False
    ) -> AsyncIterator[bytes]:
        """Server-sent events; a failure after the first byte becomes an error event. ``metered`` (the edge asked,
        ``serving_contract.USAGE_METER_HEADER``): the running usage goes, as a comment line, before the first event
        of each engine update that changes it (one update may be several merged engine events: the count is the
        update's last), before an error event and before the end."""
        chat = generation.kind == "chat"
        envelope = _envelope(generation, ctx, chunk=True)
        tally = _Tally([_Choice() for _ in range(generation.n)])
        streams = [ToolStream(generation.tools) for _ in range(generation.n)] if generation.tools else None
        finished = [False] * generation.n
        offsets = [0] * generation.n
        record = self.metrics.start(client=ctx.client, started=ctx.started, prompt_tokens=prompt.tokens)
        usage_each = generation.continuous_usage
        last_meter = b""
        ended = False
        if chat:
            for i in range(generation.n):
                yield _sse(envelope | {"choices": [_choice(i, {"delta": {"role": "assistant", "content": ""}})]})
        try:
            async for update in self._updates(generation, prompt, max_tokens, ctx, record):
                tally.add(update)
                # A changed count is carried by the first event this update yields, or alone after them.
                meter = tally.running() if metered else b""
                meter, last_meter = (b"", last_meter) if meter == last_meter else (meter, meter)
                usage = _partial_usage(tally) if usage_each else None
                for i in range(generation.n):
                    if finished[i]:
                        continue
                    delta = update.deltas[i] if i < len(update.deltas) else ""
                    entries = parse(update.logprobs[i]) if i < len(update.logprobs) else []
                    parts = self._stream_parts(generation, i, delta, entries, streams, offsets)
                    reason = update.finish_reasons[i] if i < len(update.finish_reasons) else None
                    for part in parts:
                        chunk = envelope | {"choices": [_choice(i, part)]} | ({"usage": usage} if usage else {})
                        yield meter + _sse(chunk)
                        meter = b""
                    if reason:
                        finished[i] = True
                        tail = streams[i].finish() if streams is not None else []
                        for part in tail:
                            yield meter + _sse(envelope | {"choices": [_choice(i, {"delta": part})]})
                            meter = b""
                        final_reason = _finish_reason(reason)
                        if streams is not None and streams[i].called and final_reason == "stop":
                            named = generation.tools is not None and generation.tools.choice == "named"
                            final_reason = "stop" if named else "tool_calls"
                        empty: dict[str, Any] = {"delta": {}} if chat else {"text": ""}
                        chunk = envelope | {"choices": [_choice(i, empty, final_reason)]}
                        yield meter + _sse(chunk | ({"usage": usage} if usage else {}))
                        meter = b""
                if meter:
                    yield meter
            final_usage = tally.usage()
            ended = True
        except (EngineError, ApiError) as err:
            ended = True
            record.fail(_partial_usage(tally))
            # The status line is long gone: OpenAI's clients raise on an event that carries "error".
            error = {"message": f"the model failed: {err.message}", "type": SERVER_ERROR, "param": None, "code": None}
            yield (tally.running() if metered else b"") + _sse({"error": error})
            yield DONE
            return
        finally:
            if not ended:
                # The client left (the body's generator closed at a yield): served what it was reported.
                record.fail(_reported(last_meter) if metered else _partial_usage(tally), reason="abort")
        record.finish(final_usage, tally.queue_seconds, [_finish_reason(c.finish) for c in tally.choices])
        if metered:
            # Tokens the engine counted without text (a stop sequence, a held-back partial character) count too.
            yield tally.running()
        if generation.include_usage:
            # OpenAI's form when stream_options.include_usage is set: one more chunk, no choices, the usage.
            yield _sse(envelope | {"choices": [], "usage": final_usage})
        yield DONE

    def _stream_parts(
        self,
        generation: Generation,
        index: int,
        delta: str,
        entries: list[tuple[int, list[tuple[int, float, int | None]]]],
        streams: list[ToolStream] | None,
        offsets: list[int],
    ) -> list[dict[str, Any]]:
        if generation.kind == "completion":
            if not delta and not entries:
                return []
            part: dict[str, Any] = {"text": delta}
            if generation.logprobs:
                part["logprobs"] = completion_block(entries, self.tokens, offsets[index])
            offsets[index] += len(delta)
            return [part]
        logprobs = (
            {"content": chat_entries(entries, generation.top_logprobs, self.tokens)}
            if generation.logprobs and entries
            else None
        )
        deltas = streams[index].feed(delta) if streams is not None else [{"content": delta}] if delta else []
        parts = [{"delta": d} for d in deltas]
        if logprobs is not None:
            if parts:
                parts[0]["logprobs"] = logprobs
            else:
                parts = [{"delta": {}, "logprobs": logprobs}]
        return parts


def _reported(meter: bytes) -> dict[str, Any] | None:
    """The usage of the last running-usage comment sent, in ``usage``'s shape (None before the first)."""
    if not meter:
        return None
    counts = orjson.loads(meter[len(USAGE_COMMENT_PREFIX) :])
    return {
        "prompt_tokens": counts["prompt_tokens"],
        "completion_tokens": counts["completion_tokens"],
        "total_tokens": counts["total_tokens"],
        "prompt_tokens_details": {"cached_tokens": counts["cached_tokens"]},
    }


def _partial_usage(tally: _Tally) -> dict[str, Any] | None:
    if tally.input_tokens is None:
        return None
    return tally.usage()


def _finish_reason(reason: str | None) -> str:
    return FINISH_REASONS.get(reason or "stop", "stop")


def _choice(index: int, part: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
    return {"index": index, **part, "logprobs": part.get("logprobs"), "finish_reason": finish_reason}


def _envelope(generation: Generation, ctx: RequestContext, *, chunk: bool = False) -> dict[str, Any]:
    if generation.kind == "chat":
        ident, kind = f"chatcmpl-{ctx.request_id}", "chat.completion.chunk" if chunk else "chat.completion"
    else:
        ident, kind = f"cmpl-{ctx.request_id}", "text_completion"
    return {"id": ident, "object": kind, "created": int(time.time()), "model": generation.model}


def _sse(data: dict[str, Any]) -> bytes:
    return b"data: " + orjson.dumps(data) + b"\n\n"
