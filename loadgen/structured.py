"""Structured-output requests of ``inferctl smoke`` and the checks of what comes back.

The guides go through the ensemble's ``guided_decoding_guide_type`` / ``guided_decoding_guide``
inputs; the output must parse and conform, whatever engine produced it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

ANSWER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "answer": {"type": "string"},
        "confidence": {"type": "number", "minimum": 0},
        "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1},
    },
    "required": ["answer", "confidence", "tags"],
}
TICKET_REGEX = r"[A-Z]{3}-\d{4}"


@dataclass(frozen=True)
class Guide:
    guide_type: str
    guide: str

    def check(self, text: str) -> str | None:
        """Why ``text`` does not satisfy the guide, or None."""
        if self.guide_type == "regex":
            return None if re.fullmatch(self.guide, text) else f"{text!r} does not match {self.guide!r}"
        try:
            value = json.loads(text)
        except json.JSONDecodeError as err:
            return f"{text[:80]!r} is not JSON ({err.msg})"
        if self.guide_type == "json_schema":
            return schema_problem(value, json.loads(self.guide), "$")
        return None


GUIDES = (
    Guide("json_schema", json.dumps(ANSWER_SCHEMA)),
    Guide("regex", TICKET_REGEX),
)

_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "number": (int, float),
    "integer": (int,),
    "boolean": (bool,),
    "null": (type(None),),
}


def schema_problem(value: Any, schema: dict[str, Any], where: str) -> str | None:
    """The first way ``value`` breaks ``schema`` (the subset smoke's schemas use), or None."""
    kind = schema.get("type")
    if kind is not None:
        ok = isinstance(value, _TYPES[kind]) and not (kind in ("number", "integer") and isinstance(value, bool))
        if not ok:
            return f"{where}: expected {kind}, got {type(value).__name__}"
    if "enum" in schema and value not in schema["enum"]:
        return f"{where}: {value!r} not in {schema['enum']}"
    if "minimum" in schema and isinstance(value, int | float) and value < schema["minimum"]:
        return f"{where}: {value} below minimum {schema['minimum']}"
    if isinstance(value, dict):
        for name in schema.get("required", []):
            if name not in value:
                return f"{where}: missing required {name!r}"
        for name, sub in schema.get("properties", {}).items():
            if name in value and (problem := schema_problem(value[name], sub, f"{where}.{name}")):
                return problem
    if isinstance(value, list):
        if len(value) < schema.get("minItems", 0):
            return f"{where}: fewer than {schema['minItems']} items"
        for i, item in enumerate(value):
            if problem := schema_problem(item, schema.get("items", {}), f"{where}[{i}]"):
                return problem
    return None
