"""The canary gate: measure a canary beside its model's current version and decide, within the bounds the stack's
``models.canary`` gives, to promote it one step, hold it, or roll it back to 0 %, and say why.

Two witnesses:

- the verification's own synthetic load through the public edge, the same streamed requests to each version side
  by side: ``<testerHeader>: always`` reaches the canary, ``<testerHeader>: current`` the current version, whatever
  the weight (components/edge/model_routing.py);
- real traffic, from Prometheus (canary_live.py): each version's TTFT p95, ITL p50/p95 and error ratio over
  ``models.canary.gate.liveWindowSeconds``, judged once each version answered ``liveMinRequests``. At weight 0 no
  real request reaches the canary, so the first step rests on the synthetic load; above 0, a canary is promoted
  further only on live evidence (too little, or no answer from Prometheus, is a hold).

The decision never leaves the bounds: a promotion goes to the next of ``steps`` (never further), a rollback to 0,
a hold keeps the weight. Pure :func:`decide` is what the tests and the Job share.
"""

from __future__ import annotations

import json
import math
import shlex
import ssl
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from inference_platform.inferctl.verify.canary_live import Live, VersionScope, measure_live
from inference_platform.settings.models import MAX_REASON_CHARS

Action = Literal["promote", "hold", "rollback", "complete"]


@dataclass(frozen=True)
class Sample:
    """What one version answered: requests sent, failures (no answer, a non-200, a stream without a token), and
    the 95th-percentile time to first token of the answered ones."""

    requests: int
    errors: int
    ttft_p95_ms: float

    @property
    def error_rate(self) -> float:
        return self.errors / self.requests if self.requests else 0.0


@dataclass(frozen=True)
class Limits:
    """The bounds the gate decides within (``models.canary`` and the stack's SLOs)."""

    weight: int
    steps: Sequence[int]
    ttft_p95_ms: float
    """serving.slo.ttftP95Ms."""
    max_error_rate: float
    """models.canary.gate.maxErrorRate, else verification.slo.maxErrorRate."""
    max_ttft_ratio: float
    min_requests: int
    rollback: bool = True
    itl_p50_ms: float | None = None
    """serving.slo.itlP50Ms (live only: the synthetic load measures first tokens)."""
    max_itl_ratio: float = 1.25
    live_window_s: int = 600
    live_min_requests: int = 100


@dataclass(frozen=True)
class Decision:
    action: Action
    weight: int
    """The canary's weight after the decision."""
    reason: str

    def as_output(self) -> dict[str, object]:
        return {"action": self.action, "weight": self.weight, "reason": self.reason}


def decide(canary: Sample, current: Sample, limits: Limits, live: Live | None = None) -> Decision:
    """Promote one step, hold, roll back (to 0) or, at the last step, complete; every failed limit is in the
    reason. Too few answers is a hold: never a promotion on too little evidence. ``live`` None: Prometheus is
    not configured (the reason says so)."""
    failures = _failures("synthetic", canary, current, limits)
    live_hold, live_summary = None, "live not measured (no verification.prometheusUrl)"
    if live is not None:
        found, live_hold, live_summary = _live(live, limits)
        failures += found
    if failures:
        if limits.rollback:
            return Decision("rollback", 0, "; ".join(failures))
        return Decision("hold", limits.weight, "; ".join(failures) + " (models.canary.gate.rollback is false)")
    if canary.requests < limits.min_requests:
        return Decision(
            "hold",
            limits.weight,
            f"only {canary.requests} canary requests answered; the gate needs {limits.min_requests} "
            "(models.canary.gate.minRequests)",
        )
    if live_hold is not None:
        return Decision("hold", limits.weight, live_hold)
    following = [s for s in limits.steps if s > limits.weight]
    summary = (
        f"canary TTFT p95 {canary.ttft_p95_ms:.0f} ms (current {current.ttft_p95_ms:.0f} ms, SLO "
        f"{limits.ttft_p95_ms:.0f} ms), errors {canary.error_rate:.2%} of {canary.requests}; {live_summary}"
    )
    if not following:
        return Decision("complete", limits.weight, f"{summary}: at the last step; make it the current version")
    return Decision("promote", following[0], f"{summary}: within every limit")


def _failures(kind: str, canary: Sample, current: Sample | None, limits: Limits) -> list[str]:
    out = []
    if canary.error_rate > limits.max_error_rate:
        out.append(
            f"{kind}: canary errors {canary.errors}/{canary.requests} ({canary.error_rate:.2%}) above the error "
            f"budget {limits.max_error_rate:.2%}"
        )
    if canary.requests > canary.errors and canary.ttft_p95_ms > limits.ttft_p95_ms:
        out.append(f"{kind}: canary TTFT p95 {canary.ttft_p95_ms:.0f} ms above the SLO {limits.ttft_p95_ms:.0f} ms")
    if current is not None and current.requests > current.errors and canary.requests > canary.errors:
        bound = current.ttft_p95_ms * limits.max_ttft_ratio
        if canary.ttft_p95_ms > bound:
            out.append(
                f"{kind}: canary TTFT p95 {canary.ttft_p95_ms:.0f} ms above {limits.max_ttft_ratio:g} x the current "
                f"version's {current.ttft_p95_ms:.0f} ms"
            )
    return out


