"""The verdict of ``inferctl verify``: every check with its figure and limit, pass/fail, one screen.

A check is ``ok`` (True/False) or not measured (None, e.g. no Prometheus): not measured never fails
the verdict, but a figure that should exist and does not (no request answered) is a failure.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from inference_platform.loadgen.records import Summary

EXIT_PASS = 0
EXIT_FAIL = 1


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool | None
    detail: str


@dataclass
class Verdict:
    checks: list[Check] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return all(c.ok is not False for c in self.checks)

    @property
    def exit_code(self) -> int:
        return EXIT_PASS if self.passed else EXIT_FAIL

    def add(self, name: str, ok: bool | None, detail: str) -> None:
        self.checks.append(Check(name, ok, detail))

    def lines(self) -> list[str]:
        marks = {True: "PASS", False: "FAIL", None: "----"}
        out = [f"  {marks[c.ok]}  {c.name:<22} {c.detail}" for c in self.checks]
        failed = sum(c.ok is False for c in self.checks)
        out.append("VERDICT: PASS" if self.passed else f"VERDICT: FAIL ({failed} check(s) failed)")
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"passed": self.passed, "checks": [asdict(c) for c in self.checks]}


@dataclass(frozen=True, kw_only=True)
class Limits:
    """The SLOs the load is judged against (serving.slo and verification.slo of the stack)."""

    ttft_p50_ms: float
    ttft_p95_ms: float
    itl_p50_ms: float
    itl_p95_ms: float
    min_output_tokens_per_s: float
    """Per request (serving.slo.minOutputTokensPerSecond): 1000 / its inter-token latency."""
    min_goodput: float
    max_error_rate: float
    goodput_ttft_ms: float
    goodput_itl_ms: float


def judge_load(verdict: Verdict, summary: Summary | None, limits: Limits, *, replicas: int, scope: str = "") -> None:
    """Add the load checks for the requests at the planned concurrency. ``scope`` says which requests those are
    (``at the planned 16 in flight, of 209 in the run``): the checks that count requests name it, so their counts
    agree with the run's total and the chart's."""
    if summary is None or summary.succeeded == 0:
        errors = "" if summary is None else f" ({summary.errors} of {summary.requests} failed)"
        verdict.add("load", False, f"no request succeeded at the planned concurrency{errors}")
        if summary is not None:
            _error_rate(verdict, summary, limits, scope)
        return
    _at_most(verdict, "TTFT p50", summary.ttft_p50_ms, limits.ttft_p50_ms, "serving.slo.ttftP50Ms")
    _at_most(verdict, "TTFT p95", summary.ttft_p95_ms, limits.ttft_p95_ms, "serving.slo.ttftP95Ms")
    _at_most(verdict, "ITL p50", summary.itl_p50_ms, limits.itl_p50_ms, "serving.slo.itlP50Ms")
    _at_most(verdict, "ITL p95", summary.itl_p95_ms, limits.itl_p95_ms, "verification.slo.itlP95Ms")
    if summary.itl_p50_ms:
        rate = 1000 / summary.itl_p50_ms
        ok = rate >= limits.min_output_tokens_per_s
        verdict.add(
            "tokens/s per request",
            ok,
            f"p50 {rate:.1f} {'>=' if ok else '<'} {limits.min_output_tokens_per_s:g} "
            "(serving.slo.minOutputTokensPerSecond)",
        )
    verdict.add(
        "tokens/s per replica",
        summary.output_tokens_per_s > 0,
        f"{summary.output_tokens_per_s / replicas:.1f} output tokens/s ({replicas} replica(s), "
        f"{summary.request_rate:.2f} req/s in all)",
    )
    _error_rate(verdict, summary, limits, scope)
    assert summary.goodput is not None
    ok = summary.goodput >= limits.min_goodput
    verdict.add(
        "goodput",
        ok,
        f"{summary.goodput:.1%} of requests had TTFT <= {limits.goodput_ttft_ms:g} ms and ITL <= "
        f"{limits.goodput_itl_ms:g} ms ({'>=' if ok else '<'} {limits.min_goodput:.0%}, verification.slo.minGoodput)",
    )


def _error_rate(verdict: Verdict, summary: Summary, limits: Limits, scope: str = "") -> None:
    ok = summary.error_rate <= limits.max_error_rate
    top = next(iter(summary.error_kinds), None)
    where = f" {scope}" if scope else ""
    verdict.add(
        "errors",
        ok,
        f"{summary.errors} of {summary.requests}{where} ({summary.error_rate:.1%}; at most "
        f"{limits.max_error_rate:.1%})" + (f"; most: {top}" if top else ""),
    )


def _at_most(verdict: Verdict, name: str, value: float | None, limit: float, key: str) -> None:
    if value is None:
        verdict.add(name, False, f"not measurable (no request streamed two tokens); {key} {limit:g} ms")
        return
    ok = value <= limit
    verdict.add(name, ok, f"{value:.1f} ms {'<=' if ok else '>'} {limit:g} ms ({key})")
