"""The routing benchmark at equal offered load (issue 29): time to first token when every mode gets the same
arrivals, and the throughput each mode sustains within the stack's TTFT SLO.

The concurrency replay (bench/routing.py ``replay``) lets a slow mode slow its own clients down, so its figures
compare modes at unequal load. Here the arrivals are fixed instead (open loop): the shared-prefix part of the trace is
sent at a Poisson rate, seeded, so every mode meets the very same instants; a later turn of a conversation is sent
at its arrival or when its previous turn was answered, whichever is later (a user reads the answer first).

Each step replays the fleet's steady state: the system prompts are those the mode's concurrency replay of the shared
part sent (its mark) and left wherever that mode placed them, and the conversations are the step's own (a session
mark on their first user message, ``routing_trace.marked``). A fleet's system prompts outlive any window one measures,
so a step that began with every cache cold would charge each mode the first prefill of every prompt inside the
step (a sixth of its requests), and its p90 would be those cold starts in every mode. Each step
of a ladder of rates, multiples of round robin's own throughput at the replay's concurrency (measured in the same
run, so a slower machine moves the ladder with it), is replayed under every mode and reports:

- time to first token (streamed: the first content delta) p50/p90/p95/p99, from the request's send;
- requests answered per second (answered over the span from the first arrival to the last answer) and errors;
- the prefix-cache hit rate (the engines' own ``cached_tokens`` in each stream's ``usage``);
- whether the stack's SLO (``serving.slo``: TTFT p50 and p95, no errors) held.

Two figures sum the ladder up per mode: the throughput at the SLO (the answered rate of the last step before the
first that missed the SLO), and the p90 at equal load (at round robin's own step at the SLO, the load an operator
would size a round-robin fleet for). A mode's ladder stops once those are known (``climbed``): at its first miss of
the SLO, and not below round robin's load at the SLO. Every step run is printed and written, never only the summary.

At the edge a request beyond the circuit breaker's parallel-request budget (dev: its client's 16 concurrent streams)
is a 503 at once, so an overloaded mode usually misses the SLO by refusing rather than by a slow first token: the
refusals are listed per step, by status.
"""

from __future__ import annotations

import asyncio
import json
import random
import statistics
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.routing_trace import marked
from inference_platform.loadgen.latency import percentile

LADDER: tuple[float, ...] = (0.5, 0.75, 0.9, 1.0, 1.1, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0)
"""Offered rates as multiples of round robin's throughput at the replay's concurrency: from half of it to four times,
finer where the modes' limits lie. Round robin holds the SLO open loop above its concurrency replay's rate (1.5x of
it on 2026-12-07), so the target's "2x round robin's throughput at the SLO" needs steps past 3x; a mode climbs only
until it misses (``climbed``), so the top steps cost only a mode that holds there."""
ARRIVAL_SEED = 2929
REQUEST_TIMEOUT = 120.0


def nearest_rank(values: Sequence[float], q: float) -> float:
    """The ``q`` quantile of ``values`` by nearest rank (NaN for none): the figure one of the values really took.
    The load generator's definition (``loadgen.latency.percentile``), so the bench and ``inferctl loadtest`` agree."""
    return percentile(values, q * 100) if values else float("nan")


def arrivals(count: int, rate: float, seed: int = ARRIVAL_SEED) -> list[float]:
    """``count`` Poisson arrival offsets in seconds at ``rate`` a second: the same for every mode at one rate.

    The gaps are drawn exponential, then scaled so their mean is exactly ``1 / rate``: a few dozen draws stray
    from their mean by tens of percent, and the step must offer the load its label says (the bursts stay)."""
    if rate <= 0:
        raise ValueError(f"rate {rate} must be positive")
    rng = random.Random(seed)
    gaps = [rng.expovariate(1.0) for _ in range(count - 1)]
    scale = (len(gaps) / rate) / sum(gaps) if gaps else 0.0
    at, offsets = 0.0, [0.0] if count else []
    for gap in gaps:
        at += gap * scale
        offsets.append(at)
    return offsets


@dataclass(frozen=True)
class Streamed:
    status: int
    ttft: float | None
    """Seconds from the send to the first content delta; None when no token came."""
    prompt_tokens: int
    cached_tokens: int


@dataclass(frozen=True)
class Slo:
    """The stack's TTFT objectives (``serving.slo``), in milliseconds."""

    ttft_p50_ms: float
    ttft_p95_ms: float


