"""`inferctl cost`: every shipped stack priced with nothing unknown, the delta against a base plan, and
exit 2 on unreadable plans or unpriced regions."""

from __future__ import annotations

import json

import pytest

from inference_platform.inferctl.cli import main
from inference_platform.inferctl.plan.report import to_json


@pytest.fixture
def plan_file(stack_plan, tmp_path):
    def write(stack: str, mutate=None):
        data = to_json(stack_plan(stack))
        if mutate:
            mutate(data)
        path = tmp_path / f"{stack}-{id(mutate)}.json"
        path.write_text(json.dumps(data))
        return path

    return write


@pytest.mark.parametrize("stack", ["dev", "prod", "npu"])
def test_shipped_stacks_are_fully_priced(stack, plan_file, capsys):
    assert main(["cost", str(plan_file(stack)), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["unknown"] == [] and out["monthly_usd"]["expected"] > 0
    assert out["monthly_usd"]["min"] <= out["monthly_usd"]["expected"] <= out["monthly_usd"]["max"]
    assert {"cluster", "compute", "network"} <= set(out["by_area"])


def test_delta_against_a_base_plan(plan_file, capsys):
    def fewer_nodes(data):
        for r in data["resources"]:
            if r["type"] == "aws:eks/nodeGroup:NodeGroup" and "inference" in r["name"]:
                r["inputs"]["scalingConfig"]["maxSize"] = 1.0

    head, base = plan_file("prod"), plan_file("prod", fewer_nodes)
    assert main(["cost", str(head), "--against", str(base)]) == 0
    text = capsys.readouterr().out
    assert "against base:" in text and "+$0.00 a month" in text  # expected cost is what the workloads need
    assert main(["cost", str(head), "--against", str(plan_file("dev")), "--json"]) == 0
    delta = json.loads(capsys.readouterr().out)["against"]
    assert delta["monthly_usd_expected"]["delta"] > 10_000 and delta["by_area"]["compute"] > 0


def test_bad_plans_and_unpriced_regions_exit_2(plan_file, tmp_path, capsys):
    def elsewhere(data):
        data["outputs"]["region"] = "sa-east-1"

    assert main(["cost", str(plan_file("dev", elsewhere))]) == 2
    assert "sa-east-1" in capsys.readouterr().err
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    assert main(["cost", str(bad)]) == 2
    assert main(["cost", str(tmp_path / "missing.json")]) == 2


@pytest.mark.parametrize("stack", ["dev", "prod", "npu"])
def test_the_plan_report_shows_the_monthly_estimate(stack, stack_plan):
    from inference_platform.inferctl.plan.report import markdown, tree

    plan = stack_plan(stack)
    for text in (tree(plan), markdown(plan)):
        assert "Monthly cost (" in text and "expected $" in text
    if stack == "prod":  # the stack that plans from demand (inference-platform:capacity)
        assert "Planned capacity (what the demand needs): 1.5e+09 tokens/day" in tree(plan)


def test_bad_cost_assumptions_exit_2_naming_every_key(plan_file, tmp_path, capsys):
    config = tmp_path / "policy.json"
    config.write_text(json.dumps({"cost-monthly-budget": {"assumptions": {"nightHours": 8, "s3ModelGib": "big"}},
                                  "cost-nat-per-zone-production-only": {"assumptions": {"spotFactor": 2}}}))  # fmt: skip
    assert main(["cost", str(plan_file("dev")), "--policy-config", str(config)]) == 2
    err = capsys.readouterr().err
    for key in ("cost-monthly-budget.assumptions.nightHours", "cost-monthly-budget.assumptions.s3ModelGib",
                "cost-nat-per-zone-production-only.assumptions.spotFactor"):  # fmt: skip
        assert key in err
    args = ["plan", "--stack", "dev", "--out", str(tmp_path / "out"), "--quiet", "--policy-config", str(config)]
    assert main(args) == 2
    assert "cost-monthly-budget.assumptions.nightHours: unknown key" in capsys.readouterr().err
