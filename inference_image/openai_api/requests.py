"""The OpenAI request bodies the server accepts, validated into one engine-neutral ``Generation``.

Fields follow the OpenAI API reference (and the official client's types) plus the extensions vLLM and trtllm-serve
accept; ``fields.py`` says what happens to each (mapped, accepted and ignored with a logged warning, or 400 naming
it). Numbers are typed strictly where OpenAI's are integers (``max_tokens: 1.0`` or ``"1"`` is a 400, as pydantic's
strict int and OpenAI's own validation both say). Unknown fields are accepted and reported in ``ignored`` (vLLM's
behaviour), so clients that send newer fields work.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, ValidationError

from inference_platform.inference_image.openai_api import fields
from inference_platform.inference_image.openai_api.errors import invalid
from inference_platform.inference_image.openai_api.guides import Guide

MAX_STOP = 4
"""OpenAI accepts up to 4 stop sequences."""
MAX_STOP_TOKEN_IDS = 64
MAX_N = 16
"""Sequences one request may ask for (n, best_of): each is a full generation on the replica."""
MAX_LOGPROBS = 20
"""vLLM's default max_logprobs and OpenAI's top_logprobs ceiling."""
MAX_LOGIT_BIAS = 1024
MAX_TOOLS_DEFAULT = 128


class _Body(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class StreamOptions(_Body):
    include_usage: StrictBool | None = None
    continuous_usage_stats: StrictBool | None = None


class JsonSchemaFormat(_Body):
    name: str = Field(min_length=1, max_length=64)
    schema_: dict[str, Any] | None = Field(default=None, alias="schema")
    description: str | None = None
    strict: bool | None = None


class ResponseFormat(_Strict):
    type: Literal["text", "json_object", "json_schema"]
    json_schema: JsonSchemaFormat | None = None


class TextPart(_Body):
    type: Literal["text"]
    text: str


class FunctionCall(_Body):
    name: str
    arguments: str


class ToolCall(_Body):
    id: str | None = None
    type: Literal["function"] = "function"
    function: FunctionCall


class Message(_Body):
    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: str | list[TextPart] | None = None
    name: str | None = None
    tool_call_id: str | None = None
    tool_calls: list[ToolCall] | None = None

    def text(self) -> str:
        if isinstance(self.content, list):
            return "".join(part.text for part in self.content)
        return self.content or ""


class FunctionSpec(_Body):
    name: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.:-]+$")
    description: str | None = None
    parameters: dict[str, Any] | None = None
    strict: bool | None = None


class ToolSpec(_Body):
    type: Literal["function"]
    function: FunctionSpec


class NamedFunction(_Strict):
    name: str


class NamedTool(_Strict):
    type: Literal["function"]
    function: NamedFunction


Temperature = Annotated[float, Field(ge=0.0, le=2.0)]
TopP = Annotated[float, Field(gt=0.0, le=1.0)]
Penalty = Annotated[float, Field(ge=-2.0, le=2.0)]
Tokens = Annotated[StrictInt, Field(ge=1)]
Count = Annotated[StrictInt, Field(ge=1, le=MAX_N)]


class _Sampling(_Body):
    model: str
    stream: StrictBool | None = False
    stream_options: StreamOptions | None = None
    max_tokens: Tokens | None = None
    temperature: Temperature | None = None
    top_p: TopP | None = None
    top_k: Annotated[StrictInt, Field(ge=-1)] | None = None
    min_tokens: Annotated[StrictInt, Field(ge=0)] | None = None
    repetition_penalty: Annotated[float, Field(gt=0.0, le=10.0)] | None = None
    seed: StrictInt | None = None
    stop: str | list[str] | None = None
    stop_token_ids: list[Annotated[StrictInt, Field(ge=0)]] | None = Field(default=None, max_length=MAX_STOP_TOKEN_IDS)
    include_stop_str_in_output: StrictBool | None = None
    ignore_eos: StrictBool | None = None
    skip_special_tokens: StrictBool | None = None
    n: Count | None = None
    best_of: Count | None = None
    frequency_penalty: Penalty | None = None
    presence_penalty: Penalty | None = None
    logit_bias: dict[str, Annotated[float, Field(ge=-100, le=100)]] | None = Field(
        default=None, max_length=MAX_LOGIT_BIAS
    )
    user: str | None = None


class ChatBody(_Sampling):
    messages: list[Message] = Field(min_length=1)
    max_completion_tokens: Tokens | None = None
    response_format: ResponseFormat | None = None
    logprobs: StrictBool | None = None
    top_logprobs: Annotated[StrictInt, Field(ge=0, le=MAX_LOGPROBS)] | None = None
    tools: list[ToolSpec] | None = None
    tool_choice: Literal["none", "auto", "required"] | NamedTool | None = None
    parallel_tool_calls: StrictBool | None = None
    store: StrictBool | None = None
    modalities: list[str] | None = None


class CompletionBody(_Sampling):
    prompt: str | list[str]
    logprobs: Annotated[StrictInt, Field(ge=0, le=MAX_LOGPROBS)] | None = None
    echo: StrictBool | None = None
    suffix: str | None = None


@dataclass(frozen=True)
class Tools:
    """A chat request's tools, as the template renders them, and how the answer must use them."""

    specs: tuple[dict[str, Any], ...]
    """``{"type": "function", "function": {name, description, parameters}}`` each (what chat templates iterate)."""
    choice: str
    """``auto``, ``required`` or ``named``."""
    named: str | None = None
    parallel: bool = True

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(spec["function"]["name"] for spec in self.specs)

    def parameters(self, name: str) -> dict[str, Any]:
        for spec in self.specs:
            if spec["function"]["name"] == name:
                params = spec["function"].get("parameters")
                return params if isinstance(params, dict) else {"type": "object", "properties": {}}
        raise KeyError(name)