@dataclass(frozen=True)
class LoadStep:
    offered_per_s: float
    outcomes: tuple[Streamed, ...]
    span_seconds: float

    @property
    def errors(self) -> int:
        return sum(1 for o in self.outcomes if o.status != 200 or o.ttft is None)

    @property
    def answered_per_s(self) -> float:
        answered = len(self.outcomes) - self.errors
        return answered / self.span_seconds if self.span_seconds > 0 else 0.0

    @property
    def hit_rate(self) -> float:
        prompt = sum(o.prompt_tokens for o in self.outcomes)
        return sum(o.cached_tokens for o in self.outcomes) / prompt if prompt else 0.0

    def ttft_ms(self, q: float) -> float:
        return nearest_rank([o.ttft for o in self.outcomes if o.ttft is not None], q) * 1000

    @property
    def refusals(self) -> dict[str, int]:
        """The failed requests by what the client saw: an HTTP status (503 is the edge's circuit breaker or no
        replica, 429 a limit), ``transport`` (no answer), ``no token`` (a 200 stream that carried no content)."""
        kinds = Counter(
            "transport" if o.status == 0 else str(o.status) if o.status != 200 else "no token"
            for o in self.outcomes
            if o.status != 200 or o.ttft is None
        )
        return dict(sorted(kinds.items()))

    def meets(self, slo: Slo) -> bool:
        return self.errors == 0 and self.ttft_ms(0.5) <= slo.ttft_p50_ms and self.ttft_ms(0.95) <= slo.ttft_p95_ms

    def summary(self, slo: Slo) -> dict[str, Any]:
        def ms(q: float) -> float | None:
            value = self.ttft_ms(q)
            return None if value != value else value  # NaN: nothing answered

        return {
            "offered_per_s": self.offered_per_s,
            "answered_per_s": self.answered_per_s,
            "errors": self.errors,
            "refusals": self.refusals,
            "hit_rate": self.hit_rate,
            "ttft_p50_ms": ms(0.5),
            "ttft_p90_ms": ms(0.9),
            "ttft_p95_ms": ms(0.95),
            "ttft_p99_ms": ms(0.99),
            "meets_slo": self.meets(slo),
        }


def _stream_body(model: str, messages: list[dict[str, str]], max_tokens: int) -> dict[str, Any]:
    return {
        "model": model,
        "messages": messages,
        "max_tokens": max_tokens,
        "stream": True,
        "stream_options": {"include_usage": True},
    }


async def _send(client: Any, url: str, key: str, body: dict[str, Any]) -> Streamed:
    """One streamed request: TTFT at the first content delta, the prompt and cached tokens from the last ``usage``."""
    import httpx

    began = time.perf_counter()
    ttft, usage = None, None
    try:
        async with client.stream(
            "POST", f"{url}/v1/chat/completions", json=body, headers={"Authorization": f"Bearer {key}"}
        ) as response:
            if response.status_code != 200:
                await response.aread()
                return Streamed(response.status_code, None, 0, 0)
            async for line in response.aiter_lines():
                if not line.startswith("data: ") or line == "data: [DONE]":
                    continue
                event = json.loads(line[len("data: ") :])
                if event.get("usage"):
                    usage = event["usage"]
                if ttft is None and any((c.get("delta") or {}).get("content") for c in event.get("choices") or ()):
                    ttft = time.perf_counter() - began
    except (httpx.HTTPError, json.JSONDecodeError):
        return Streamed(0, None, 0, 0)
    usage = usage or {}
    cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0
    return Streamed(200, ttft, int(usage.get("prompt_tokens", 0)), int(cached))


async def _replay(
    url: str, *, ca: Path, bodies: Sequence[tuple[str, str, dict[str, Any]]], offsets: Sequence[float]
) -> tuple[list[Streamed], float]:
    import httpx

    answered: dict[str, asyncio.Event] = {}
    limits = httpx.Limits(max_connections=len(bodies), max_keepalive_connections=len(bodies))
    async with httpx.AsyncClient(verify=str(ca), timeout=REQUEST_TIMEOUT, limits=limits) as client:
        start = time.perf_counter()

        async def one(i: int) -> tuple[Streamed, float]:
            key, conversation, body = bodies[i]
            previous = answered.get(conversation)
            done = answered[conversation] = asyncio.Event()
            await asyncio.sleep(max(0.0, start + offsets[i] - time.perf_counter()))
            if previous is not None:
                await previous.wait()
            try:
                return await _send(client, url, key, body), time.perf_counter()
            finally:
                done.set()

        # Created in trace order, so each conversation's events chain turn after turn before any task runs.
        results = await asyncio.gather(*(one(i) for i in range(len(bodies))))
    return [r for r, _ in results], max(end for _, end in results) - start


