"""SLO verdicts from injected timings (no timed assertions anywhere)."""

from __future__ import annotations

import pytest

from inference_platform.loadgen.latency import StreamTiming, percentile, slo_misses, summarize
from inference_platform.settings.serving import SloSettings

SLO = SloSettings(ttft_p50_ms=100, ttft_p95_ms=300, itl_p50_ms=20, min_output_tokens_per_second=40)


def _stream(ttft: float, gap: float, tokens: int, start: float = 100.0) -> StreamTiming:
    return StreamTiming(start=start, token_times=tuple(start + ttft + i * gap for i in range(tokens)))


def test_figures_are_medians_and_nearest_rank_percentiles():
    timings = [_stream(0.05, 0.010, 11), _stream(0.08, 0.012, 11), _stream(0.25, 0.011, 11)]
    summary = summarize(timings)
    assert summary.requests == 3
    assert summary.ttft_p50_ms == pytest.approx(80) and summary.ttft_p95_ms == pytest.approx(250)
    assert summary.itl_p50_ms == pytest.approx(11)
    assert summary.tokens_per_second_p50 == pytest.approx(1 / 0.011)
    assert percentile([1, 2, 3, 4, 5], 95) == 5 and percentile([3, 1, 2], 50) == 2


def test_met_slos_give_no_misses():
    assert slo_misses(summarize([_stream(0.05, 0.015, 20)] * 5), SLO) == []


def test_each_missed_slo_is_named_with_its_settings_key():
    misses = slo_misses(summarize([_stream(0.2, 0.030, 20), _stream(0.5, 0.030, 20)]), SLO)
    assert any("TTFT p50 350.0 ms > serving.slo.ttftP50Ms 100" in m for m in misses)
    assert any("TTFT p95 500.0 ms > serving.slo.ttftP95Ms 300" in m for m in misses)
    assert any("ITL p50 30.0 ms > serving.slo.itlP50Ms 20" in m for m in misses)
    assert any("tokens/s < serving.slo.minOutputTokensPerSecond 40" in m for m in misses)


def test_unmeasurable_figures_are_misses_and_empty_streams_are_errors():
    misses = slo_misses(summarize([_stream(0.01, 0.01, 1)]), SLO)
    assert len(misses) == 2 and all("not measurable" in m for m in misses)
    with pytest.raises(ValueError, match="no streamed request"):
        summarize([StreamTiming(start=0.0, token_times=())])
