"""Issue 18 §2: the policy-pack configuration is validated like the stack settings. Each bad entry is
one problem naming it, and ``inferctl plan`` exits 2 with no traceback and nothing planned."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from inference_platform.inferctl.cli import main
from inference_platform.policies import pack_config
from inference_platform.policies.pack import POLICIES

REPO = Path(__file__).resolve().parents[2]


def problems(config):
    return pack_config.problems(config, POLICIES)


@pytest.mark.parametrize(
    ("config", "entry", "words"),
    [
        ([{"all": "advisory"}], "(top level)", ["a list", "expected an object"]),
        ("mandatory", "(top level)", ["a string"]),
        ({"all": "bogus"}, "all", ["'bogus'", "advisory, mandatory"]),
        ({"accelerator-budget": {"enforcementLevel": "strict"}}, "accelerator-budget.enforcementLevel", ["'strict'"]),
        ({"accelerator-budget": 5}, "accelerator-budget", ["a number 5", "enforcement level"]),
        ({"accelerator-budget": {"maxAccelerators": "48"}}, "accelerator-budget.maxAccelerators",
         ["got '48'", "an integer"]),
        ({"accelerator-budget": {"maxAccelerators": True}}, "accelerator-budget.maxAccelerators", ["an integer"]),
        ({"cost-monthly-budget": {"monthlyBudgetUsd": math.nan}}, "cost-monthly-budget.monthlyBudgetUsd",
         ["finite"]),
        ({"cost-monthly-budget": {"monthlyBudgetUsd": math.inf}}, "cost-monthly-budget.monthlyBudgetUsd",
         ["finite"]),
        ({"cost-monthly-budget": {"monthlyBudgetUsd": -1}}, "cost-monthly-budget.monthlyBudgetUsd",
         ["got -1", "at least 0"]),
        ({"accelerator-budget": {"maxAccelerators": -8}}, "accelerator-budget.maxAccelerators", ["at least 0"]),
        ({"acelerator-budget": {"maxAccelerators": 4}}, "acelerator-budget",
         ["not a policy", "did you mean 'accelerator-budget'"]),
        ({"accelerator-budget": {"maxAcelerators": 4}}, "accelerator-budget.maxAcelerators",
         ["unknown key", "did you mean 'maxAccelerators'"]),
        ({"node-instance-types-allowed": {"allowedInstanceTypes": ["g6.xlarge", 3]}},
         "node-instance-types-allowed.allowedInstanceTypes[1]", ["got 3", "a string"]),
        ({"all": {"enforcementLevel": "advisory", "maxAccelerators": 1}}, "all.maxAccelerators", ["unknown key"]),
    ],
)  # fmt: skip
def test_each_bad_entry_is_one_problem_naming_it(config, entry, words):
    found = problems(config)
    assert len(found) == 1, found
    where, _, message = found[0].partition(": ")
    assert where == entry, found
    assert all(w in message for w in words), found


def test_several_bad_entries_are_each_named():
    found = problems({"all": "bogus", "acelerator-budget": {}, "cost-monthly-budget": {"monthlyBudgetUsd": -1}})
    assert [p.split(":")[0] for p in found] == ["all", "acelerator-budget", "cost-monthly-budget.monthlyBudgetUsd"]


@pytest.mark.parametrize(
    "config",
    [
        {},
        {"all": "advisory"},
        {"all": {"enforcementLevel": "disabled"}},
        {"accelerator-budget": {"enforcementLevel": "advisory", "maxAccelerators": 0}},
        {"cost-monthly-budget": {"monthlyBudgetUsd": 1500.5}},
        {"deletion-windows": "mandatory"},
    ],
)
def test_good_configs_pass(config):
    assert problems(config) == []


@pytest.mark.parametrize("stack", ["dev", "prod", "npu"])
def test_the_shipped_configs_pass(stack):
    assert problems(json.loads((REPO / "policies" / "config" / f"{stack}.json").read_text())) == []


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ('{"all": "bogus"}', ["all: got 'bogus'"]),
        ("[]", ["(top level)"]),
        ('{"cost-monthly-budget": {"monthlyBudgetUsd": NaN}, "accelerator-budget": {"maxAccelerators": "x"}}',
         ["2 problems", "monthlyBudgetUsd: got nan", "maxAccelerators: got 'x'"]),
    ],
)  # fmt: skip
def test_plan_exits_2_naming_each_entry(tmp_path, capsys, text, words):
    config = tmp_path / "bad.json"
    config.write_text(text)
    out = tmp_path / "out"
    args = ["plan", "--stack", "dev", "--program", str(REPO), "--out", str(out), "--quiet", "--policy-config"]
    assert main([*args, str(config)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert all(w in err for w in words), err
    assert not out.exists()  # refused before the program ran


def test_inferctl_cost_refuses_the_same_configs(tmp_path):
    from inference_platform.errors import CommandError
    from inference_platform.inferctl.cost.summary import usage_for

    config = tmp_path / "bad.json"
    config.write_text('[{"cost-monthly-budget": {"monthlyBudgetUsd": 5}}]')
    with pytest.raises(CommandError) as err:
        usage_for("dev", config)
    assert err.value.exit_code == 2 and "(top level)" in str(err.value)
    config.write_text('{"cost-monthly-budget": {"monthlyBudgetUsd": 5}}')
    assert usage_for("dev", config) is not None