@dataclass(frozen=True)
class Generation:
    kind: Literal["chat", "completion"]
    model: str
    stream: bool
    include_usage: bool
    max_tokens: int | None
    temperature: float | None
    top_p: float | None
    stop: tuple[str, ...]
    frequency_penalty: float | None
    presence_penalty: float | None
    guide: Guide | None
    messages: tuple[dict[str, Any], ...] = ()
    prompt: str = ""
    continuous_usage: bool = False
    top_k: int | None = None
    min_tokens: int | None = None
    repetition_penalty: float | None = None
    stop_token_ids: tuple[int, ...] = ()
    include_stop_str_in_output: bool | None = None
    ignore_eos: bool | None = None
    skip_special_tokens: bool | None = None
    n: int = 1
    best_of: int | None = None
    logprobs: int | None = None
    """Top logprobs per token the engine returns (None: none)."""
    top_logprobs: int = 0
    """Chat: how many alternatives each token's entry lists."""
    logit_bias: dict[int, float] = field(default_factory=dict)
    tools: Tools | None = None
    guide_param: str = "response_format"
    """The request field the guide came from (refusals name it)."""
    ignored: tuple[str, ...] = ()
    """Fields accepted without effect (the server logs them)."""
    seed: int | None = None


def parse_chat(raw: Any, *, max_tools: int = MAX_TOOLS_DEFAULT) -> Generation:
    body = _validate(ChatBody, raw)
    ignored = _screen(body, fields.CHAT)
    if body.top_logprobs and not body.logprobs:
        raise invalid("top_logprobs needs logprobs set to true", param="top_logprobs")
    if body.modalities not in (None, ["text"]):
        raise invalid("modalities: this model answers text only", param="modalities")
    messages = tuple(_message(m, i) for i, m in enumerate(body.messages))
    tools = _tools(body, max_tools)
    guide, guide_param = _guide(body.response_format), "response_format.json_schema.schema"
    if tools is not None and tools.choice in ("required", "named"):
        if guide is not None:
            raise invalid("response_format and a forced tool_choice cannot be combined", param="tool_choice")
        guide, guide_param = _tool_guide(tools), "tools"
    max_tokens = body.max_completion_tokens if body.max_completion_tokens is not None else body.max_tokens
    logprobs = max(body.top_logprobs or 0, 1) if body.logprobs else None
    return Generation(
        kind="chat",
        messages=messages,
        guide=guide,
        guide_param=guide_param,
        max_tokens=max_tokens,
        tools=tools,
        logprobs=logprobs,
        top_logprobs=body.top_logprobs or 0,
        ignored=ignored,
        **_sampling(body),
    )