def write_back(decision: Decision, stack: str, project: str = "inference-platform") -> list[str]:
    """The commands that record a decision in the stack's settings (the state lives there: the next ``pulumi up``
    applies the weight, and the ``models`` output shows the decision and why)."""
    key = f"{project}:models.canary"
    base = f"pulumi config set --stack {shlex.quote(stack)} --path"
    return [
        f"{base} '{key}.weight' {decision.weight}",
        f"{base} '{key}.lastDecision.action' {decision.action}",
        f"{base} '{key}.lastDecision.reason' {shlex.quote(decision.reason[:MAX_REASON_CHARS])}",
    ]


def _live(live: Live, limits: Limits) -> tuple[list[str], str | None, str]:
    """(failures, why to hold instead of promoting or None, a summary) from real traffic. Below the sample
    minimum nothing is judged; that holds a canary already taking traffic, never one at 0 % (no real request
    reaches it until its first step)."""
    taking_traffic = limits.weight > 0
    if not live.measured:
        hold = f"live metrics unavailable: {live.note}" if taking_traffic else None
        return [], hold, f"live not measured ({live.note})"
    canary, current = live.canary, live.current
    assert canary is not None and current is not None
    window = f"{live.window_s} s"
    if canary.requests < limits.live_min_requests:
        why = (
            f"only {canary.requests:.0f} live canary requests in {window}; the gate needs "
            f"{limits.live_min_requests} (models.canary.gate.liveMinRequests)"
        )
        return [], why if taking_traffic else None, why
    out = []
    if canary.error_rate > limits.max_error_rate:
        out.append(
            f"live: canary errors {canary.errors:.0f}/{canary.requests:.0f} ({canary.error_rate:.2%}) in {window} "
            f"above the error budget {limits.max_error_rate:.2%}"
        )
    if canary.ttft_p95_ms is not None and canary.ttft_p95_ms > limits.ttft_p95_ms:
        out.append(f"live: canary TTFT p95 {canary.ttft_p95_ms:.0f} ms above the SLO {limits.ttft_p95_ms:.0f} ms")
    if limits.itl_p50_ms is not None and canary.itl_p50_ms is not None and canary.itl_p50_ms > limits.itl_p50_ms:
        out.append(f"live: canary ITL p50 {canary.itl_p50_ms:.1f} ms above the SLO {limits.itl_p50_ms:.0f} ms")
    compared = current.requests >= limits.live_min_requests
    if compared:
        for what, mine, theirs, ratio in (
            ("TTFT p95", canary.ttft_p95_ms, current.ttft_p95_ms, limits.max_ttft_ratio),
            ("ITL p95", canary.itl_p95_ms, current.itl_p95_ms, limits.max_itl_ratio),
        ):
            if mine is not None and theirs is not None and mine > theirs * ratio:
                out.append(f"live: canary {what} {mine:.1f} ms above {ratio:g} x the current version's {theirs:.1f} ms")
    summary = (
        f"live {window}: canary TTFT p95 {_ms(canary.ttft_p95_ms)}, ITL p95 {_ms(canary.itl_p95_ms)}, errors "
        f"{canary.error_rate:.2%} of {canary.requests:.0f} (current TTFT p95 {_ms(current.ttft_p95_ms)}, ITL p95 "
        f"{_ms(current.itl_p95_ms)}, {current.requests:.0f} requests"
        + ("" if compared else f"; too few to compare, under {limits.live_min_requests}")
        + ")"
    )
    return out, None, summary


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f} ms"


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (0 for none)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


def measure_side_by_side(
    url: str,
    model: str,
    headers: Mapping[str, str],
    tester_header: str,
    requests: int,
    *,
    context: ssl.SSLContext | None = None,
) -> tuple[Sample, Sample]:
    """(canary, current): ``requests`` each, alternating one by one, so both versions meet the same load on the
    edge and the measuring machine (what the TTFT ratio compares)."""
    canary, current = [], []
    for _ in range(requests):
        canary.append(measure(url, model, {**headers, tester_header: "always"}, 1, context=context))
        current.append(measure(url, model, {**headers, tester_header: "current"}, 1, context=context))
    return _merged(canary), _merged(current)


def _merged(samples: Sequence[Sample]) -> Sample:
    ttfts = [s.ttft_p95_ms for s in samples if s.errors == 0]
    return Sample(
        requests=sum(s.requests for s in samples),
        errors=sum(s.errors for s in samples),
        ttft_p95_ms=percentile(ttfts, 0.95),
    )


