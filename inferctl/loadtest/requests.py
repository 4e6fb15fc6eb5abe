"""The requests a load test sends: prompt sizes drawn from a distribution, Triton or OpenAI bodies,
structured-output requests mixed in, and the server-sent events that come back.

Pure functions of a ``random.Random`` so that a seed reproduces a run's request mix. Prompts are
common English words: with Llama 3's tokenizer each is about one token (the CPU stand-in's tokenizer
counts characters, so locally a prompt is longer in tokens than asked).
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from typing import Any

from inferctl.loadtest.config import LoadConfig, SizeDistribution
from inferctl.serving.structured import ANSWER_SCHEMA, Guide

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


def prompt(tokens: int, rng: random.Random) -> str:
    # A random lead word makes each prompt distinct, so prefix caching cannot flatter the figures.
    return f"{rng.randrange(1 << 30):x} " + " ".join(rng.choice(WORDS) for _ in range(max(0, tokens - 1)))


def plan_request(config: LoadConfig, rng: random.Random) -> PlannedRequest:
    structured = config.structured_share > 0 and rng.random() < config.structured_share
    max_tokens = draw(config.osl, rng)
    if structured:
        # A short extraction-style question with room for a whole schema-valid answer: an answer cut
        # off at max_tokens is invalid JSON, which would blame the server for the test's sizes.
        text = "Reply in JSON: " + prompt(STRUCTURED_PROMPT_TOKENS, rng)
        max_tokens = max(max_tokens, STRUCTURED_MAX_TOKENS)
    else:
        text = prompt(draw(config.isl, rng), rng)
    kind = "structured" if structured else "plain"
    if config.protocol == "openai":
        body: dict[str, Any] = {
            "model": config.model,
            "messages": [{"role": "user", "content": text}],
            "max_tokens": max_tokens,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if structured:
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "answer", "schema": ANSWER_SCHEMA},
            }
        return PlannedRequest(kind, "/v1/chat/completions", body, max_tokens)
    body = {"text_input": text, "max_tokens": max_tokens, "stream": True}
    if structured:
        body["guided_decoding_guide_type"] = STRUCTURED_GUIDE.guide_type
        body["guided_decoding_guide"] = STRUCTURED_GUIDE.guide
    return PlannedRequest(kind, f"/v2/models/{config.model}/generate_stream", body, max_tokens)


def parse_event(protocol: str, data: bytes) -> Piece:
    """One ``data:`` payload of a stream (Triton generate_stream or OpenAI chat completions)."""
    data = data.strip()
    if protocol == "openai" and data == b"[DONE]":
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
    if protocol == "openai":
        usage = event.get("usage") or {}
        choices = event.get("choices") or []
        text = ""
        if choices:
            choice = choices[0]
            text = (choice.get("delta") or {}).get("content") or choice.get("text") or ""
        return Piece(text=text, tokens=usage.get("completion_tokens"))
    return Piece(text=str(event.get("text_output", "")))


def structured_problem(text: str) -> str | None:
    """Why a structured answer does not validate against its schema (None: it does)."""
    return STRUCTURED_GUIDE.check(text)
