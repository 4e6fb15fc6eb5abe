"""The routing benchmark's delta in the pull request's comment (inferctl/plan/routing_delta.py), from reports in the
format ``python -m bench routing`` writes (built here with its own ``summary``, so the two cannot drift apart)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from bench.routing import MODES, PARTS, Outcome, PartResult, summary
from bench.routing_load import LoadStep, Slo, Streamed, verdict
from inference_platform.inferctl.cli import main

DATA = Path(__file__).resolve().parents[2] / "data" / "plan_diff"


def report(hit: float, seconds: float, *, errors: int = 0, replicas: int = 3) -> dict:
    outcomes = [Outcome(200, 1000, int(1000 * hit), seconds) for _ in range(20 - errors)]
    outcomes += [Outcome(503, 0, 0, seconds) for _ in range(errors)]
    part = summary(PartResult(outcomes, wall_seconds=10.0, per_replica={"a": 10, "b": 10}, peak_in_flight={"a": 2}))
    return {"settings": {"replicas": replicas, "concurrency": 6, "prefill_us_per_token": 200},
            "modes": {mode: {p: part for p in PARTS} for mode in MODES}}  # fmt: skip


@pytest.fixture
def plans(tmp_path):
    (tmp_path / "head").mkdir()
    shutil.copy(DATA / "head-dev.json.gz", tmp_path / "head" / "dev.json.gz")
    return tmp_path


def comment(plans: Path, head: dict | None, base: dict | None, capsys) -> str:
    args = ["diff", "--head", str(plans / "head")]
    if head is not None:
        (plans / "routing-head.json").write_text(json.dumps(head))
        args += ["--routing-head", str(plans / "routing-head.json"), "--routing-base", str(plans / "routing-base.json")]
    if base is not None:
        (plans / "routing-base.json").write_text(json.dumps(base))
    assert main(args) == 0
    return capsys.readouterr().out


def test_each_mode_and_part_shows_the_head_against_the_base(plans, capsys):
    text = comment(plans, report(0.8, 0.05), report(0.5, 0.10, errors=2), capsys)
    assert "### Routing benchmark (replayed trace)" in text and "3 local replicas, concurrency 6" in text
    rows = [line for line in text.splitlines() if line.startswith("| `") and "prefix" in line]
    assert len(rows) == len(MODES) * len(PARTS)
    # hit rate +30 points, p90 half the base's, throughput the same (20 requests in 10 s), errors down from 2
    assert "| `envoy` | shared prefix | 80.0% (+30.0 pt) | 50 (0.50x) | 2.00 (1.00x) | 0 (was 2) |" in rows


def test_more_errors_than_the_base_are_marked(plans, capsys):
    text = comment(plans, report(0.8, 0.05, errors=3), report(0.8, 0.05), capsys)
    assert "| 3 (was 0) ❌ |" in text


def test_without_a_base_run_the_head_stands_alone_and_other_settings_are_named(plans, capsys):
    text = comment(plans, report(0.8, 0.05), None, capsys)
    assert "No base run" in text and "| `round-robin` | no shared prefix | 80.0% | 50 | 2.00 | 0 |" in text
    text = comment(plans, report(0.8, 0.05), report(0.8, 0.05, replicas=2), capsys)
    assert "The base ran with other settings (concurrency 6, prefill_us_per_token 200, replicas 2)" in text


def test_a_part_where_nothing_succeeded_has_no_latency(plans, capsys):
    text = comment(plans, report(0.0, 0.05, errors=20), None, capsys)
    assert "| `envoy` | shared prefix | 0.0% | — | 2.00 | 20 ❌ |" in text


def test_without_routing_flags_the_comment_has_no_routing_section(plans, capsys):
    assert "Routing benchmark" not in comment(plans, None, None, capsys)


@pytest.mark.parametrize("content", ["not json", json.dumps({"modes": 3}), json.dumps([1])])
def test_an_unreadable_report_is_one_line_and_exit_2(plans, tmp_path, capsys, content):
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    assert main(["diff", "--head", str(plans / "head"), "--routing-head", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "--routing-head:" in err and str(bad) in err and err.count("\n") == 1


def at_load(rr_p90_s: float, envoy_p90_s: float) -> dict:
    """The equal-load section as the benchmark writes it (``bench.routing_load``'s own summary and verdict)."""
    slo = Slo(ttft_p50_ms=1000, ttft_p95_ms=3000)
    ladders = {
        mode: [LoadStep(4.0, tuple(Streamed(200, p90, 1000, 0) for _ in range(20)), 5.0)]
        for mode, p90 in (("round-robin", rr_p90_s), ("envoy", envoy_p90_s), ("inference-pool", rr_p90_s))
    }
    return {
        "slo": {"ttft_p50_ms": 1000, "ttft_p95_ms": 3000},
        "steps": {mode: [s.summary(slo) for s in steps] for mode, steps in ladders.items()},
        **verdict(ladders, slo),
    }


def test_the_equal_load_summary_shows_throughput_within_the_slo_and_p90_against_the_base(plans, capsys):
    head, base = report(0.8, 0.05), report(0.5, 0.10)
    head["at_load"], base["at_load"] = at_load(0.8, 0.2), at_load(0.8, 0.4)
    text = comment(plans, head, base, capsys)
    assert "The p90 is at 4.00 req/s, round robin's load at the SLO." in text
    assert "| `envoy` | 4.00 (1.00x) | 200 (0.50x) |" in text
    assert "| `round-robin` | 4.00 (1.00x) | 800 (1.00x) |" in text
    # A base from before the equal-load replay: the head's figures alone; a head without it: no section.
    del base["at_load"]
    assert "| `envoy` | 4.00 | 200 |" in comment(plans, head, base, capsys)
    del head["at_load"]
    assert "equal offered load" not in comment(plans, head, base, capsys)


def test_a_mode_measured_over_several_placements_says_its_figures_are_their_median(plans, capsys):
    head = report(0.8, 0.05)
    head["at_load"] = at_load(0.8, 0.2)
    head["at_load"]["placements"] = {"envoy": [{"name": "envoy"}, {"name": "envoy#2"}, {"name": "envoy#3"}]}
    text = comment(plans, head, None, capsys)
    assert "| `envoy` (median of 3 placements) | 4.00 | 200 |" in text
    assert "| `round-robin` | 4.00 | 800 |" in text
