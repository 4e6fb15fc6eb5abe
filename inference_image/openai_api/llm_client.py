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

import httpx

from inference_platform.inference_image.openai_api.errors import SERVER_ERROR, UNAVAILABLE, ApiError
from inference_platform.inference_image.openai_api.model_files import Prompt
from inference_platform.inference_image.openai_api.requests import Generation

STALE_CONNECTION_RETRIES = 1
"""Retries of a request whose kept-alive connection turned out closed before any answer."""
KEEPALIVE_CONNECTIONS = 64
"""Idle loopback connections to Triton kept for reuse."""
FINISH_REASONS = {"stop": "stop", "length": "length"}
"""LLM API finish reasons OpenAI has a name for; ``cancelled``/``timeout`` end a response without one."""


@dataclass(frozen=True)
class Update:
    delta: str
    """New text since the previous update."""
    finish_reason: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    """Tokens generated so far (the engine's count)."""
    cached_tokens: int | None = None


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
    optional = {
        "sampling_param_temperature": generation.temperature,
        "sampling_param_top_p": generation.top_p,
        "sampling_param_seed": generation.seed,
        "sampling_param_frequency_penalty": generation.frequency_penalty,
        "sampling_param_presence_penalty": generation.presence_penalty,
        "sampling_param_stop": list(generation.stop) or None,
    }
    inputs.update({k: v for k, v in optional.items() if v is not None})
    if generation.guide is not None:
        inputs["guided_decoding_guide_type"] = generation.guide.kind
        if generation.guide.schema is not None:
            inputs["guided_decoding_guide"] = generation.guide.schema
    return inputs


class TritonLlm:
    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        timeout: float = 10.0,
        client: httpx.AsyncClient | None = None,
        api_key: tuple[str, str] | None = None,
    ) -> None:
        self.url = f"{base_url.rstrip('/')}/v2/models/{model}/generate_stream"
        self.ready_url = f"{base_url.rstrip('/')}/v2/models/{model}/ready"
        # No read timeout: a long prefill legitimately sends nothing for a while; the edge bounds the stream. No
        # connection cap or pool wait either: each running stream holds one loopback connection, and httpx's
        # default of 100 would queue (then fail) the 101st stream while the engine's batch has room.
        # With serving.auth on, Triton restricts its inference and metadata APIs to one header and key
        # (--http-restricted-api): every call on loopback carries it, as a client of those APIs must.
        self._client = client or httpx.AsyncClient(
            timeout=httpx.Timeout(timeout, read=None, pool=None),
            limits=httpx.Limits(max_connections=None, max_keepalive_connections=KEEPALIVE_CONNECTIONS),
            headers=dict([api_key]) if api_key else None,
        )

    async def close(self) -> None:
        await self._client.aclose()

    async def ready(self) -> bool:
        try:
            response = await self._client.get(self.ready_url)
        except httpx.HTTPError:
            return False
        return response.status_code == 200

    async def generate(self, inputs: dict[str, Any]) -> AsyncGenerator[Update, None]:
        for attempt in range(STALE_CONNECTION_RETRIES + 1):
            answered = False
            try:
                # aclosing: a caller that stops early closes the Triton stream now, not when collected.
                async with contextlib.aclosing(self._generate(inputs)) as updates:
                    async for update in updates:
                        answered = True
                        yield update
                return
            except httpx.RemoteProtocolError as err:
                # A kept-alive connection Triton had closed: nothing was answered, so nothing ran twice.
                if answered or attempt == STALE_CONNECTION_RETRIES:
                    raise ApiError(503, f"the model server is unreachable: {err}", type=UNAVAILABLE) from None
            except httpx.HTTPError as err:
                raise ApiError(503, f"the model server is unreachable: {err}", type=UNAVAILABLE) from None

    async def _generate(self, inputs: dict[str, Any]) -> AsyncGenerator[Update, None]:
        async with self._client.stream("POST", self.url, json=inputs) as response:
            if response.status_code != 200:
                body = (await response.aread()).decode("utf-8", "replace")
                raise EngineError(_triton_error(body) or f"Triton answered {response.status_code}")
            async for event in _events(response):
                if "error" in event:
                    raise EngineError(str(event["error"]))
                yield Update(
                    delta=_text(event.get("text_output")),
                    finish_reason=_finish(event.get("finish_reason")),
                    input_tokens=_int(event.get("num_input_tokens")),
                    output_tokens=_int(event.get("num_output_tokens")),
                    cached_tokens=_int(event.get("num_cached_tokens")),
                )


async def _events(response: httpx.Response) -> AsyncIterator[dict[str, Any]]:
    async for line in response.aiter_lines():
        if not line.startswith("data:"):
            continue
        try:
            event = json.loads(line[5:].strip())
        except ValueError:
            raise ApiError(502, f"the model server sent a malformed event: {line[:200]!r}", type=SERVER_ERROR) from None
        if isinstance(event, dict):
            yield event


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
