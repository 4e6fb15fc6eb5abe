"""The backfill model (planners/backfill.py): the night floor held at the day floor, its free capacity filled to
the target, 24-hour utilisation with and without, the marginal cost per million batch tokens; and where it shows:
`inferctl capacity plan`, the stack's capacityPlan output and the plan's summary line."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from inference_platform.planners import capacity as planner
from inference_platform.planners.backfill import backfill
from inference_platform.planners.capacity import Demand, PlanningError, Query, best_plan
from inference_platform.planners.latency import Slo


def _plan(tokens_per_day: float, accelerator: str = "H100", model: str = "Llama-3.1-70B") -> planner.Plan:
    demand = Demand(tokens_per_day=tokens_per_day, isl=1000, osl=1000, slo=Slo(ttft_ms=2000, itl_ms=50))
    query = Query(
        model=model, precision="fp8", accelerator=accelerator.lower(), workload=demand.workload, slo=demand.slo
    )
    plan, _ = best_plan(demand, query)
    return plan


@pytest.fixture(scope="module")
def large():
    return _plan(3e10, "L40S", "Llama-3.1-8B")


def test_the_held_floor_serves_the_nights_free_capacity_at_the_target(large):
    b = backfill(large, target_utilisation=0.8)
    rate = large.option.tokens_per_s_per_replica
    free = large.day.replicas * rate * 0.8 - large.demand.night_output_tps
    expected_total = free * large.demand.night_hours * 3600 / large.demand.output_share
    assert b.batch_tokens_per_day == pytest.approx(expected_total)
    night = [h for h in b.hours if h.level == "night"]
    assert len(night) == round(large.demand.night_hours)
    assert all(h.replicas == large.night.replicas and h.replicas_backfilled == large.day.replicas for h in night)
    assert all(h.utilisation_backfilled == pytest.approx(0.8) for h in night)
    assert all(h.replicas_backfilled == h.replicas for h in b.hours if h.level != "night")


def test_without_the_lane_the_24h_utilisation_is_the_plans(large):
    b = backfill(large)
    assert b.utilisation == pytest.approx(large.expected_utilisation, rel=1e-9)
    assert b.utilisation_backfilled >= b.utilisation - 1e-9
    assert b.billed_utilisation_backfilled > b.billed_utilisation


def test_the_marginal_cost_is_the_extra_night_node_hours_over_the_batch_tokens(large):
    b = backfill(large)
    extra_nodes = planner.nodes_for(large.day.replicas, large.option) - large.night.nodes
    assert b.extra_node_hours_per_day == pytest.approx(extra_nodes * large.demand.night_hours)
    expected = b.extra_node_hours_per_day * large.option.node_hour_usd / (b.batch_tokens_per_day / 1e6)
    assert b.usd_per_million_batch_tokens == pytest.approx(expected)
    assert b.monthly_extra_usd == pytest.approx(
        b.extra_node_hours_per_day * large.option.node_hour_usd * planner.DAYS_PER_MONTH
    )


def test_replicas_sharing_a_billed_node_backfill_for_nothing():
    """Several replicas per 8-GPU node: the night's held replicas run on the node already billed."""
    plan = _plan(1.5e9)
    assert plan.option.replicas_per_node > 1 and plan.night.nodes == planner.nodes_for(plan.day.replicas, plan.option)
    b = backfill(plan)
    assert b.extra_node_hours_per_day == 0 and b.usd_per_million_batch_tokens == 0
    assert b.batch_tokens_per_day > 0 and b.billed_utilisation_backfilled > b.billed_utilisation


def test_a_stack_may_plan_less_batch_work_than_fits_never_more(large):
    fits = backfill(large).batch_capacity_tokens_per_day
    assert backfill(large, batch_tokens_per_day=fits / 10).batch_tokens_per_day == pytest.approx(fits / 10)
    assert backfill(large, batch_tokens_per_day=fits * 10).batch_tokens_per_day == pytest.approx(fits)
    none = backfill(large, batch_tokens_per_day=0)
    assert none.usd_per_million_batch_tokens is None and none.utilisation_backfilled == pytest.approx(none.utilisation)


@pytest.mark.parametrize(("kwargs", "field"), [({"target_utilisation": 0}, "target_utilisation"),
                                               ({"batch_tokens_per_day": -1}, "batch_tokens_per_day")])  # fmt: skip
def test_bad_inputs_are_refused_naming_the_input(large, kwargs, field):
    with pytest.raises(PlanningError) as err:
        backfill(large, **kwargs)
    assert err.value.field == field


def test_capacity_plan_shows_the_day_with_and_without_backfill(repo):
    args = ["--model", "Llama-3.1-8B", "--tokens-per-day", "3e10", "--isl", "1000", "--osl", "1000",
            "--slo-ttft-ms", "2000", "--slo-itl-ms", "50", "--accelerator", "L40S"]  # fmt: skip
    run = lambda *extra: subprocess.run(  # noqa: E731
        [sys.executable, "-m", "inference_platform.inferctl", "capacity", "plan", *args, *extra],
        capture_output=True, text=True, timeout=300, cwd=repo,
    )  # fmt: skip
    text = run()
    assert text.returncode == 0, text.stderr
    assert "with backfill (night floor held while batch work waits, filled to 80%)" in text.stdout
    assert "per M batch tokens (marginal, on demand)" in text.stdout and "  hour   0   1" in text.stdout
    shown = json.loads(run("--json").stdout)["backfill"]
    assert set(shown["utilisation_24h"]) == {"without", "with"} and len(shown["hours"]) == 24
    assert shown["usd_per_million_batch_tokens"] is not None


def test_the_stack_summary_and_its_line_carry_the_backfill():
    from inference_platform.inferctl.cost.summary import capacity_line
    from inference_platform.settings import stack_files
    from inference_platform.settings.derived import capacity_summary as summary

    plan = summary(stack_files.load("prod"))
    assert plan is not None and set(plan["backfill"]) >= {
        "utilisation24h",
        "usdPerMillionBatchTokens",
        "batchTokensPerDay",
    }
    line = capacity_line(plan)
    assert "with backfill" in line and "of the billed accelerators" in line
    assert "backfill" not in (summary(stack_files.load("dev")) or {})