def parse_completion(raw: Any) -> Generation:
    body = _validate(CompletionBody, raw)
    ignored = _screen(body, fields.COMPLETIONS)
    prompt = body.prompt
    if isinstance(prompt, list):
        if len(prompt) != 1:
            raise invalid("prompt must be one string (batched prompts are not supported)", param="prompt")
        prompt = prompt[0]
    if not prompt:
        raise invalid("prompt must not be empty", param="prompt")
    return Generation(
        kind="completion",
        prompt=prompt,
        guide=None,
        max_tokens=body.max_tokens,
        logprobs=body.logprobs or None,
        ignored=ignored,
        **_sampling(body),
    )


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


def _screen(body: _Sampling, endpoint: str) -> tuple[str, ...]:
    """The 400 for a refused field set to anything but its neutral value; the names of the ignored ones."""
    given = {**{k: getattr(body, k) for k in body.model_fields_set}, **(body.model_extra or {})}
    ignored = []
    for name, value in given.items():
        disposition = fields.disposition(name, endpoint)
        if disposition == "refused" and value not in (None, False, [], {}):
            if name == "modalities":
                continue  # checked with its own message
            field = fields.BY_NAME.get(name)
            why = field.how if field is not None else "not supported"
            raise invalid(f"{name} is not supported by this server: {why}", param=name)
        if disposition == "ignored" and value is not None:
            ignored.append(name)
    _refuse_common(body)
    return tuple(sorted(ignored))


def _refuse_common(body: _Sampling) -> None:
    if body.stream_options is not None and not body.stream:
        raise invalid("stream_options is only allowed when stream is true", param="stream_options")
    stops = [body.stop] if isinstance(body.stop, str) else list(body.stop or [])
    if len(stops) > MAX_STOP:
        raise invalid(f"stop takes at most {MAX_STOP} sequences, got {len(stops)}", param="stop")
    if any(not s for s in stops):
        raise invalid("stop sequences must not be empty", param="stop")
    n = body.n or 1
    if body.best_of is not None and body.best_of < n:
        raise invalid(f"best_of ({body.best_of}) must be at least n ({n})", param="best_of")
    if body.best_of not in (None, 1) and body.stream:
        raise invalid("best_of cannot be used with stream (only the best sequences are returned, at the end)",
                      param="best_of")  # fmt: skip
    for token in body.logit_bias or {}:
        if not token.isdigit():
            raise invalid(f"logit_bias keys must be token ids, got {token!r}", param="logit_bias")


def _sampling(body: _Sampling) -> dict[str, Any]:
    stops = [body.stop] if isinstance(body.stop, str) else list(body.stop or [])
    options = body.stream_options
    include_usage = bool(options and options.include_usage)
    top_k = body.top_k if body.top_k not in (None, -1) else None
    return {
        "model": body.model,
        "stream": bool(body.stream),
        "include_usage": include_usage,
        "continuous_usage": include_usage and bool(options and options.continuous_usage_stats),
        "temperature": body.temperature,
        "top_p": body.top_p,
        "top_k": top_k,
        "min_tokens": body.min_tokens,
        "repetition_penalty": body.repetition_penalty,
        "stop": tuple(stops),
        "stop_token_ids": tuple(body.stop_token_ids or ()),
        "include_stop_str_in_output": body.include_stop_str_in_output,
        "ignore_eos": body.ignore_eos,
        "skip_special_tokens": body.skip_special_tokens,
        "n": body.n or 1,
        "best_of": body.best_of,
        "frequency_penalty": body.frequency_penalty,
        "presence_penalty": body.presence_penalty,
        "logit_bias": {int(k): float(v) for k, v in (body.logit_bias or {}).items()},
        "seed": body.seed,
    }


