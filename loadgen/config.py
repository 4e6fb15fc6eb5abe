"""What one load test does: endpoint, load shape, request sizes, and the bounds that make it stop.

A :class:`LoadConfig` travels as JSON from ``inferctl`` to the Locust master and workers (a file
locally, a ConfigMap in the cluster); the API key never does (it goes through the environment,
``API_KEY_ENV``). ``problems()`` gathers every bad value at once, each naming its command-line flag.
"""

from __future__ import annotations

import json
import math
import urllib.parse
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

API_KEY_ENV = "INFERCTL_API_KEY"
CONFIG_ENV = "INFERCTL_LOADTEST_CONFIG"
RECORDS_ENV = "INFERCTL_LOADTEST_RECORDS"
WORKER_INDEX_ENV = "INFERCTL_LOADTEST_WORKER_INDEX"
PROTOCOLS = ("openai",)
# The old protocol's name, refused naming what replaced it (issue 20: the public edge serves the OpenAI API only,
# and the LLM-API model behind the server takes none of the ensemble's generate inputs).
RETIRED_PROTOCOLS = {"triton": "the OpenAI API (openai): /v1/chat/completions"}
SHAPES = ("concurrency", "rate", "ramp")
DEFAULT_MODEL = ""
DEFAULT_API_KEY_HEADER = "authorization"
DEFAULT_TIMEOUT_S = 60.0
DEFAULT_STEP_SECONDS = 10.0
# Poisson arrivals are open-loop; beyond this many requests in flight per arrival stream the server is
# saturated and further arrivals are recorded as errors instead of piling up without bound.
DEFAULT_MAX_IN_FLIGHT = 256

Protocol = Literal["openai"]
ShapeKind = Literal["concurrency", "rate", "ramp"]


@dataclass(frozen=True, kw_only=True)
class SizeDistribution:
    """Token counts drawn from a normal distribution, clipped to [1, mean + 3 x spread]."""

    mean: int
    """Required. Mean tokens (>= 1)."""
    spread: int = 0
    """Default 0 (every request the same size). Standard deviation in tokens (>= 0)."""

    @property
    def upper(self) -> int:
        return self.mean + 3 * self.spread


@dataclass(frozen=True, kw_only=True)
class PromptSizing:
    """How many tokens a prompt costs in the served model's tokenizer, and the server's limits.

    The server refuses a prompt above ``serving.maxInputLen`` tokens (and prompt + max_tokens above
    ``maxSeqLen``), counted by its own tokenizer: a prompt sized in words would be refused wherever a
    word is several tokens (the CPU stand-in's byte-level tokenizer: one token per byte)."""

    word_tokens: tuple[int, ...] = ()
    """Default empty (not measured). Tokens of each of ``requests.WORDS``, with its leading space, as
    the served model's preprocessing counts them. Empty: sized at one token per word (Llama 3) and
    clamped as if every byte were a token (never more with a byte-level BPE tokenizer)."""
    special_tokens: int = 0
    """Default 0. Tokens the server's tokenizer adds to every prompt (BOS)."""
    max_input_tokens: int | None = None
    """Default None (no limit). ``serving.maxInputLen``."""
    max_seq_len: int | None = None
    """Default None (no limit). ``serving.maxSeqLen``: prompt + max_tokens stay within it."""
    source: str = "assumed"
    """Default ``assumed``. Where ``word_tokens`` came from (e.g. ``preprocessing``), for the report."""


@dataclass(frozen=True, kw_only=True)
class Shape:
    """How load is offered. ``concurrency``: that many requests always in flight (closed loop).
    ``rate``: Poisson arrivals at ``rate`` requests/s in total (open loop, at most ``concurrency`` in
    flight). ``ramp``: closed loop at each of ``steps`` concurrencies for ``step_seconds`` each."""

    kind: ShapeKind
    concurrency: int = 1
    """Default 1. Users (closed loop) or the in-flight cap (rate). Must be >= 1."""
    rate: float | None = None
    """Required for ``rate``: total requests/s over all workers (> 0)."""
    steps: tuple[int, ...] = ()
    """Required for ``ramp``: increasing concurrencies."""
    step_seconds: float = DEFAULT_STEP_SECONDS
    """Default 10. Seconds per ramp step."""

    def levels(self) -> tuple[float, ...]:
        """The offered loads, in order (concurrency, or requests/s for ``rate``)."""
        if self.kind == "ramp":
            return tuple(float(s) for s in self.steps)
        if self.kind == "rate":
            return (float(self.rate or 0),)
        return (float(self.concurrency),)


