"""Reading resource properties the way policies need: camelCase engine names, dotted paths, and the
provider's default where the program left a property unset (the engine shows only what was set)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

_MISSING = object()


def get(props: object, path: str, default: Any = None) -> Any:
    """``get(props, "scalingConfig.maxSize")``; list indices as numbers (``"ingress.0.cidrBlocks"``). Anything
    but a mapping or a list on the way gives ``default``."""
    current: Any = props
    for part in path.split("."):
        if isinstance(current, Mapping):
            current = current.get(part, _MISSING)
        elif _is_list(current) and part.isdigit() and int(part) < len(current):
            current = current[int(part)]
        else:
            return default
        if current is _MISSING or current is None:
            return default
    return current


def as_document(value: Any) -> dict[str, Any] | None:
    """An IAM/KMS/S3 policy given as JSON text or as an object; None when absent or unreadable."""
    if isinstance(value, Mapping):
        return _plain(value)
    if isinstance(value, str) and value.strip():
        try:
            doc = json.loads(value)
        except json.JSONDecodeError:
            return None
        return doc if isinstance(doc, dict) else None
    return None


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if _is_list(value):
        return [_plain(v) for v in value]
    return value


def statements(document: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    if not document:
        return []
    found = document.get("Statement", [])
    return [dict(found)] if isinstance(found, Mapping) else [dict(s) for s in as_list(found) if isinstance(s, Mapping)]


def as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return list(value) if _is_list(value) else [value]


def _is_list(value: Any) -> bool:
    # The analyzer hands policies read-only Sequence/Mapping proxies, not lists and dicts.
    return isinstance(value, Sequence) and not isinstance(value, (str, bytes))
