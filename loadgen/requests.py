"""The requests a load test sends: prompt sizes drawn from a distribution, OpenAI chat-completion bodies,
structured-output requests (``response_format`` with a JSON schema) mixed in, and the server-sent events that
come back.

Pure functions of a ``random.Random`` so that a seed reproduces a run's request mix. Prompts are
common English words, sized by what each word costs in the served model's tokenizer when that was
measured (``PromptSizing.word_tokens``; with Llama 3's tokenizer about one token, with the CPU
stand-in's byte-level one a token per byte), and always clamped to the server's ``maxInputLen`` and
``maxSeqLen`` so no request is refused for its size.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from typing import Any

from inference_platform.catalog.serving_contract import OPENAI_CHAT_PATH
from inference_platform.loadgen.config import LoadConfig, PromptSizing, SizeDistribution
from inference_platform.loadgen.structured import ANSWER_SCHEMA, Guide

WORDS = tuple(
    [
        "the",
        "quick",
        "brown",
        "fox",
        "jumps",
        "over",
        "lazy",
        "dog",
        "while",
        "river",
        "water",
        "runs",
        "past",
        "green",
        "hills",
        "and",
        "small",
        "towns",
        "where",
        "people",
        "walk",
        "talk",
        "read",
        "write",
        "think",
        "plan",
        "build",
        "test",
        "measure",
        "learn",
        "share",
        "light",
        "sound",
        "time",
        "day",
        "night",
        "city",
        "road",
        "field",
        "tree",
        "stone",
        "cloud",
        "rain",
        "wind",
        "sun",
        "moon",
        "star",
        "ocean",
        "wave",
        "sand",
        "bird",
        "song",
        "story",
    ]
)
STRUCTURED_PROMPT_TOKENS = 6
STRUCTURED_MAX_TOKENS = 256
STRUCTURED_GUIDE = Guide("json_schema", json.dumps(ANSWER_SCHEMA))


@dataclass(frozen=True)
class PlannedRequest:
    kind: str
    """``plain`` or ``structured``."""
    path: str
    body: dict[str, Any]
    max_tokens: int


@dataclass(frozen=True)
class Piece:
    """What one server-sent event carried."""

    text: str = ""
    done: bool = False
    error: str | None = None
    tokens: int | None = None
    """Output tokens the server reported (OpenAI ``usage``), when it did."""


def draw(dist: SizeDistribution, rng: random.Random) -> int:
    if dist.spread == 0:
        return dist.mean
    return max(1, min(dist.upper, round(rng.gauss(dist.mean, dist.spread))))


SIZING_SLACK_TOKENS = 4
"""Tokens kept free below a limit: a tokenizer may merge across word boundaries or add a prefix piece."""


def prompt(tokens: int, rng: random.Random, sizing: PromptSizing | None = None, *, limit: int | None = None) -> str:
    """About ``tokens`` tokens of words (in ``sizing``'s measure), never above ``limit`` tokens."""
    sizing = sizing or PromptSizing()
    measured = len(sizing.word_tokens) == len(WORDS)
    # Clamping assumes the worst the tokenizer can do: its measured cost, else a token per byte.
    cost = sizing.word_tokens if measured else tuple(len(w) + 1 for w in WORDS)
    # A random lead word makes each prompt distinct, so prefix caching cannot flatter the figures. Its
    # cost is bounded by its bytes (hex digits).
    lead = f"{rng.randrange(1 << 30):x}"
    size = sizing.special_tokens + (len(lead) if measured else 1)
    held = sizing.special_tokens + len(lead)
    budget = None if limit is None else limit - SIZING_SLACK_TOKENS
    words = []
    while size < tokens:
        index = rng.randrange(len(WORDS))
        if budget is not None and held + cost[index] > budget:
            break
        words.append(WORDS[index])
        size += cost[index] if measured else 1
        held += cost[index]
    return " ".join([lead, *words])


def prompt_limit(sizing: PromptSizing, max_tokens: int) -> int | None:
    """The most tokens a prompt may have with ``max_tokens`` to generate (None: no limit known)."""
    limits = [sizing.max_input_tokens] if sizing.max_input_tokens is not None else []
    if sizing.max_seq_len is not None:
        limits.append(sizing.max_seq_len - max_tokens)
    return min(limits) if limits else None


def plan_request(config: LoadConfig, rng: random.Random) -> PlannedRequest:
    structured = config.structured_share > 0 and rng.random() < config.structured_share
    max_tokens = draw(config.osl, rng)
    if structured:
        # A short extraction-style question with room for a whole schema-valid answer: an answer cut
        # off at max_tokens is invalid JSON, which would blame the server for the test's sizes.
        text = "Reply in JSON: " + prompt(STRUCTURED_PROMPT_TOKENS, rng)
        max_tokens = max(max_tokens, STRUCTURED_MAX_TOKENS)
    else:
        sizing = config.prompt_sizing
        text = prompt(draw(config.isl, rng), rng, sizing, limit=prompt_limit(sizing, max_tokens))
    kind = "structured" if structured else "plain"
    body: dict[str, Any] = {
        "model": config.model,
        "messages": [{"role": "user", "content": text}],
        "max_tokens": max_tokens,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    if structured:
        body["response_format"] = {"type": "json_schema", "json_schema": {"name": "answer", "schema": ANSWER_SCHEMA}}
    return PlannedRequest(kind, OPENAI_CHAT_PATH, body, max_tokens)


def parse_event(data: bytes) -> Piece:
    """One ``data:`` payload of an OpenAI chat-completion stream."""
    data = data.strip()
    if data == b"[DONE]":
        return Piece(done=True)
    try:
        event = json.loads(data)
    except json.JSONDecodeError:
        return Piece(error=f"event is not JSON: {data[:80]!r}")
    if not isinstance(event, dict):
        return Piece(error="event is not a JSON object")
    if "error" in event:
        error = event["error"]
        return Piece(error=str(error.get("message", error) if isinstance(error, dict) else error))
    usage = event.get("usage") or {}
    choices = event.get("choices") or []
    text = ""
    if choices:
        choice = choices[0]
        text = (choice.get("delta") or {}).get("content") or choice.get("text") or ""
    return Piece(text=text, tokens=usage.get("completion_tokens"))


def structured_problem(text: str) -> str | None:
    """Why a structured answer does not validate against its schema (None: it does)."""
    return STRUCTURED_GUIDE.check(text)
