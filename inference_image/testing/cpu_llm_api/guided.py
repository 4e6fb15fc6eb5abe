"""TEST DOUBLE: guided decoding that really constrains the stand-in's tokens, with outlines-core.

A JSON schema becomes a regular expression (``outlines_core.json_schema.build_regex_from_schema``), the
regex an index of which token may follow in each state over the tokenizer's vocabulary
(``outlines_core.Index``), as a real engine's grammar backend masks logits. The stand-in has no logits to
mask, so it picks among the allowed tokens: the next byte of its echo text where the guide allows it, else a
step along a shortest path to an accepting state (ties broken by the engine's one generator), and the EOS once the
guide accepts and the echo is spent. Every emitted token is allowed, so the text always matches the guide
(unless max_tokens cuts it, as on a GPU). EBNF grammars and structural tags are refused (ValueError).
"""

from __future__ import annotations

import contextlib
import json
import random
from collections import deque
from functools import lru_cache
from typing import Any

from inference_platform.inference_image.testing.cpu_llm_api.params import GuidedDecodingParams

ANY_OBJECT = json.dumps({"type": "object", "additionalProperties": {"type": ["string", "number", "boolean", "null"]}})
"""The stand-in's ``json_object`` guide: objects of scalar values. Indexing outlines-core's regex for any JSON
object (nested objects, depth 1 and more) takes about 17 s on this machine, against 7 ms for this one; every
text either guide admits is a JSON object, which is all ``json_object`` promises."""
_UNSAFE_ECHO = set(b'"\\') | set(range(0x20)) | {0x7F}
"""Bytes kept out of the echo so a JSON string can take all of it."""


def regex_of(params: GuidedDecodingParams) -> str:
    from outlines_core.json_schema import build_regex_from_schema

    if params.regex is not None:
        return params.regex
    if params.json is not None or params.json_object:
        schema = ANY_OBJECT if params.json is None else params.json
        if params.json is not None:
            with contextlib.suppress(ValueError):
                schema = _small_integer_ranges(json.loads(schema) if isinstance(schema, str) else schema)
        text = schema if isinstance(schema, str) else json.dumps(schema)
        try:
            return build_regex_from_schema(text)
        except Exception as err:  # outlines-core raises its own ValueError/TypeError subclasses
            raise ValueError(f"the CPU stand-in cannot compile this JSON schema: {err}") from None
    kind = "grammar" if params.grammar is not None else "structural_tag"
    raise ValueError(f"the CPU stand-in cannot apply {kind} guides (only json, json_object and regex)")


SMALL_INTEGER_RANGE = 256
"""An integer schema bounded on both sides by at most this many values becomes their enum (outlines-core's regex
does not bound integers; xgrammar does, with range regexes): what a tool's "days: 1-7" asks is then kept."""


def _small_integer_ranges(node: Any) -> Any:
    """``{"type": "integer", "minimum": a, "maximum": b}`` with few values as ``{"enum": [a..b]}``, everywhere."""
    if isinstance(node, list):
        return [_small_integer_ranges(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {key: _small_integer_ranges(value) for key, value in node.items()}
    low, high = out.get("minimum"), out.get("maximum")
    if (out.get("type") == "integer" and "enum" not in out and isinstance(low, int) and isinstance(high, int)
            and not isinstance(low, bool) and not isinstance(high, bool) and 0 <= high - low < SMALL_INTEGER_RANGE):  # fmt: skip
        for key in ("type", "minimum", "maximum"):
            out.pop(key)
        out["enum"] = list(range(low, high + 1))
    return out


class GuidedVocabulary:
    """The tokenizer's vocabulary indexed once; an index per distinct regex, cached."""

    def __init__(self, tokens: dict[int, bytes], eos_id: int) -> None:
        from outlines_core import Vocabulary

        by_bytes: dict[bytes, list[int]] = {}
        for ident, raw in tokens.items():
            if ident != eos_id:
                by_bytes.setdefault(raw, []).append(ident)
        self.eos_id = eos_id
        self.byte_token = {raw[0]: ids[0] for raw, ids in by_bytes.items() if len(raw) == 1}
        self._vocabulary = Vocabulary(eos_id, by_bytes)
        self.index = lru_cache(maxsize=32)(self._index)

    def _index(self, regex: str) -> tuple[Any, dict[int, dict[int, int]], dict[int, int]]:
        from outlines_core import Index

        try:
            index = Index(regex, self._vocabulary)
        except Exception as err:
            raise ValueError(f"the CPU stand-in cannot index this guide: {err}") from None
        transitions = index.get_transitions()
        return index, transitions, _distances(transitions, index.get_final_states())


def _distances(transitions: dict[int, dict[int, int]], finals: Any) -> dict[int, int]:
    """Tokens still needed from each state to an accepting one (reverse breadth-first search)."""
    back: dict[int, set[int]] = {}
    for state, moves in transitions.items():
        for target in moves.values():
            back.setdefault(target, set()).add(state)
    distance = {state: 0 for state in finals}
    queue = deque(distance)
    while queue:
        state = queue.popleft()
        for prior in back.get(state, ()):
            if prior not in distance:
                distance[prior] = distance[state] + 1
                queue.append(prior)
    return distance


class GuidedRun:
    """One request's walk through its guide's index."""

    def __init__(self, vocabulary: GuidedVocabulary, regex: str, echo: str, rng: random.Random) -> None:
        self.vocabulary = vocabulary
        self.index, self.transitions, self.distance = vocabulary.index(regex)
        self.state = self.index.get_initial_state()
        self.echo = [b for b in echo.encode("utf-8") if b not in _UNSAFE_ECHO]
        self.rng = rng

    def next_token(self) -> int:
        moves = self.transitions.get(self.state, {})
        if self.echo:
            token = self.vocabulary.byte_token.get(self.echo[0])
            if token is not None and token in moves:
                self.echo.pop(0)
                return self._take(token)
        if self.distance.get(self.state) == 0:
            self.echo.clear()  # accepted, and the echo fits no further: the sequence ends here
            return self.vocabulary.eos_id
        reachable = [(self.distance[t], tok) for tok, t in moves.items() if t in self.distance]
        if not reachable:
            raise ValueError("the guide has no way to an accepting state from here")
        best = min(d for d, _ in reachable)
        return self._take(self.rng.choice(sorted(tok for d, tok in reachable if d == best)))

    def _take(self, token: int) -> int:
        self.state = self.transitions[self.state][token]
        return token
