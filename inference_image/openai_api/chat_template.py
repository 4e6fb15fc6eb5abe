"""The model's chat template (``tokenizer_config.json`` ``chat_template``), rendered as transformers renders it.

Same environment as ``transformers.utils.chat_template_utils._cached_compile_jinja_template``: jinja2's
``ImmutableSandboxedEnvironment`` (a template cannot reach Python objects or mutate its inputs) with
``trim_blocks``/``lstrip_blocks`` and the ``loopcontrols`` extension, the ``tojson`` filter without HTML
escaping, and the ``raise_exception`` / ``strftime_now`` globals; ``render`` passes ``messages``, ``tools``,
``documents``, ``add_generation_prompt`` and the tokenizer's special tokens (``bos_token``, ``eos_token`` ...),
as ``apply_chat_template`` does.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import jinja2
import jinja2.ext
from jinja2.sandbox import ImmutableSandboxedEnvironment


class ChatTemplateError(ValueError):
    """The template refused the conversation (its ``raise_exception``) or failed to render."""


def _raise(message: str) -> None:
    raise jinja2.exceptions.TemplateError(message)


def _tojson(
    value: Any, ensure_ascii: bool = False, indent: Any = None, separators: Any = None, sort_keys: bool = False
):
    return json.dumps(value, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def _strftime_now(fmt: str) -> str:
    return datetime.now().strftime(fmt)


class ChatTemplate:
    def __init__(self, source: str, special_tokens: Mapping[str, str]) -> None:
        env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[jinja2.ext.loopcontrols])
        env.filters["tojson"] = _tojson
        env.globals["raise_exception"] = _raise
        env.globals["strftime_now"] = _strftime_now
        try:
            self._template = env.from_string(source)
        except jinja2.exceptions.TemplateSyntaxError as err:
            raise ChatTemplateError(f"chat_template does not compile: {err}") from None
        self._special = dict(special_tokens)

    def render(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        tools: Sequence[Mapping[str, Any]] | None = None,
        add_generation_prompt: bool = True,
    ) -> str:
        try:
            return self._template.render(
                messages=list(messages),
                tools=list(tools) if tools else None,
                documents=None,
                add_generation_prompt=add_generation_prompt,
                **self._special,
            )
        except jinja2.exceptions.TemplateError as err:
            raise ChatTemplateError(str(err)) from None
