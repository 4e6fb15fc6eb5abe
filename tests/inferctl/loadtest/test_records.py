"""Figures from per-request records: percentiles, goodput per request, load levels and the knee."""

from __future__ import annotations

import pytest

from inference_platform.loadgen.records import (
    RequestRecord,
    Slo,
    by_load,
    meets,
    read_jsonl,
    saturation_knee,
    summarize,
    write_jsonl,
)

SLO = Slo(ttft_ms=100, itl_ms=20)


def record(start: float, ttft: float | None, itl: float | None, *, ok: bool = True, tokens: int = 10, load=1.0):
    return RequestRecord(
        start=start,
        latency_ms=1000,
        ok=ok,
        ttft_ms=ttft,
        itl_ms=itl,
        output_tokens=tokens if ok else 0,
        error=None if ok else "HTTP 503",
        load=load,
    )


def test_goodput_counts_requests_meeting_both_slos_not_averages():
    # Mean TTFT (90 ms) and mean ITL (17.5 ms) meet the SLOs, but only one request meets both.
    records = [
        record(0, 10, 30),  # fast first token, slow tokens
        record(1, 170, 10),  # slow first token, fast tokens
        record(2, 90, 15),  # good
        record(3, 90, 15, ok=False),  # failed: never good, and counted
    ]
    summary = summarize(records, SLO)
    assert summary.goodput == pytest.approx(1 / 4)
    assert [meets(r, SLO) for r in records] == [False, False, True, False]
    assert summary.errors == 1 and summary.error_rate == pytest.approx(0.25)
    assert summary.error_kinds == {"HTTP 503": 1}


def test_percentiles_are_nearest_rank_over_successful_requests():
    records = [record(i, ttft=float(10 * (i + 1)), itl=float(i + 1)) for i in range(20)]
    summary = summarize(records)
    assert summary.ttft_p50_ms == 100 and summary.ttft_p95_ms == 190
    assert summary.itl_p50_ms == 10 and summary.itl_p95_ms == 19
    assert summary.goodput is None
    # 20 requests x 10 tokens over 19 s + 1 s of the last request.
    assert summary.output_tokens_per_s == pytest.approx(200 / 20)


def test_a_one_token_answer_has_no_itl_and_can_still_be_good():
    assert meets(record(0, 50, None, tokens=1), SLO)
    assert not meets(record(0, None, None), SLO)


def test_levels_and_the_saturation_knee():
    records = []
    for load, tokens in ((1, 10), (2, 20), (4, 40), (8, 42)):
        records += [record(float(i), 50, 10, tokens=tokens, load=float(load)) for i in range(5)]
    levels = by_load(records, SLO)
    assert list(levels) == [1.0, 2.0, 4.0, 8.0]
    assert saturation_knee(levels) == 4.0
    assert saturation_knee({k: v for k, v in levels.items() if k < 8}) is None


def test_no_records_is_an_error_not_a_pass():
    with pytest.raises(ValueError, match="no requests"):
        summarize([])


def test_records_round_trip_through_json_lines(tmp_path):
    records = [record(1.5, 12.0, 3.0), record(2.0, None, None, ok=False)]
    write_jsonl(records, tmp_path / "r.jsonl")
    assert read_jsonl(tmp_path / "r.jsonl") == records
