"""The routing trace (issue 29): what the request scheduler is judged on, generated here and recorded as a file.

Three parts, each a list of chat requests in arrival order (``python -m bench.routing_trace`` rewrites the file):

- ``shared``: 24 system prompts of 2,000 tokens shared across 24 tenants (clients; each prompt by two tenants),
  each tenant running two multi-turn conversations that resend their whole history (the prompt grows by one user
  and one assistant message a turn);
  the assistant messages are recorded text, so a replay sends the same bytes whatever the model answers;
- ``hot``: every request starts with the same system prompt (one hot prefix), for the load bound;
- ``control``: single-turn prompts with no shared prefix at all (prefix affinity can gain nothing there).

Deterministic: one seeded generator; sizes in characters (the stand-in's tokenizer is byte-level, so a character
of this ASCII text is about one token: far below any stack's ``serving.maxInputLen``).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

TRACE_FILE = Path(__file__).resolve().parent / "data" / "routing_trace.json"
SEED = 29
_WORDS = [
    "policy",
    "customer",
    "account",
    "invoice",
    "refund",
    "shipping",
    "warranty",
    "region",
    "cluster",
    "latency",
    "token",
    "cache",
    "replica",
    "request",
    "prefix",
    "answer",
    "context",
    "summary",
    "report",
    "schedule",
    "budget",
    "contract",
    "support",
    "ticket",
    "escalation",
    "model",
    "tenant",
]


@dataclass(frozen=True)
class TraceRequest:
    kind: str
    """``shared``, ``hot`` or ``control``."""
    client: str
    conversation: str
    messages: list[dict[str, str]]
    max_tokens: int


@dataclass(frozen=True, kw_only=True)
class TraceShape:
    system_prompts: int = 24
    system_chars: int = 2000
    tenants: int = 24
    conversations_per_tenant: int = 2
    turns: int = 3
    turn_chars: int = 300
    hot_requests: int = 24
    control_requests: int = 18
    max_tokens: int = 4


def _text(rng: random.Random, chars: int, tag: str) -> str:
    words: list[str] = [tag]
    while sum(len(w) + 1 for w in words) < chars:
        words.append(rng.choice(_WORDS))
    return " ".join(words)[:chars]


def generate(shape: TraceShape = TraceShape(), seed: int = SEED) -> dict[str, list[TraceRequest]]:
    rng = random.Random(seed)
    systems = [_text(rng, shape.system_chars, f"[system {i}]") for i in range(shape.system_prompts)]
    shared: list[TraceRequest] = []
    conversations = []
    for t in range(shape.tenants):
        for c in range(shape.conversations_per_tenant):
            system = systems[(t + c) % len(systems)]
            conversations.append((f"tenant-{t}", f"t{t}c{c}", system))
    # Turns interleave across conversations (turn 1 of every conversation, then turn 2 ...), as live traffic does.
    histories: dict[str, list[dict[str, str]]] = {}
    for turn in range(shape.turns):
        order = list(conversations)
        rng.shuffle(order)
        for client, conversation, system in order:
            history = histories.setdefault(conversation, [{"role": "system", "content": system}])
            history.append({"role": "user", "content": _text(rng, shape.turn_chars, f"[{conversation} q{turn}]")})
            shared.append(TraceRequest("shared", client, conversation, [dict(m) for m in history], shape.max_tokens))
            history.append({"role": "assistant", "content": _text(rng, shape.turn_chars, f"[{conversation} a{turn}]")})
    hot_system = _text(rng, shape.system_chars, "[hot system]")
    hot = [
        TraceRequest(
            "hot",
            f"tenant-{i % shape.tenants}",
            f"hot{i}",
            [
                {"role": "system", "content": hot_system},
                {"role": "user", "content": _text(rng, shape.turn_chars, f"[hot q{i}]")},
            ],
            shape.max_tokens,
        )
        for i in range(shape.hot_requests)
    ]
    control = [
        TraceRequest(
            "control",
            f"tenant-{i % shape.tenants}",
            f"control{i}",
            [{"role": "user", "content": _text(rng, shape.system_chars, f"[control {i} {rng.random():.12f}]")}],
            shape.max_tokens,
        )
        for i in range(shape.control_requests)
    ]
    return {"shared": shared, "hot": hot, "control": control}


def load(path: Path = TRACE_FILE) -> dict[str, list[TraceRequest]]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return {kind: [TraceRequest(**r) for r in requests] for kind, requests in data["parts"].items()}


def dump(trace: dict[str, list[TraceRequest]], path: Path = TRACE_FILE, seed: int = SEED) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    parts = {kind: [asdict(r) for r in requests] for kind, requests in trace.items()}
    document = {"generator": "bench/routing_trace.py", "seed": seed, "parts": parts}
    path.write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")


def distinct_prefix_chars(requests: list[TraceRequest]) -> int:
    """The characters a cache must hold to serve every prefix ``requests`` share, at message granularity: each
    distinct message-by-message prefix (a system prompt, a conversation's history up to a turn) counted once, as a
    radix tree over the messages would hold them. Characters are about tokens for the stand-in's byte-level
    tokenizer (module docstring); the chat template's few role tokens per message are left out."""
    seen: set[tuple[tuple[str, str], ...]] = set()
    total = 0
    for request in requests:
        prefix: tuple[tuple[str, str], ...] = ()
        for message in request.messages:
            prefix = (*prefix, (message["role"], message["content"]))
            if prefix not in seen:
                seen.add(prefix)
                total += len(message["content"])
    return total


def marked(request: TraceRequest, mark: str, *, session: str | None = None) -> list[dict[str, str]]:
    """The request's messages with ``mark`` at the very start (a mode's replay shares no prefix with another's) and,
    when given, ``session`` at the start of the first message after the system prompt: replays with one ``mark`` and
    different sessions share their system prompts and none of their conversations (a fleet's steady state, where
    system prompts outlive any one conversation). The session sits far past the affinity window (``prefixTokens``),
    so it never moves a request to another replica."""
    messages = [dict(m) for m in request.messages]
    if session is not None:
        first = 1 if messages[0]["role"] == "system" and len(messages) > 1 else 0
        messages[first]["content"] = f"[{session}] {messages[first]['content']}"
    messages[0]["content"] = f"[{mark}] {messages[0]['content']}"
    return messages


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.routing_trace", description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=TRACE_FILE)
    args = parser.parse_args(argv)
    dump(generate(), args.out)
    print(f"routing trace written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