def replay_at_rate(
    url: str,
    *,
    ca: Path,
    keys: Sequence[str],
    model: str,
    requests: Sequence[Any],
    mark: str,
    rate: float,
    session: str | None = None,
) -> LoadStep:
    """Send ``requests`` (trace order) at Poisson arrivals of ``rate`` a second through the edge at ``url``, marked
    with ``mark`` and ``session`` (``routing_trace.marked``)."""
    by_client = sorted({r.client for r in requests})
    bodies = [
        (
            keys[by_client.index(r.client) % len(keys)],
            r.conversation,
            _stream_body(model, marked(r, mark, session=session), r.max_tokens),
        )
        for r in requests
    ]
    # A loop of its own, never installed as the thread's: asyncio.run() would leave the caller's thread without one.
    loop = asyncio.new_event_loop()
    try:
        outcomes, span = loop.run_until_complete(
            _replay(url, ca=ca, bodies=bodies, offsets=arrivals(len(bodies), rate))
        )
    finally:
        loop.close()
    return LoadStep(rate, tuple(outcomes), span)


def at_slo(steps: Sequence[LoadStep], slo: Slo) -> LoadStep | None:
    """The last step, climbing the ladder, before the first at which the SLO failed (None when the lowest failed): a
    step that happens to hold above a failed one is noise, not capacity."""
    held = None
    for step in sorted(steps, key=lambda s: s.offered_per_s):
        if not step.meets(slo):
            break
        held = step
    return held


def climbed(steps: Sequence[LoadStep], slo: Slo, *, until_per_s: float | None = None) -> bool:
    """Whether a mode's ladder has told what the two figures need (``verdict``): a step missed the SLO (the
    throughput at the SLO is the step before the first miss; higher steps never count) and the ladder reached
    ``until_per_s``, the baseline's load at the SLO (for the p90 there). Climbing past that only overloads the
    replicas for minutes more."""
    missed = any(not step.meets(slo) for step in steps)
    return missed and (until_per_s is None or any(step.offered_per_s >= until_per_s for step in steps))


def median_figures(placements: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """One mode's ``verdict`` figures over several placements of its prefixes: the median of each (of those known).
    Where Maglev puts a few prefixes per replica is a draw (bench/routing.py ``--placements``); one draw is not the
    mode."""

    def median(key: str) -> float | None:
        known = [p[key] for p in placements if p.get(key) is not None]
        return statistics.median(known) if known else None

    return {
        "throughput_at_slo_per_s": median("throughput_at_slo_per_s") or 0.0,
        "offered_at_slo_per_s": median("offered_at_slo_per_s"),
        "ttft_p90_ms_at_equal_load": median("ttft_p90_ms_at_equal_load"),
    }


def verdict(steps: Mapping[str, Sequence[LoadStep]], slo: Slo, *, baseline: str = "round-robin") -> dict[str, Any]:
    """Each mode's throughput at the SLO, and every mode's p90 at the load where ``baseline`` last held the SLO."""
    base_step = at_slo(steps[baseline], slo)
    modes: dict[str, Any] = {}
    for mode, ladder in steps.items():
        best = at_slo(ladder, slo)
        equal = next((s for s in ladder if base_step and s.offered_per_s == base_step.offered_per_s), None)
        modes[mode] = {
            "throughput_at_slo_per_s": best.answered_per_s if best else 0.0,
            "offered_at_slo_per_s": best.offered_per_s if best else None,
            "ttft_p90_ms_at_equal_load": equal.ttft_ms(0.9) if equal else None,
        }
    return {"equal_load_per_s": base_step.offered_per_s if base_step else None, "modes": modes}


def row(mode: str, step: LoadStep, slo: Slo) -> str:
    return (
        f"{mode:<15}{step.offered_per_s:>8.2f}{step.answered_per_s:>9.2f}{step.hit_rate:>7.1%}"
        f"{step.ttft_ms(0.5):>9.0f}{step.ttft_ms(0.9):>9.0f}{step.ttft_ms(0.95):>9.0f}{step.ttft_ms(0.99):>9.0f}"
        f"{step.errors:>7}  {'yes' if step.meets(slo) else 'no':<4}"
        + " ".join(f"{kind} x{n}" for kind, n in step.refusals.items())
    )


HEADER = (
    f"{'mode':<15}{'offered':>8}{'answered':>9}{'hit':>7}{'p50 ms':>9}{'p90 ms':>9}{'p95 ms':>9}{'p99 ms':>9}"
    f"{'errors':>7}  SLO refused"
)
