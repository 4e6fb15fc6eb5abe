"""The LLM-API model on Triton, called through ``POST /v2/models/<model>/generate_stream`` (server-sent events).

Input names are those of TensorRT-LLM's LLM-API model (``triton_backend/all_models/llmapi/tensorrt_llm/
config.pbtxt``: ``text_input``, ``streaming``, ``sampling_param_*``, ``return_finish_reason``) plus what our
model adds for the OpenAI API (the image's ``tensorrt_llm`` model: ``guided_decoding_guide_type`` /
``guided_decoding_guide``, ``sampling_param_add_special_tokens``; outputs ``num_input_tokens``,
``num_output_tokens``, ``num_cached_tokens``). Our model sends each stream response's new text
(``CompletionOutput.text_diff``; upstream's sends the cumulative ``text``) and the whole text when not
streaming; the token counts are cumulative. ``finish_reason`` is empty until the last response.

A caller that stops reading (the OpenAI client went away) closes the HTTP stream; Triton's HTTP server
cancels the request when its connection ends (``src/http_server.cc`` ``RequestFiniHook`` ->
``TRITONSERVER_InferenceRequestCancel``) and the model aborts it (it polls ``is_cancelled()``).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass
from typing import Any

import aiohttp
import orjson

from inference_platform.inference_image.openai_api.errors import SERVER_ERROR, UNAVAILABLE, ApiError
from inference_platform.inference_image.openai_api.model_files import Prompt
from inference_platform.inference_image.openai_api.requests import Generation

STALE_CONNECTION_RETRIES = 1
"""Retries of a request whose kept-alive connection turned out closed before any answer."""
KEEPALIVE_SECONDS = 15.0
"""How long an idle loopback connection to Triton is kept for reuse (aiohttp's default)."""
FINISH_REASONS = {"stop": "stop", "length": "length"}
"""LLM API finish reasons OpenAI has a name for; ``cancelled``/``timeout`` end a response without one."""
LOST_FINAL = "the model server ended the stream before its last response (no finish reason): the answer is incomplete"
_JSON = {"content-type": "application/json"}


@dataclass(frozen=True)
class Update:
    """One Triton response: per returned sequence its new text, finish reason, tokens so far and logprobs."""

    deltas: tuple[str, ...] = ("",)
    """New text since the previous update, per sequence."""
    finish_reasons: tuple[str | None, ...] = (None,)
    input_tokens: int | None = None
    output_tokens: tuple[int, ...] = ()
    """Tokens generated so far (the engine's count), per sequence."""
    cached_tokens: int | None = None
    logprobs: tuple[str | None, ...] = ()
    """The model's logprobs JSON per sequence (when asked for)."""
    queue_seconds: float | None = None
    """The engine's queue time (arrival to first scheduling), in the last response."""

    @property
    def delta(self) -> str:
        return "".join(self.deltas)


class EngineError(Exception):
    """The model refused or failed the request; ``message`` is its own text."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def engine_inputs(generation: Generation, prompt: Prompt, *, max_tokens: int, streaming: bool) -> dict[str, Any]:
    """The generate-extension body for one request (absent sampling fields keep the engine's defaults)."""
    inputs: dict[str, Any] = {
        "text_input": prompt.text,
        "streaming": streaming,
        "sampling_param_max_tokens": max_tokens,
        "sampling_param_add_special_tokens": prompt.add_special_tokens,
        # The LLM-API model's default is false (the prompt echoed in text_output); OpenAI never echoes.
        "sampling_param_exclude_input_from_output": True,
        "return_finish_reason": True,
    }
    # seed is not forwarded: TensorRT-LLM 1.2.1's TorchSampler does not honour it (fields.SEED_NOT_HONOURED).
    optional = {
        "sampling_param_temperature": generation.temperature,
        "sampling_param_top_p": generation.top_p,
        "sampling_param_top_k": generation.top_k,
        "sampling_param_min_tokens": generation.min_tokens,
        "sampling_param_repetition_penalty": generation.repetition_penalty,
        "sampling_param_frequency_penalty": generation.frequency_penalty,
        "sampling_param_presence_penalty": generation.presence_penalty,
        "sampling_param_stop": list(generation.stop) or None,
        "sampling_param_stop_token_ids": list(generation.stop_token_ids) or None,
        "sampling_param_include_stop_str_in_output": generation.include_stop_str_in_output,
        "sampling_param_ignore_eos": generation.ignore_eos,
        "sampling_param_skip_special_tokens": generation.skip_special_tokens,
        "sampling_param_n": generation.n if generation.n != 1 else None,
        "sampling_param_best_of": generation.best_of,
        "sampling_param_logprobs": generation.logprobs,
        "sampling_param_logit_bias": json.dumps(generation.logit_bias) if generation.logit_bias else None,
    }
    inputs.update({k: v for k, v in optional.items() if v is not None})
    if generation.guide is not None:
        inputs["guided_decoding_guide_type"] = generation.guide.kind
        if generation.guide.text is not None:
            inputs["guided_decoding_guide"] = generation.guide.text
    return inputs


class TritonLlm:
    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        timeout: float = 10.0,
        api_key: tuple[str, str] | None = None,
    ) -> None:
        self.url = f"{base_url.rstrip('/')}/v2/models/{model}/generate_stream"
        self.ready_url = f"{base_url.rstrip('/')}/v2/models/{model}/ready"
        # With serving.auth on, Triton restricts its inference and metadata APIs to one header and key
        # (--http-restricted-api): every call on loopback carries it, as a client of those APIs must.
        self.headers = {**_JSON, **dict([api_key])} if api_key else dict(_JSON)
        self._timeout = timeout
        self._session: aiohttp.ClientSession | None = None

    @property
    def session(self) -> aiohttp.ClientSession:
        """The connection pool, made on first use (aiohttp binds it to the running loop).

        aiohttp, not httpx: this runs once per request, and httpx's pool costs about 1.9 ms of CPU per request (it
        rescans every pooled connection, polling each idle one, whenever a request starts or ends) against aiohttp's
        0.23 ms, measured here with 16 concurrent streams to the local Triton; that alone put 16 requests arriving
        together ~30 ms apart (issue 27, bench/streaming.py).
        """
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(
                # No read timeout: a long prefill legitimately sends nothing for a while; the edge bounds the stream.
                # No connection cap (limit=0): each running stream holds one loopback connection, and a cap would
                # queue streams while the engine's batch has room.
                timeout=aiohttp.ClientTimeout(total=None, connect=self._timeout, sock_read=None),
                connector=aiohttp.TCPConnector(limit=0, keepalive_timeout=KEEPALIVE_SECONDS),
                headers=self.headers,
                auto_decompress=False,
                # Nothing compressed: Triton answers in identity when not offered an encoding, and this reads raw bytes.
                skip_auto_headers=("User-Agent", "Accept-Encoding"),
            )
        return self._session

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()

    async def ready(self) -> bool:
        try:
            async with self.session.get(self.ready_url) as response:
                return response.status == 200
        except (aiohttp.ClientError, TimeoutError):
            return False

    async def liveness(self) -> tuple[int, float]:
        """The model's answer to a liveness ping: (requests it holds, seconds since the engine's last progress)."""
        async with contextlib.aclosing(self._events({"text_input": "", "liveness": True})) as events:
            async for event in events:
                return int(_int(event.get("liveness_in_flight")) or 0), float(_float(event.get("liveness_stalled_s")))
        raise EngineError("the model did not answer the liveness ping")

    async def generate(self, inputs: dict[str, Any], *, request_id: str | None = None) -> AsyncGenerator[Update, None]:
        body = inputs if request_id is None else {"id": request_id, **inputs}
        for attempt in range(STALE_CONNECTION_RETRIES + 1):
            answered = False
            try:
                # aclosing: a caller that stops early closes the Triton stream now, not when collected.
                async with contextlib.aclosing(self._generate(body)) as updates:
                    async for update in updates:
                        answered = True
                        yield update
                return
            except aiohttp.ServerDisconnectedError as err:
                # A kept-alive connection Triton had closed: nothing was answered, so nothing ran twice.
                if answered or attempt == STALE_CONNECTION_RETRIES:
                    raise ApiError(503, f"the model server is unreachable: {err}", type=UNAVAILABLE) from None
            except (aiohttp.ClientError, TimeoutError) as err:
                raise ApiError(503, f"the model server is unreachable: {err!r}", type=UNAVAILABLE) from None

    async def _generate(self, inputs: dict[str, Any]) -> AsyncGenerator[Update, None]:
        # Events that arrived together (one read from the socket) become one update: a loaded replica's tokens then
        # cost one server event and one client chunk per read, not per token (clients join deltas either way).
        ended: dict[int, bool] = {}
        async for batch in self._batches(inputs):
            update = _merge([_update(event) for event in batch])
            for i, reason in enumerate(update.finish_reasons):
                ended[i] = ended.get(i, False) or reason is not None
            yield update
        if not ended or not all(ended.values()):
            # Every sequence's finish reason comes in the model's last response. Triton v2.51.0's HTTP generate_stream
            # writes each response from a callback deferred to its HTTP thread and ignores evthr_defer's result, which
            # libevhtp returns unqueued when that thread's socketpair is full (src/http_server.cc, libevhtp thread.c):
            # a starved thread ends the reply a response short. A cut answer must not pass for a whole one (its end
            # would read as "stop").
            raise EngineError(LOST_FINAL)

    async def _events(self, body: dict[str, Any]) -> AsyncGenerator[dict[str, Any], None]:
        async for batch in self._batches(body):
            for event in batch:
                yield event

    async def _batches(self, body: dict[str, Any]) -> AsyncIterator[list[dict[str, Any]]]:
        # Leaving this block before the end (the caller stopped reading) closes the connection, never pools it:
        # aiohttp keeps only a connection whose body was read to its end (client_proto.py should_close), and Triton
        # cancels a request whose connection ends.
        async with self.session.post(self.url, data=_dumps(body)) as response:
            if response.status != 200:
                text = (await response.read()).decode("utf-8", "replace")
                raise EngineError(_triton_error(text) or f"Triton answered {response.status}")
            async for batch in _sse(response):
                for event in batch:
                    if "error" in event:
                        raise EngineError(str(event["error"]))
                yield batch


async def _sse(response: aiohttp.ClientResponse) -> AsyncIterator[list[dict[str, Any]]]:
    """The ``data:`` events of Triton's server-sent stream, as the lists that arrived in one read, split on raw bytes
    and parsed with orjson (this runs for every token: a line decoder and the json module cost more per event than
    the rest of the path)."""
    buffer = b""
    async for chunk in response.content.iter_any():
        buffer += chunk
        cut = buffer.rfind(b"\n\n")
        if cut < 0:
            continue
        whole, buffer = buffer[:cut], buffer[cut + 2 :]
        batch = [_event(line[5:].strip()) for line in whole.split(b"\n") if line.startswith(b"data:")]
        if batch:
            yield batch
    tail = buffer.strip()
    if tail.startswith(b"data:"):
        yield [_event(tail[5:].strip())]


def _event(data: bytes) -> dict[str, Any]:
    try:
        event = orjson.loads(data)
    except orjson.JSONDecodeError:
        raise ApiError(502, f"the model server sent a malformed event: {data[:200]!r}", type=SERVER_ERROR) from None
    return event if isinstance(event, dict) else {}


def _update(event: dict[str, Any]) -> Update:
    return Update(
        deltas=tuple(_text(v) for v in _list(event.get("text_output"))) or ("",),
        finish_reasons=tuple(_finish(v) for v in _list(event.get("finish_reason"))) or (None,),
        input_tokens=_int(event.get("num_input_tokens")),
        output_tokens=tuple(_int(v) or 0 for v in _list(event.get("num_output_tokens"))),
        cached_tokens=_int(event.get("num_cached_tokens")),
        logprobs=tuple(_text(v) or None for v in _list(event.get("logprobs"))),
        queue_seconds=_float(event.get("queue_time_s")) if event.get("queue_time_s") is not None else None,
    )


def _merge(updates: list[Update]) -> Update:
    """Consecutive updates as one: texts and logprobs joined per sequence, the latest counts and finish reasons."""
    if len(updates) == 1:
        return updates[0]
    width = max(len(u.deltas) for u in updates)
    deltas = tuple("".join(u.deltas[i] for u in updates if i < len(u.deltas)) for i in range(width))
    reasons = tuple(next((u.finish_reasons[i] for u in reversed(updates) if i < len(u.finish_reasons)
                          and u.finish_reasons[i]), None) for i in range(width))  # fmt: skip
    logprobs = tuple(_join_logprobs([u.logprobs[i] for u in updates if i < len(u.logprobs)]) for i in range(width))
    last = updates[-1]
    return Update(
        deltas=deltas,
        finish_reasons=reasons,
        input_tokens=next((u.input_tokens for u in reversed(updates) if u.input_tokens is not None), None),
        output_tokens=next((u.output_tokens for u in reversed(updates) if u.output_tokens), last.output_tokens),
        cached_tokens=next((u.cached_tokens for u in reversed(updates) if u.cached_tokens is not None), None),
        logprobs=logprobs if any(logprobs) else (),
        queue_seconds=next((u.queue_seconds for u in reversed(updates) if u.queue_seconds is not None), None),
    )


def _join_logprobs(entries: list[str | None]) -> str | None:
    parts = [orjson.loads(e) for e in entries if e]
    if not parts:
        return None
    return orjson.dumps(
        {"ids": [i for p in parts for i in p["ids"]], "top": [t for p in parts for t in p["top"]]}
    ).decode()


def _dumps(body: dict[str, Any]) -> bytes:
    return orjson.dumps(body)


def _list(value: Any) -> list[Any]:
    """A vector output (one entry per sequence) as a list; a scalar as a list of one."""
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


def _float(value: Any) -> float:
    value = _scalar(value)
    try:
        return 0.0 if value is None else float(value)
    except (TypeError, ValueError):
        return 0.0


def _scalar(value: Any) -> Any:
    while isinstance(value, list):
        if not value:
            return None
        value = value[0]
    return value


def _text(value: Any) -> str:
    value = _scalar(value)
    return "" if value is None else str(value)


def _finish(value: Any) -> str | None:
    value = _scalar(value)
    if value is None or str(value) in ("", "None"):  # empty until the last response
        return None
    return str(value)


def _int(value: Any) -> int | None:
    value = _scalar(value)
    try:
        return None if value is None else int(str(value))
    except ValueError:
        return None


def _triton_error(body: str) -> str | None:
    try:
        data = json.loads(body)
    except ValueError:
        return body.strip() or None
    return str(data.get("error")) if isinstance(data, dict) and "error" in data else None
