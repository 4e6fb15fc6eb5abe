"""TEST DOUBLE: deterministic texts that satisfy a guided-decoding guide, for the CPU stand-in.

A real engine constrains sampling with xgrammar; the stand-in instead builds the smallest text the
guide accepts (JSON, a JSON-schema instance, a regex match) and checks it before emitting it, which
proves the guide reached the LLM step and lets clients check their parsing of structured output.
"""

from __future__ import annotations

import json
import re
from typing import Any

try:  # Python 3.11+ keeps the regex parser private
    import re._parser as sre_parse  # type: ignore[import-not-found]
    from re import _constants as sre_constants  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - older interpreters
    import sre_constants  # type: ignore[no-redef]
    import sre_parse  # type: ignore[no-redef]


class GuideError(ValueError):
    """The stand-in cannot produce a text for this guide; the message says why."""


def satisfying_text(guide_type: str, guide: str | None, prompt: str) -> str:
    if guide_type == "json":
        return json.dumps({"text": prompt})
    if guide_type == "json_schema":
        try:
            schema = json.loads(guide or "")
        except json.JSONDecodeError as err:
            raise GuideError(f"guided_decoding_guide is not JSON: {err}") from None
        return json.dumps(_instance(schema, prompt, depth=0))
    if guide_type == "regex":
        return _regex_match(guide or "")
    raise GuideError(f"the CPU stand-in cannot satisfy {guide_type} guides")


def _instance(schema: Any, prompt: str, *, depth: int) -> Any:
    if depth > 16:
        raise GuideError("JSON schema nests deeper than 16 levels")
    if not isinstance(schema, dict):
        raise GuideError(f"expected a JSON schema object, got {schema!r}")
    if "$ref" in schema:
        raise GuideError("the CPU stand-in does not resolve $ref")
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return schema["enum"][0]
    for key in ("anyOf", "oneOf", "allOf"):
        if key in schema:
            return _instance(schema[key][0], prompt, depth=depth + 1)
    kind = schema.get("type", "object")
    if isinstance(kind, list):
        kind = kind[0]
    if kind == "object":
        props = schema.get("properties", {})
        required = schema.get("required", list(props))
        return {name: _instance(props.get(name, {"type": "string"}), prompt, depth=depth + 1) for name in required}
    if kind == "array":
        count = int(schema.get("minItems", 1))
        return [_instance(schema.get("items", {"type": "string"}), prompt, depth=depth + 1) for _ in range(count)]
    if kind == "string":
        text = prompt[: int(schema.get("maxLength", len(prompt)))]
        return text.ljust(int(schema.get("minLength", 0)), "x")
    if kind == "integer":
        return int(schema.get("minimum", 0))
    if kind == "number":
        return float(schema.get("minimum", 0.0))
    if kind == "boolean":
        return True
    if kind == "null":
        return None
    raise GuideError(f"unsupported JSON schema type {kind!r}")


def _regex_match(pattern: str) -> str:
    try:
        parsed = sre_parse.parse(pattern)
    except re.error as err:
        raise GuideError(f"guided_decoding_guide is not a regex: {err}") from None
    groups: dict[int, str] = {}
    text = _walk(parsed, groups)
    if re.fullmatch(pattern, text) is None:
        raise GuideError(f"the CPU stand-in cannot build a match for {pattern!r}")
    return text


_CATEGORY_CHAR = {
    sre_constants.CATEGORY_DIGIT: "0",
    sre_constants.CATEGORY_NOT_DIGIT: "a",
    sre_constants.CATEGORY_SPACE: " ",
    sre_constants.CATEGORY_NOT_SPACE: "a",
    sre_constants.CATEGORY_WORD: "a",
    sre_constants.CATEGORY_NOT_WORD: " ",
}
_CANDIDATES = "a0 Z_-.x"


def _walk(items: Any, groups: dict[int, str]) -> str:
    out = []
    for op, arg in items:
        out.append(_node(op, arg, groups))
    return "".join(out)


def _node(op: Any, arg: Any, groups: dict[int, str]) -> str:
    c = sre_constants
    if op is c.LITERAL:
        return chr(arg)
    if op is c.NOT_LITERAL:
        return next(ch for ch in _CANDIDATES if ord(ch) != arg)
    if op is c.ANY:
        return "a"
    if op is c.IN:
        return _in_set(arg)
    if op in (c.MAX_REPEAT, c.MIN_REPEAT, getattr(c, "POSSESSIVE_REPEAT", None)):
        low, _high, sub = arg
        return "".join(_walk(sub, groups) for _ in range(low))
    if op is c.SUBPATTERN:
        group, _add, _del, sub = arg
        text = _walk(sub, groups)
        if group is not None:
            groups[group] = text
        return text
    if op is c.BRANCH:
        return _walk(arg[1][0], groups)
    if op is c.GROUPREF:
        return groups.get(arg, "")
    if op in (c.AT, c.ASSERT, c.ASSERT_NOT):
        return ""
    raise GuideError(f"the CPU stand-in cannot build a match for regex construct {op}")


def _in_set(items: list[Any]) -> str:
    c = sre_constants
    negate = bool(items) and items[0][0] is c.NEGATE
    if not negate:
        op, arg = items[0]
        if op is c.LITERAL:
            return chr(arg)
        if op is c.RANGE:
            return chr(arg[0])
        if op is c.CATEGORY:
            return _CATEGORY_CHAR.get(arg, "a")
    for ch in _CANDIDATES:
        if _set_accepts(items, ch):
            return ch
    raise GuideError("the CPU stand-in cannot pick a character for a negated class")


def _set_accepts(items: list[Any], ch: str) -> bool:
    c = sre_constants
    negate = items[0][0] is c.NEGATE
    hit = False
    for op, arg in items[1:] if negate else items:
        if op is c.LITERAL:
            hit |= ord(ch) == arg
        elif op is c.RANGE:
            hit |= arg[0] <= ord(ch) <= arg[1]
        elif op is c.CATEGORY:
            hit |= re.fullmatch(_CATEGORY_PATTERN[arg], ch) is not None
    return hit != negate


_CATEGORY_PATTERN = {
    sre_constants.CATEGORY_DIGIT: r"\d",
    sre_constants.CATEGORY_NOT_DIGIT: r"\D",
    sre_constants.CATEGORY_SPACE: r"\s",
    sre_constants.CATEGORY_NOT_SPACE: r"\S",
    sre_constants.CATEGORY_WORD: r"\w",
    sre_constants.CATEGORY_NOT_WORD: r"\W",
}
