"""Latency figures of streamed generations and their comparison with a stack's SLOs.

Pure arithmetic on timestamps, so the SLO verdict is tested with injected timings. Definitions:
TTFT = first token's arrival - request start; inter-token latency (ITL) = gap between consecutive
tokens of one request; output rate = (tokens - 1) / (last - first token) per request. Percentiles use
the nearest-rank method (the p95 of 5 samples is the largest).

An OpenAI stream's chunk may carry several tokens; its final ``usage`` says how many there were. When that
count differs from the chunks, the request's gaps are its mean ITL, (last - first chunk) / (tokens - 1), once
per token gap: the client cannot see finer than a chunk, and a chunk's gap is never one token's.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from inference_platform.settings.serving import SloSettings


@dataclass(frozen=True)
class StreamTiming:
    """One streamed request: when it started and when each token arrived (seconds, monotonic)."""

    start: float
    token_times: tuple[float, ...]
    """When each token, or each chunk of tokens, arrived."""
    output_tokens: int | None = None
    """Default: one token per arrival. Tokens the server reported (OpenAI ``usage.completion_tokens``)."""

    @property
    def tokens(self) -> int:
        if self.output_tokens is not None and self.token_times:
            return max(self.output_tokens, 1)
        return len(self.token_times)

    @property
    def ttft(self) -> float:
        return self.token_times[0] - self.start

    @property
    def gaps(self) -> list[float]:
        if self.tokens != len(self.token_times):
            span = self.token_times[-1] - self.token_times[0]
            return [span / (self.tokens - 1)] * (self.tokens - 1) if self.tokens > 1 else []
        return [b - a for a, b in zip(self.token_times, self.token_times[1:], strict=False)]

    @property
    def tokens_per_second(self) -> float | None:
        span = self.token_times[-1] - self.token_times[0]
        return (self.tokens - 1) / span if self.tokens > 1 and span > 0 else None


@dataclass(frozen=True)
class LatencySummary:
    requests: int
    ttft_p50_ms: float
    ttft_p95_ms: float
    itl_p50_ms: float | None
    """None when no request produced two tokens."""
    tokens_per_second_p50: float | None

    def lines(self) -> list[str]:
        itl = "n/a" if self.itl_p50_ms is None else f"{self.itl_p50_ms:.1f} ms"
        rate = "n/a" if self.tokens_per_second_p50 is None else f"{self.tokens_per_second_p50:.1f}"
        return [
            f"TTFT p50 {self.ttft_p50_ms:.1f} ms, p95 {self.ttft_p95_ms:.1f} ms",
            f"inter-token latency p50 {itl}",
            f"output tokens/s per request p50 {rate}",
            f"({self.requests} streamed requests)",
        ]


def percentile(values: Sequence[float], pct: float) -> float:
    if not values:
        raise ValueError("percentile of no values")
    ordered = sorted(values)
    rank = max(1, math.ceil(pct / 100 * len(ordered)))
    return ordered[rank - 1]


def summarize(timings: Sequence[StreamTiming]) -> LatencySummary:
    streamed = [t for t in timings if t.tokens]
    if not streamed:
        raise ValueError("no streamed request produced a token")
    ttfts = [t.ttft * 1000 for t in streamed]
    gaps = [g * 1000 for t in streamed for g in t.gaps]
    rates = [r for t in streamed if (r := t.tokens_per_second) is not None]
    return LatencySummary(
        requests=len(streamed),
        ttft_p50_ms=statistics.median(ttfts),
        ttft_p95_ms=percentile(ttfts, 95),
        itl_p50_ms=statistics.median(gaps) if gaps else None,
        tokens_per_second_p50=statistics.median(rates) if rates else None,
    )


def slo_misses(summary: LatencySummary, slo: SloSettings) -> list[str]:
    """One line per missed SLO (empty: all met). A figure that could not be measured is a miss."""
    misses = []
    if summary.ttft_p50_ms > slo.ttft_p50_ms:
        misses.append(f"TTFT p50 {summary.ttft_p50_ms:.1f} ms > serving.slo.ttftP50Ms {slo.ttft_p50_ms:g}")
    if summary.ttft_p95_ms > slo.ttft_p95_ms:
        misses.append(f"TTFT p95 {summary.ttft_p95_ms:.1f} ms > serving.slo.ttftP95Ms {slo.ttft_p95_ms:g}")
    if summary.itl_p50_ms is None:
        misses.append("inter-token latency not measurable: no request streamed two tokens")
    elif summary.itl_p50_ms > slo.itl_p50_ms:
        misses.append(f"ITL p50 {summary.itl_p50_ms:.1f} ms > serving.slo.itlP50Ms {slo.itl_p50_ms:g}")
    if summary.tokens_per_second_p50 is None:
        misses.append("output tokens/s not measurable: no request streamed two tokens")
    elif summary.tokens_per_second_p50 < slo.min_output_tokens_per_second:
        misses.append(
            f"output {summary.tokens_per_second_p50:.1f} tokens/s < serving.slo.minOutputTokensPerSecond "
            f"{slo.min_output_tokens_per_second:g}"
        )
    return misses
