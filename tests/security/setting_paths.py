"""Every place a stack file can hold a string: each ``str`` (or string ``Literal``) leaf reachable from the
settings' SECTIONS, as the path a stack file writes it at (lists as ``[0]``, free-form mappings as ``.k``),
walked from the models so a key added tomorrow is in the sweep without a new test."""

from __future__ import annotations

import typing
from collections.abc import Iterator
from typing import Any

from pydantic import BaseModel, RootModel

from inference_platform.settings import SECTIONS

Step = str | int  # a mapping key or a list index


def _members(annotation: Any) -> list[Any]:
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _members(typing.get_args(annotation)[0])
    if origin is typing.Union or type(annotation).__name__ == "UnionType":
        return [m for a in typing.get_args(annotation) for m in _members(a)]
    return [annotation]


def _is_string(annotation: Any) -> bool:
    if annotation is str:
        return True
    if typing.get_origin(annotation) is typing.Literal:
        return any(isinstance(v, str) for v in typing.get_args(annotation))
    return False


def _walk(
    annotation: Any, path: tuple[Step, ...], seen: tuple[type, ...], leaf: Any = None
) -> Iterator[tuple[Step, ...]]:
    leaf = leaf or _is_string
    members = _members(annotation)
    if any(leaf(m) for m in members):
        yield path
        return
    for m in members:
        origin = typing.get_origin(m)
        args = typing.get_args(m)
        if isinstance(m, type) and issubclass(m, RootModel):
            yield from _walk(m.model_fields["root"].annotation, path, seen, leaf)
        elif isinstance(m, type) and issubclass(m, BaseModel):
            if m in seen:
                continue
            for name, field in m.model_fields.items():
                yield from _walk(field.annotation, (*path, field.alias or name), (*seen, m), leaf)
        elif origin in (list, tuple, set, frozenset) and args:
            yield from _walk(args[0], (*path, 0), seen, leaf)
        elif origin is dict and args:
            if any(_is_string(k) for k in _members(args[0])):
                yield (*path, "<key>")
            yield from _walk(args[-1], (*path, "k"), seen, leaf)
        else:
            continue
        return


def string_paths() -> list[tuple[str, tuple[Step, ...]]]:
    """(section key, path inside it) for every string leaf; ``"<key>"`` marks a mapping's own keys."""
    out = []
    for section in SECTIONS:
        for path in _walk(section, (), ()):
            out.append((section.key, path))
    return out


def boolean_paths() -> list[tuple[str, tuple[Step, ...]]]:
    """(section key, path inside it) for every leaf that takes a boolean."""
    found = [(s.key, p) for s in SECTIONS for p in _walk(s, (), (), lambda m: m is bool)]
    return [(k, p) for k, p in found if not p or p[-1] != "<key>"]


def dotted(section: str, path: tuple[Step, ...]) -> str:
    text = section
    for step in path:
        text += f"[{step}]" if isinstance(step, int) else f".{step}"
    return text


def put(values: dict[str, Any], section: str, path: tuple[Step, ...], value: Any) -> dict[str, Any]:
    """``values`` with ``value`` at ``section`` + ``path``, creating what is missing (a list of one item, a
    mapping); a ``"<key>"`` step makes ``value`` the key of a mapping holding the key's sample value."""
    node: Any = values.setdefault(section, {})
    if not path:
        values[section] = value
        return values
    for step, nxt in zip(path, (*path[1:], None), strict=True):
        if nxt is None:
            break
        if nxt == "<key>":
            if isinstance(node, dict):
                node[step] = {value: "x"}
            return values
        empty: Any = [] if isinstance(nxt, int) else {}
        if isinstance(step, int):
            if not isinstance(node, list):
                return values
            if not node:
                node.append(empty)
            if not isinstance(node[0], type(empty)):
                node[0] = empty
            node = node[0]
        else:
            if not isinstance(node, dict):
                return values
            if not isinstance(node.get(step), type(empty)):
                node[step] = empty
            node = node[step]
    last = path[-1]
    if isinstance(last, int):
        if isinstance(node, list):
            node[:] = [value, *node[1:]]
    elif isinstance(node, dict):
        node[last] = value
    return values
