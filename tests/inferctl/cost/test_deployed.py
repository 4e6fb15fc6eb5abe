"""One figure per thing in the plan's summary (issue 28: prod's plan printed $45,188/month for the serving pool on the
capacity line and $82,305 on the cost line, and night replicas 1 in one place and 3 in another, naming neither).

The capacity line is what the demand needs; the deployed line is what the stack runs, with the cost line's own
numbers (its pool figure is the sum of the cost line's node groups, its day and night bounds the ScaledObject's the
cost model reads), and each difference names the setting that asks for it."""

from __future__ import annotations

import re

import pytest

from inference_platform.inferctl.cost.summary import estimate_for, resources_as_dicts
from inference_platform.inferctl.plan.report import tree
from inference_platform.planners.node_hours import Bounds, schedule_of


@pytest.fixture(scope="module")
def prod(stack_plan):
    return stack_plan("prod")


def _line(text: str, start: str) -> str:
    (line,) = [line for line in text.splitlines() if line.startswith(start)]
    return line


def _dollars(text: str) -> list[float]:
    return [float(d.replace(",", "")) for d in re.findall(r"\$([\d,]+(?:\.\d+)?)", text)]


def test_the_deployed_pool_is_the_cost_lines_figure_and_the_needed_one_the_plans(prod):
    text = tree(prod)
    needed = _line(text, "Planned capacity (what the demand needs):")
    deployed = _line(text, "Deployed serving pool 'inference' (what the cost line prices):")
    plan = prod.run.outputs["capacityPlan"]
    estimate = estimate_for(resources_as_dicts(prod.run.resources), prod.run.outputs, "prod")
    pool = sum(
        line.monthly_expected
        for line in estimate.lines
        if line.type.endswith(":NodeGroup") and "pool-inference" in line.name
    )
    assert f"those node-hours ${plan['monthlyUsd']['onDemand']:,.0f}/month" in needed
    assert f"expected ${pool:,.0f}/month" in deployed
    assert (
        f"${pool - plan['monthlyUsd']['onDemand']:,.0f} more than the ${plan['monthlyUsd']['onDemand']:,.0f}"
        in deployed
    )
    # The night, named each time: the demand needs 1; the stack runs 2, and 3 while batch work waits.
    assert "night 1" in needed and "2-2 at night, 3-3 at night while the batch queue has work" in deployed
    for setting in ("inference.replicas", "autoscaling.night", "batch.backfill.holdFloorAtNight",
                    "nodePools.inference: minSize 1 in each of 2 zonal groups"):  # fmt: skip
        assert setting in deployed, setting


def test_a_stack_that_runs_what_it_plans_says_so(prod):
    from inference_platform.inferctl.cost.deployed import Deployed, deployed_line

    plan = prod.run.outputs["capacityPlan"]
    r = plan["replicas"]
    exact = Deployed(pool="p", planned_replicas=int(r["day"]), schedule=None, groups=1, min_nodes=1, max_nodes=2,
                     monthly_expected=plan["monthlyUsd"]["onDemand"])  # fmt: skip
    line = deployed_line({**plan, "replicas": {**r, "night": r["day"]}}, exact)
    assert line.endswith(f"as planned (the demand needs ${plan['monthlyUsd']['onDemand']:,.0f})")


def test_the_backfill_schedule_keeps_the_nights_own_bounds():
    formula = "day >= 2 ? max(x, 3) : (batch > 0 ? max(x, 3) : min(max(x, 2), 2))"
    spec = {
        "minReplicaCount": 2,
        "maxReplicaCount": 3,
        "triggers": [{"type": "cron", "name": "day", "metadata": {"timezone": "UTC", "start": "0 6 * * *",
                                                                  "end": "0 22 * * *", "desiredReplicas": "2"}}],
        "advanced": {"scalingModifiers": {"formula": formula}},
    }  # fmt: skip
    schedule = schedule_of(spec)
    assert (schedule.day, schedule.night, schedule.night_without_backfill) == (
        Bounds(3, 3),
        Bounds(3, 3),
        Bounds(2, 2),
    )
