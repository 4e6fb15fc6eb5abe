"""A strict template renderer for Triton ``config.pbtxt`` files.

Placeholders are ``{{ name }}``. Rendering a template either fills every placeholder or fails with one
error naming every missing key; a value for a key the template does not use is an error too, so a
renamed placeholder cannot be silently ignored. Values are typed: booleans render ``true``/``false``,
numbers as numbers, strings are refused when they cannot sit inside a protobuf text-format string
literal, and ``Fragment`` inserts pre-built text (shared input/output blocks). NVIDIA's
``fill_template.py`` uses ``string.Template.safe_substitute``, which leaves unfilled ``${...}`` in
place; here any leftover brace or ``${`` after rendering is an error.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

PLACEHOLDER = re.compile(r"\{\{\s*([a-z][a-z0-9_]*)\s*\}\}")
_LEFTOVER = re.compile(r"\{\{|\}\}|\$\{")
# Protobuf text format string literals: no quote, backslash or line break without escaping, and we
# never need escapes in paths, names and enum-like values.
_UNSAFE_STRING = re.compile(r'["\\\n\r\x00]')


class RenderError(ValueError):
    """One or more templates could not be rendered; the message lists every problem."""

    def __init__(self, problems: Iterable[str]) -> None:
        self.problems = tuple(problems)
        super().__init__("cannot render the model repository: " + "; ".join(self.problems))


@dataclass(frozen=True)
class Fragment:
    """Text inserted verbatim (itself rendered strictly, or built from typed data)."""

    text: str


@dataclass(frozen=True)
class ParameterBlocks:
    """Typed ``parameters`` entries of a config.pbtxt, each value checked like a placeholder's."""

    values: tuple[tuple[str, bool | int | float | str], ...]


Value = bool | int | float | str | Fragment | ParameterBlocks


def placeholders(template: str) -> set[str]:
    return set(PLACEHOLDER.findall(template))


def format_value(key: str, value: Value) -> str:
    """The text a typed value renders to; raises ValueError naming ``key`` for a value it refuses."""
    if isinstance(value, Fragment):
        return value.text
    if isinstance(value, ParameterBlocks):
        return "\n".join(
            f'parameters: {{\n  key: "{name}"\n  value: {{ string_value: "{format_value(f"{key}.{name}", v)}" }}\n}}'
            for name, v in value.values
        )
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{key}: {value!r} is not a finite number")
        return repr(value)
    if isinstance(value, str):
        if _UNSAFE_STRING.search(value):
            raise ValueError(f"{key}: {value!r} contains a quote, backslash or line break")
        return value
    raise ValueError(f"{key}: unsupported value type {type(value).__name__}")


def template_problems(template: str, values: Mapping[str, Value], *, source: str) -> list[str]:
    """Every reason ``template`` cannot be rendered with ``values`` (empty when it can)."""
    problems = []
    needed = placeholders(template)
    missing = sorted(needed - values.keys())
    unknown = sorted(values.keys() - needed)
    if missing:
        problems.append(f"{source}: missing {', '.join(missing)}")
    if unknown:
        problems.append(f"{source}: unknown {', '.join(unknown)}")
    stripped = PLACEHOLDER.sub("", template)
    if _LEFTOVER.search(stripped):
        problems.append(f"{source}: malformed placeholder near {_context(stripped)!r}")
    for key in sorted(needed & values.keys()):
        try:
            format_value(key, values[key])
        except ValueError as err:
            problems.append(f"{source}: {err}")
    return problems


def render(template: str, values: Mapping[str, Value], *, source: str) -> str:
    """``template`` with every placeholder filled; RenderError lists everything that is wrong."""
    problems = template_problems(template, values, source=source)
    if problems:
        raise RenderError(problems)
    text = PLACEHOLDER.sub(lambda m: format_value(m.group(1), values[m.group(1)]), template)
    # A fragment may not smuggle in a placeholder of its own: one pass, nothing left over.
    if _LEFTOVER.search(text):
        raise RenderError([f"{source}: rendered text still holds a placeholder near {_context(text)!r}"])
    return text


def _context(text: str) -> str:
    match = _LEFTOVER.search(text)
    assert match is not None
    return text[max(0, match.start() - 20) : match.end() + 20]