def _message(message: Message, index: int) -> dict[str, Any]:
    """A message as chat templates read it (tool calls' arguments as objects, as transformers passes them)."""
    out: dict[str, Any] = {"role": message.role, "content": message.text()}
    if message.name is not None:
        out["name"] = message.name
    if message.tool_call_id is not None:
        out["tool_call_id"] = message.tool_call_id
    if message.tool_calls:
        calls = []
        for j, call in enumerate(message.tool_calls):
            try:
                arguments = json.loads(call.function.arguments) if call.function.arguments else {}
            except ValueError:
                raise invalid(
                    "tool call arguments must be a JSON object",
                    param=f"messages[{index}].tool_calls[{j}].function.arguments",
                ) from None
            calls.append(
                {"id": call.id, "type": "function", "function": {"name": call.function.name, "arguments": arguments}}
            )
        out["tool_calls"] = calls
    return out


def _tools(body: ChatBody, max_tools: int) -> Tools | None:
    choice = body.tool_choice
    if not body.tools:
        if choice not in (None, "none"):
            raise invalid("tool_choice needs tools", param="tool_choice")
        return None
    if len(body.tools) > max_tools:
        raise invalid(
            f"tools: {len(body.tools)} tools exceed serving.guidedDecoding.limits.tools ({max_tools})",
            param="tools", code="guide_limit_exceeded",
        )  # fmt: skip
    names = [t.function.name for t in body.tools]
    if len(set(names)) != len(names):
        raise invalid("tools: function names must be unique", param="tools")
    if choice == "none":
        return None  # the tools stay out of the prompt (vLLM's default for tool_choice none)
    specs = tuple(
        {
            "type": "function",
            "function": {k: v for k, v in t.function.model_dump(exclude_none=True).items() if k != "strict"},
        }
        for t in body.tools
    )
    named = None
    if isinstance(choice, NamedTool):
        named = choice.function.name
        if named not in names:
            raise invalid(f"tool_choice names {named!r}, which is not among the tools", param="tool_choice")
    mode = "named" if named else str(choice or "auto")
    return Tools(specs=specs, choice=mode, named=named, parallel=body.parallel_tool_calls is not False)


def _tool_guide(tools: Tools) -> Guide:
    """A forced call as guided JSON (Triton's and vLLM's frontends do the same): a named tool's arguments, or for
    ``required`` one call ``{"name": <a tool>, "parameters": <its arguments>}`` (Llama 3.1's JSON call format)."""
    if tools.named is not None:
        schema = tools.parameters(tools.named)
    else:
        schema = {
            "anyOf": [
                {
                    "type": "object",
                    "properties": {"name": {"const": name}, "parameters": tools.parameters(name)},
                    "required": ["name", "parameters"],
                    "additionalProperties": False,
                }
                for name in tools.names
            ]
        }
    return Guide(kind="json_schema", text=json.dumps(schema, separators=(",", ":"), ensure_ascii=False))


def _guide(response_format: ResponseFormat | None) -> Guide | None:
    if response_format is None or response_format.type == "text":
        return None
    if response_format.type == "json_object":
        return Guide(kind="json_object")
    spec = response_format.json_schema
    if spec is None or spec.schema_ is None:
        raise invalid("response_format json_schema needs json_schema.schema", param="response_format.json_schema")
    return Guide(kind="json_schema", text=json.dumps(spec.schema_, separators=(",", ":"), ensure_ascii=False))


_UNION_TAGS = {"str", "int", "float", "bool", "dict", "list"}


def _param(loc: tuple[Any, ...]) -> str | None:
    """OpenAI's way to name a nested field: ``messages[0].content`` (pydantic's union branch tags, such as
    ``str`` or ``list[TextPart]``, end the name: they are types, not fields)."""
    out = ""
    for part in loc:
        if isinstance(part, str) and (part in _UNION_TAGS or "[" in part or part.startswith("literal")):
            break
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or None
