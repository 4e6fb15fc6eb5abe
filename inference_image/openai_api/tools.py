"""Tool calls in Llama 3.1's JSON format, out of the model's text and into OpenAI's shape, whole or streamed.

Llama 3.1 calls a custom tool by answering ``{"name": <function name>, "parameters": <its arguments>}`` (Meta's
prompt-format documentation for Llama 3.1, "JSON based tool calling"; the model's chat template renders the tools and
earlier calls that way and tool results in the ``ipython`` role), sometimes after a ``<|python_tag|>`` and, from a
model asked for several, as calls separated by ``;``. vLLM's ``llama3_json`` parser reads the same format and also
accepts ``arguments`` for ``parameters``; trtllm-serve 1.2 has no parser for it (shared/facts/engine.md section 4).

How each ``tool_choice`` is answered (``requests.Tools``):

- ``auto``: the text is parsed when it is done; an answer that is one or more such calls to declared tools becomes
  ``tool_calls`` (``finish_reason`` ``tool_calls``), anything else stays ``content``. A stream shows text as it comes,
  except an answer starting with ``{``, which waits until it can be told apart;
- ``required``: the engine is guided to exactly one ``{"name", "parameters"}`` call (requests._tool_guide); a stream
  sends the name once known, then the arguments as they are generated;
- a named function: the engine is guided to that function's arguments object; the text *is* the arguments, streamed
  as it comes (``finish_reason`` ``stop``, as OpenAI answers a forced call).
"""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass, field
from typing import Any

from inference_platform.inference_image.openai_api.requests import Tools

PYTHON_TAG = "<|python_tag|>"
_CALL_PREFIX = re.compile(r'^\s*\{\s*"name"\s*:\s*"((?:[^"\\]|\\.)*)"\s*,\s*"(?:parameters|arguments)"\s*:\s*')


@dataclass(frozen=True)
class Call:
    name: str
    arguments: str
    """JSON text, as OpenAI carries it."""
    id: str = field(default_factory=lambda: f"call_{uuid.uuid4().hex[:24]}")

    def message(self) -> dict[str, Any]:
        return {"id": self.id, "type": "function", "function": {"name": self.name, "arguments": self.arguments}}


def parse_calls(text: str, tools: Tools) -> list[Call] | None:
    """The calls a whole answer makes, or None when it is not (only) calls to declared tools."""
    if tools.choice == "named" and tools.named is not None:
        return [Call(tools.named, text.strip())]
    body = text.strip()
    if body.startswith(PYTHON_TAG):
        body = body[len(PYTHON_TAG) :].strip()
    if not body.startswith("{"):
        return None
    decoder = json.JSONDecoder()
    calls, i = [], 0
    while i < len(body):
        try:
            obj, end = decoder.raw_decode(body, i)
        except ValueError:
            return None
        if not isinstance(obj, dict) or obj.get("name") not in tools.names:
            return None
        arguments = obj.get("parameters", obj.get("arguments", {}))
        if not isinstance(arguments, dict):
            return None
        calls.append(Call(obj["name"], json.dumps(arguments, ensure_ascii=False)))
        i = end
        while i < len(body) and body[i] in " \t\r\n;":
            i += 1
    return calls or None


class ToolStream:
    """One choice's streamed deltas when tools are in play: fed the text as it comes, returns OpenAI delta dicts."""

    def __init__(self, tools: Tools) -> None:
        self.tools = tools
        self.text = ""
        self.sent_name = False
        self.sent_args = 0
        self.args_start = 0
        self.call: Call | None = None
        self.shown = 0
        self.holding = False
        self.calls: list[Call] | None = None
        self.args_done = False

    def feed(self, delta: str) -> list[dict[str, Any]]:
        self.text += delta
        if self.tools.choice == "named":
            return self._named(delta)
        if self.tools.choice == "required":
            return self._required(final=False)
        return self._auto(final=False)

    def finish(self) -> list[dict[str, Any]]:
        """Deltas still owed when the choice ends."""
        if self.tools.choice == "named":
            return []
        if self.tools.choice == "required":
            return self._required(final=True)
        return self._auto(final=True)

    @property
    def called(self) -> bool:
        return self.sent_name or bool(self.calls)

    def _named(self, delta: str) -> list[dict[str, Any]]:
        out = []
        if not self.sent_name:
            assert self.tools.named is not None
            self.call = Call(self.tools.named, "")
            out.append(_header(0, self.call))
            self.sent_name = True
        if delta:
            out.append(_arguments(0, delta))
        return out

    def _required(self, *, final: bool) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        if not self.sent_name:
            match = _CALL_PREFIX.match(self.text)
            if match is None:
                return out
            self.call = Call(json.loads(f'"{match.group(1)}"'), "")
            out.append(_header(0, self.call))
            self.sent_name, self.sent_args = True, match.end()
            self.args_start = match.end()
        if self.args_done:
            return out  # what follows the arguments is the call's closing brace
        end = _object_end(self.text, self.args_start)
        upto = end if end is not None else len(self.text)
        if upto > self.sent_args:
            out.append(_arguments(0, self.text[self.sent_args : upto]))
            self.sent_args = upto
        self.args_done = end is not None
        return out

    def _auto(self, *, final: bool) -> list[dict[str, Any]]:
        stripped = self.text.lstrip()
        if not self.holding and self.shown == 0 and (stripped.startswith("{") or stripped.startswith(PYTHON_TAG)):
            self.holding = True
        if self.holding and not stripped:
            return []
        if self.holding:
            if not final:
                return []  # an answer that may be a call waits until it can be told apart
            self.calls = parse_calls(self.text, self.tools)
            if self.calls:
                return [delta for i, call in enumerate(self.calls) for delta in (_header(i, call, call.arguments),)]
            self.holding = False
        if not stripped and not final:
            return []
        out = [{"content": self.text[self.shown :]}] if len(self.text) > self.shown else []
        self.shown = len(self.text)
        return out


def _header(index: int, call: Call, arguments: str = "") -> dict[str, Any]:
    return {
        "tool_calls": [
            {"index": index, "id": call.id, "type": "function", "function": {"name": call.name, "arguments": arguments}}
        ]
    }


def _arguments(index: int, text: str) -> dict[str, Any]:
    return {"tool_calls": [{"index": index, "function": {"arguments": text}}]}


def _object_end(text: str, start: int) -> int | None:
    """The index just after the JSON object (or value) starting at ``start``, None while it is incomplete."""
    depth, in_string, escaped = 0, False, False
    begun = False
    for i in range(start, len(text)):
        ch = text[i]
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
                if depth == 0:
                    return i + 1
            continue
        if ch == '"':
            in_string, begun = True, True
        elif ch in "{[":
            depth, begun = depth + 1, True
        elif ch in "}]":
            depth -= 1
            if depth == 0:
                return i + 1
        elif begun and depth == 0 and ch in ",} \n\t":
            return i
        elif not ch.isspace():
            begun = True
    return None
