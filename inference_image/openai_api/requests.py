"""The OpenAI request bodies the server accepts, validated into one engine-neutral ``Generation``.

Fields follow the OpenAI API reference (and the official client's types). What the engine cannot honour
is refused with a 400 naming the field, never silently ignored: ``n`` > 1, ``logprobs``, ``logit_bias``,
``tools``, ``echo``, ``suffix``, ``best_of`` > 1, token-id prompts, image content.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from inference_platform.inference_image.openai_api.errors import invalid

MAX_STOP = 4
"""OpenAI accepts up to 4 stop sequences."""


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class StreamOptions(_Body):
    include_usage: bool | None = None


class JsonSchemaFormat(_Body):
    name: str = Field(min_length=1, max_length=64)
    schema_: dict[str, Any] | None = Field(default=None, alias="schema")
    description: str | None = None
    strict: bool | None = None


class ResponseFormat(_Body):
    type: Literal["text", "json_object", "json_schema"]
    json_schema: JsonSchemaFormat | None = None


class TextPart(_Body):
    type: Literal["text"]
    text: str


class Message(_Body):
    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: str | list[TextPart] | None = None
    name: str | None = None
    tool_call_id: str | None = None
    tool_calls: list[dict[str, Any]] | None = None

    def text(self) -> str:
        if isinstance(self.content, list):
            return "".join(part.text for part in self.content)
        return self.content or ""


Temperature = Annotated[float, Field(ge=0.0, le=2.0)]
TopP = Annotated[float, Field(gt=0.0, le=1.0)]
Penalty = Annotated[float, Field(ge=-2.0, le=2.0)]
Tokens = Annotated[int, Field(ge=1)]


class _Sampling(_Body):
    model: str
    stream: bool | None = False
    stream_options: StreamOptions | None = None
    max_tokens: Tokens | None = None
    temperature: Temperature | None = None
    top_p: TopP | None = None
    seed: Annotated[int, Field(ge=0, lt=2**64)] | None = None
    stop: str | list[str] | None = None
    n: Annotated[int, Field(ge=1)] | None = None
    frequency_penalty: Penalty | None = None
    presence_penalty: Penalty | None = None
    user: str | None = None
    logit_bias: dict[str, float] | None = None


class ChatBody(_Sampling):
    messages: list[Message] = Field(min_length=1)
    max_completion_tokens: Tokens | None = None
    response_format: ResponseFormat | None = None
    logprobs: bool | None = None
    top_logprobs: int | None = None
    tools: list[dict[str, Any]] | None = None
    tool_choice: Any = None
    parallel_tool_calls: bool | None = None
    metadata: dict[str, str] | None = None
    store: bool | None = None


class CompletionBody(_Sampling):
    prompt: str | list[str]
    echo: bool | None = None
    suffix: str | None = None
    logprobs: int | None = None
    best_of: int | None = None


@dataclass(frozen=True)
class Guide:
    """``response_format`` for the engine's guided decoding: a JSON object, or an instance of ``schema``."""

    kind: Literal["json_object", "json_schema"]
    schema: str | None = None
    """The JSON schema, serialized (``json_schema`` only)."""


@dataclass(frozen=True)
class Generation:
    kind: Literal["chat", "completion"]
    model: str
    stream: bool
    include_usage: bool
    max_tokens: int | None
    temperature: float | None
    top_p: float | None
    seed: int | None
    stop: tuple[str, ...]
    frequency_penalty: float | None
    presence_penalty: float | None
    guide: Guide | None
    messages: tuple[dict[str, Any], ...] = ()
    prompt: str = ""


def parse_chat(raw: Any) -> Generation:
    body = _validate(ChatBody, raw)
    _refuse_common(body)
    if body.logprobs:
        raise invalid("logprobs are not supported by this server", param="logprobs")
    if body.top_logprobs is not None:
        raise invalid("top_logprobs are not supported by this server", param="top_logprobs")
    if body.tools:
        raise invalid("tools (function calling) are not supported by this server", param="tools")
    if body.store:
        raise invalid("store (stored completions) is not supported by this server", param="store")
    if body.tool_choice not in (None, "none"):
        raise invalid("tool_choice needs tools, which this server does not support", param="tool_choice")
    max_tokens = body.max_completion_tokens if body.max_completion_tokens is not None else body.max_tokens
    messages = tuple(
        {k: v for k, v in (("role", m.role), ("content", m.text()), ("name", m.name)) if v is not None}
        for m in body.messages
    )
    return Generation(
        kind="chat", messages=messages, guide=_guide(body.response_format), max_tokens=max_tokens, **_sampling(body)
    )