@dataclass(frozen=True, kw_only=True)
class LoadConfig:
    url: str
    """Base URL, ``http(s)://host[:port][/prefix]``."""
    protocol: Protocol = "openai"
    """Default and only value ``openai``: streamed ``/v1/chat/completions``."""
    model: str = DEFAULT_MODEL
    """The OpenAI ``model`` field; ``loadtest`` and ``verify`` fill it from ``GET /v1/models`` when not given
    (``served_model.served_models``)."""
    api_key_header: str = DEFAULT_API_KEY_HEADER
    """Default ``authorization`` (sent as ``Bearer <key>``). Header carrying the key (read from API_KEY_ENV;
    never in this file)."""
    ca_file: str | None = None
    """Default: the system trust store. PEM bundle that signs the endpoint's certificate."""
    shape: Shape
    isl: SizeDistribution = field(default_factory=lambda: SizeDistribution(mean=128, spread=32))
    """Default mean 128, spread 32. Prompt length in tokens."""
    osl: SizeDistribution = field(default_factory=lambda: SizeDistribution(mean=64, spread=16))
    """Default mean 64, spread 16. Output length in tokens (max_tokens of each request)."""
    structured_share: float = 0.0
    """Default 0. Share of requests (0-1) asking for JSON that must validate against a schema."""
    max_requests: int
    """Required. The run stops after this many requests (all workers together)."""
    duration_s: float
    """Required. The run stops after this many seconds, whatever remains of max_requests."""
    timeout_s: float = DEFAULT_TIMEOUT_S
    """Default 60. Seconds before a request counts as failed (connect and each read)."""
    workers: int = 0
    """Default 0 (one process, no master). Locust worker processes."""
    seed: int = 0
    """Default 0. Seed of the size and arrival draws (each worker offsets it by its index)."""
    prompt_sizing: PromptSizing = field(default_factory=PromptSizing)
    """Default: not measured, no limits. Prompt token costs and the server's limits (``PromptSizing``)."""

    def problems(self, *, max_duration_s: float | None = None, require_tls: bool = False) -> list[str]:
        """Every bad value, as ``--flag: got X; expected Y`` lines (empty: all good)."""
        out: list[str] = []
        parsed = urllib.parse.urlsplit(self.url)
        if parsed.scheme not in ("http", "https") or not parsed.hostname:
            out.append(f"--url: got {self.url!r}; expected http(s)://host[:port]")
        elif require_tls and parsed.scheme != "https":
            out.append(f"--url: got {self.url!r}; a production stack is verified through TLS: use https://")
        if self.protocol in RETIRED_PROTOCOLS:
            out.append(f"--protocol: got {self.protocol!r}, which is retired; use {RETIRED_PROTOCOLS[self.protocol]}")
        elif self.protocol not in PROTOCOLS:
            out.append(f"--protocol: got {self.protocol!r}; expected one of {', '.join(PROTOCOLS)}")
        shape = self.shape
        if shape.kind not in SHAPES:
            out.append(f"--shape: got {shape.kind!r}; expected one of {', '.join(SHAPES)}")
        if shape.concurrency <= 0:
            out.append(f"--concurrency: got {shape.concurrency}; expected > 0")
        if shape.kind == "rate" and (shape.rate is None or not shape.rate > 0 or not math.isfinite(shape.rate)):
            out.append(f"--rate: got {shape.rate}; expected > 0 requests/s")
        if shape.kind == "ramp":
            steps = shape.steps
            if not steps or any(s <= 0 for s in steps) or list(steps) != sorted(set(steps)):
                out.append(
                    f"--steps: got {','.join(map(str, steps)) or 'nothing'}; expected increasing concurrencies > 0"
                )
            if not shape.step_seconds > 0:
                out.append(f"--step-seconds: got {shape.step_seconds}; expected > 0")
        for flag, dist in (("--isl", self.isl), ("--osl", self.osl)):
            if dist.mean < 1 or dist.spread < 0:
                out.append(f"{flag}: got mean {dist.mean}, spread {dist.spread}; expected mean >= 1, spread >= 0")
        if not 0 <= self.structured_share <= 1:
            out.append(f"--structured-share: got {self.structured_share}; expected 0-1")
        if self.max_requests <= 0:
            out.append(f"--max-requests: got {self.max_requests}; expected > 0")
        if not self.duration_s > 0:
            out.append(f"--duration: got {self.duration_s}; expected > 0 seconds")
        elif max_duration_s is not None and self.duration_s > max_duration_s:
            out.append(
                f"--duration: got {self.duration_s:g} s; the ceiling is {max_duration_s:g} s "
                "(verification.maxDurationSeconds)"
            )
        if not self.timeout_s > 0:
            out.append(f"--timeout: got {self.timeout_s}; expected > 0 seconds")
        if self.workers < 0:
            out.append(f"--workers: got {self.workers}; expected >= 0")
        if self.ca_file is not None and not Path(self.ca_file).is_file():
            out.append(f"--ca-file: {self.ca_file} is not a file")
        return out

    @property
    def streams(self) -> int:
        """Locust users: one per concurrent request (closed loop), one arrival stream per process (rate)."""
        if self.shape.kind == "rate":
            return max(1, self.workers)
        if self.shape.kind == "ramp":
            return self.shape.steps[-1]
        return self.shape.concurrency

    def request_budget(self, worker_index: int) -> int:
        """This worker's share of max_requests (shares differ by at most one and sum to max_requests)."""
        processes = max(1, self.workers)
        base, extra = divmod(self.max_requests, processes)
        return base + (1 if worker_index < extra else 0)

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2)

    @classmethod
    def from_json(cls, text: str) -> LoadConfig:
        data: dict[str, Any] = json.loads(text)
        shape = data.pop("shape")
        shape["steps"] = tuple(shape.get("steps", ()))
        sizing = data.pop("prompt_sizing", {})
        sizing["word_tokens"] = tuple(sizing.get("word_tokens", ()))
        return cls(
            shape=Shape(**shape),
            isl=SizeDistribution(**data.pop("isl")),
            osl=SizeDistribution(**data.pop("osl")),
            prompt_sizing=PromptSizing(**sizing),
            **data,
        )
