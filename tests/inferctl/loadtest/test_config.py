"""Load-test settings: every bad value named by its flag, budgets that sum up, JSON round trip."""

from __future__ import annotations

import pytest

from inference_platform.loadgen.config import LoadConfig, Shape, SizeDistribution


def config(**overrides):
    values = {
        "url": "http://127.0.0.1:8000",
        "shape": Shape(kind="concurrency", concurrency=4),
        "max_requests": 100,
        "duration_s": 30.0,
    }
    return LoadConfig(**{**values, **overrides})


def test_a_good_config_has_no_problems():
    assert config().problems() == []


@pytest.mark.parametrize(
    ("overrides", "flag"),
    [
        ({"shape": Shape(kind="concurrency", concurrency=0)}, "--concurrency"),
        ({"shape": Shape(kind="rate", rate=0.0, concurrency=8)}, "--rate"),
        ({"shape": Shape(kind="rate", rate=-3.0, concurrency=8)}, "--rate"),
        ({"shape": Shape(kind="ramp", steps=(4, 2))}, "--steps"),
        ({"max_requests": 0}, "--max-requests"),
        ({"duration_s": 0.0}, "--duration"),
        ({"isl": SizeDistribution(mean=0)}, "--isl"),
        ({"structured_share": 1.5}, "--structured-share"),
        ({"url": "ftp://x"}, "--url"),
    ],
)
def test_each_bad_value_names_its_flag(overrides, flag):
    problems = config(**overrides).problems()
    assert len(problems) == 1 and problems[0].startswith(flag + ":"), problems


def test_duration_ceiling_and_tls_for_production():
    problems = config(duration_s=900.0).problems(max_duration_s=600, require_tls=True)
    assert any(p.startswith("--duration:") and "verification.maxDurationSeconds" in p for p in problems)
    assert any(p.startswith("--url:") and "https" in p for p in problems)
    assert config(url="https://api.example.com").problems(require_tls=True) == []


def test_worker_budgets_sum_to_max_requests():
    cfg = config(max_requests=101, workers=3)
    assert [cfg.request_budget(i) for i in range(3)] == [34, 34, 33]
    assert config(max_requests=7).request_budget(0) == 7


def test_json_round_trip():
    cfg = config(shape=Shape(kind="ramp", steps=(1, 2, 4), step_seconds=3.0), isl=SizeDistribution(mean=9, spread=2))
    assert LoadConfig.from_json(cfg.to_json()) == cfg