def parse_completion(raw: Any) -> Generation:
    body = _validate(CompletionBody, raw)
    _refuse_common(body)
    prompt = body.prompt
    if isinstance(prompt, list):
        if len(prompt) != 1:
            raise invalid("prompt must be one string (batched prompts are not supported)", param="prompt")
        prompt = prompt[0]
    if not prompt:
        raise invalid("prompt must not be empty", param="prompt")
    if body.echo:
        raise invalid("echo is not supported by this server", param="echo")
    if body.suffix:
        raise invalid("suffix is not supported by this server", param="suffix")
    if body.logprobs is not None:
        raise invalid("logprobs are not supported by this server", param="logprobs")
    if body.best_of not in (None, 1):
        raise invalid("best_of must be 1", param="best_of")
    return Generation(kind="completion", prompt=prompt, guide=None, max_tokens=body.max_tokens, **_sampling(body))


def _validate(model: type[BaseModel], raw: Any) -> Any:
    if not isinstance(raw, dict):
        raise invalid("the request body must be a JSON object")
    try:
        return model.model_validate(raw)
    except ValidationError as err:
        first = err.errors()[0]
        param = _param(first["loc"])
        if first["type"] == "extra_forbidden":
            raise invalid(f"Unrecognized request argument supplied: {param}", param=param) from None
        if first["type"] == "missing":
            raise invalid(f"Missing required parameter: '{param}'", param=param) from None
        raise invalid(f"Invalid value for '{param}': {first['msg']}", param=param) from None


def _refuse_common(body: _Sampling) -> None:
    if body.n not in (None, 1):
        raise invalid("n must be 1 (one choice per request)", param="n")
    if body.logit_bias:
        raise invalid("logit_bias is not supported by this server", param="logit_bias")
    if body.stream_options is not None and not body.stream:
        raise invalid("stream_options is only allowed when stream is true", param="stream_options")
    stops = [body.stop] if isinstance(body.stop, str) else list(body.stop or [])
    if len(stops) > MAX_STOP:
        raise invalid(f"stop takes at most {MAX_STOP} sequences, got {len(stops)}", param="stop")
    if any(not s for s in stops):
        raise invalid("stop sequences must not be empty", param="stop")


def _sampling(body: _Sampling) -> dict[str, Any]:
    stops = [body.stop] if isinstance(body.stop, str) else list(body.stop or [])
    return {
        "model": body.model,
        "stream": bool(body.stream),
        "include_usage": bool(body.stream_options and body.stream_options.include_usage),
        "temperature": body.temperature,
        "top_p": body.top_p,
        "seed": body.seed,
        "stop": tuple(stops),
        "frequency_penalty": body.frequency_penalty,
        "presence_penalty": body.presence_penalty,
    }


def _guide(response_format: ResponseFormat | None) -> Guide | None:
    if response_format is None or response_format.type == "text":
        return None
    if response_format.type == "json_object":
        return Guide(kind="json_object")
    spec = response_format.json_schema
    if spec is None or spec.schema_ is None:
        raise invalid("response_format json_schema needs json_schema.schema", param="response_format.json_schema")
    return Guide(kind="json_schema", schema=json.dumps(spec.schema_, separators=(",", ":")))


_UNION_TAGS = {"str", "int", "float", "bool", "dict", "list"}


def _param(loc: tuple[Any, ...]) -> str | None:
    """OpenAI's way to name a nested field: ``messages[0].content`` (pydantic's union branch tags, such as
    ``str`` or ``list[TextPart]``, end the name: they are types, not fields)."""
    out = ""
    for part in loc:
        if isinstance(part, str) and (part in _UNION_TAGS or "[" in part):
            break
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or None