def measure(
    url: str,
    model: str,
    headers: Mapping[str, str],
    requests: int,
    *,
    context: ssl.SSLContext | None = None,
    timeout_s: float = 60,
    max_tokens: int = 8,
) -> Sample:
    """``requests`` streamed chat completions to ``url`` (the edge), one after the other: each one's time to its
    first content token; a refusal, a broken stream or no token is an error."""
    ttfts: list[float] = []
    errors = 0
    body = json.dumps(
        {"model": model, "messages": [{"role": "user", "content": "canary"}], "max_tokens": max_tokens, "stream": True}
    ).encode()
    for _ in range(requests):
        request = urllib.request.Request(
            f"{url}/v1/chat/completions",
            data=body,
            method="POST",
            headers={"content-type": "application/json", **headers},
        )
        start = time.perf_counter()
        try:
            with urllib.request.urlopen(request, timeout=timeout_s, context=context) as response:
                first = None
                for line in response:
                    if first is None and _has_token(line):
                        first = time.perf_counter() - start
                if first is None:
                    errors += 1
                else:
                    ttfts.append(first * 1000)
        except (urllib.error.URLError, OSError, ValueError):
            errors += 1
    return Sample(requests=requests, errors=errors, ttft_p95_ms=percentile(ttfts, 0.95))


def _has_token(line: bytes) -> bool:
    """Whether an SSE line carries generated text. The OpenAI server's first chat chunk is the role with an empty
    ``content`` (as OpenAI's), sent before the engine answers: timing it would measure the server, not the model."""
    if not line.startswith(b"data: {"):
        return False
    try:
        chunk = json.loads(line[6:])
    except ValueError:
        return False
    for choice in chunk.get("choices") or ():
        delta = choice.get("delta") or {}
        if delta.get("content") or choice.get("text"):
            return True
    return False


def limits_of(settings: Any) -> Limits | None:
    """The gate's bounds from a stack's settings (``models.canary`` and its model's ``serving.slo``); None when
    the stack has no gated canary."""
    from inference_platform.settings.models import resolve

    canary = settings.models.canary
    if canary is None or not canary.gate.enabled:
        return None
    rollout = next(r for r in resolve(settings.serving, settings.inference, settings.models) if r.role == "canary")
    return Limits(
        weight=canary.weight,
        steps=tuple(canary.steps),
        ttft_p95_ms=rollout.serving.slo.ttft_p95_ms,
        max_error_rate=(
            canary.gate.max_error_rate
            if canary.gate.max_error_rate is not None
            else settings.verification.slo.max_error_rate
        ),
        max_ttft_ratio=canary.gate.max_ttft_ratio,
        min_requests=canary.gate.min_requests,
        rollback=canary.gate.rollback,
        itl_p50_ms=rollout.serving.slo.itl_p50_ms,
        max_itl_ratio=canary.gate.max_itl_ratio,
        live_window_s=canary.gate.live_window_seconds,
        live_min_requests=canary.gate.live_min_requests,
    )


def live_scopes(settings: Any, namespace: str) -> tuple[VersionScope, VersionScope]:
    """(canary, current): where each version's series are (its Service is the ``job`` label)."""
    from inference_platform.settings.models import resolve

    rollouts = resolve(settings.serving, settings.inference, settings.models)
    canary = next(r for r in rollouts if r.role == "canary")
    current = next(r for r in rollouts if r.role == "current" and r.name == canary.name)
    return (
        VersionScope(namespace, canary.service_name, canary.serving.served_model_name),
        VersionScope(namespace, current.service_name, current.serving.served_model_name),
    )


def gate(
    url: str,
    settings: Any,
    headers: Mapping[str, str],
    *,
    ca_file: str | None = None,
    prometheus_url: str | None = None,
    namespace: str = "inference",
    live_until: float | None = None,
    context: ssl.SSLContext | None = None,
) -> tuple[Decision, Live | None] | None:
    """``inferctl verify``'s canary step: measure the canary and its current version side by side through the edge,
    ``models.canary.gate.minRequests`` each, read both versions' real traffic from ``prometheus_url`` over the
    window that ends at ``live_until`` (epoch seconds; the verification's start, so none of its own load is
    counted as real traffic; default now), and decide. None without a gated canary."""
    limits = limits_of(settings)
    if limits is None:
        return None
    canary = settings.models.canary
    model = canary.model or settings.serving.model
    if context is None and ca_file:
        context = ssl.create_default_context(cafile=ca_file)
    measured = measure_side_by_side(url, model, headers, canary.tester_header, limits.min_requests, context=context)
    live = None
    if prometheus_url:
        live = measure_live(prometheus_url, *live_scopes(settings, namespace), limits.live_window_s,
                            at=live_until if live_until is not None else time.time())  # fmt: skip
    return decide(*measured, limits, live), live
