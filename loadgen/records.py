"""Per-request records of a load test and the figures computed from them.

Every figure comes from the individual requests, never from averages of averages: TTFT and
inter-token latency percentiles over requests, tokens/s over the run's span, and goodput as the share
of all requests (failed ones included) whose own TTFT and own inter-token latency meet the SLOs
(the DistServe definition). A request's inter-token latency is (last token - first token) / (tokens - 1).
Percentiles use the nearest-rank method (inference_platform.loadgen.latency).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from inference_platform.loadgen.latency import percentile


@dataclass(frozen=True, kw_only=True)
class RequestRecord:
    start: float
    """Wall-clock start, seconds since the epoch (comparable across worker processes)."""
    latency_ms: float
    """Start to last byte (or to the failure)."""
    ok: bool
    ttft_ms: float | None = None
    itl_ms: float | None = None
    """This request's mean gap between tokens; None with fewer than two tokens."""
    output_tokens: int = 0
    kind: str = "plain"
    """``plain`` or ``structured``."""
    error: str | None = None
    load: float = 0.0
    """The offered load when the request started (concurrency, or requests/s)."""
    worker: str = ""

    @property
    def end(self) -> float:
        return self.start + self.latency_ms / 1000

    def to_json(self) -> str:
        return json.dumps(asdict(self), separators=(",", ":"))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RequestRecord:
        return cls(**data)


@dataclass(frozen=True, kw_only=True)
class Slo:
    """Per-request limits a good request meets (goodput)."""

    ttft_ms: float
    itl_ms: float


@dataclass(frozen=True, kw_only=True)
class Summary:
    requests: int
    succeeded: int
    errors: int
    error_rate: float
    span_s: float
    """First start to last end."""
    request_rate: float
    """Completed requests (ok or not) per second over the span."""
    output_tokens_per_s: float
    ttft_p50_ms: float | None
    ttft_p95_ms: float | None
    itl_p50_ms: float | None
    itl_p95_ms: float | None
    latency_p50_ms: float | None
    latency_p95_ms: float | None
    goodput: float | None
    """Share of all requests meeting both SLOs; None without SLOs."""
    good_requests_per_s: float | None
    structured: int
    error_kinds: dict[str, int]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _pct(values: Sequence[float], pct: float) -> float | None:
    return percentile(values, pct) if values else None


def meets(record: RequestRecord, slo: Slo) -> bool:
    """A good request: it succeeded, its first token came within the TTFT SLO and its tokens kept
    within the ITL SLO (a one-token answer has no gaps and meets that part)."""
    if not record.ok or record.ttft_ms is None or record.ttft_ms > slo.ttft_ms:
        return False
    return record.itl_ms is None or record.itl_ms <= slo.itl_ms


def summarize(records: Sequence[RequestRecord], slo: Slo | None = None) -> Summary:
    if not records:
        raise ValueError("no requests were recorded")
    ok = [r for r in records if r.ok]
    span = max(r.end for r in records) - min(r.start for r in records)
    span = max(span, 1e-9)
    ttfts = [r.ttft_ms for r in ok if r.ttft_ms is not None]
    itls = [r.itl_ms for r in ok if r.itl_ms is not None]
    latencies = [r.latency_ms for r in ok]
    good = sum(meets(r, slo) for r in records) if slo is not None else None
    kinds: dict[str, int] = {}
    for r in records:
        if not r.ok:
            key = (r.error or "unknown")[:80]
            kinds[key] = kinds.get(key, 0) + 1
    return Summary(
        requests=len(records),
        succeeded=len(ok),
        errors=len(records) - len(ok),
        error_rate=(len(records) - len(ok)) / len(records),
        span_s=span,
        request_rate=len(records) / span,
        output_tokens_per_s=sum(r.output_tokens for r in ok) / span,
        ttft_p50_ms=_pct(ttfts, 50),
        ttft_p95_ms=_pct(ttfts, 95),
        itl_p50_ms=_pct(itls, 50),
        itl_p95_ms=_pct(itls, 95),
        latency_p50_ms=_pct(latencies, 50),
        latency_p95_ms=_pct(latencies, 95),
        goodput=None if good is None else good / len(records),
        good_requests_per_s=None if good is None else good / span,
        structured=sum(r.kind == "structured" for r in records),
        error_kinds=dict(sorted(kinds.items(), key=lambda kv: -kv[1])),
    )


def by_load(records: Iterable[RequestRecord], slo: Slo | None = None) -> dict[float, Summary]:
    """One summary per offered load (ramp steps), in increasing load."""
    groups: dict[float, list[RequestRecord]] = {}
    for r in records:
        groups.setdefault(r.load, []).append(r)
    return {load: summarize(group, slo) for load, group in sorted(groups.items())}


def saturation_knee(levels: dict[float, Summary], *, min_gain: float = 0.10) -> float | None:
    """The highest load before throughput stops growing: the first step whose output tokens/s gains
    less than ``min_gain`` (relative) over the step before is past the knee. None: no knee seen
    (throughput still grew at the last step), or fewer than two steps."""
    loads = sorted(levels)
    for before, after in itertools.pairwise(loads):
        previous = levels[before].output_tokens_per_s
        if previous <= 0 or levels[after].output_tokens_per_s < previous * (1 + min_gain):
            return before
    return None


def write_jsonl(records: Iterable[RequestRecord], path: Path) -> None:
    with path.open("w", encoding="utf-8") as out:
        for r in records:
            out.write(r.to_json() + "\n")


def read_jsonl(path: Path) -> list[RequestRecord]:
    if not path.is_file():
        return []
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            out.append(RequestRecord.from_dict(json.loads(line)))
    return out
