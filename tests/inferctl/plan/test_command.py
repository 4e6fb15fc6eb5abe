"""`inferctl plan` end to end: exit codes, messages naming the key, outputs written, other programs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from inference_platform.inferctl.cli import main
from inference_platform.offline_plan.engine import ProgramError, run_program
from tests.conftest import REPO

GOOD = {
    "aws:region": "us-west-2",
    "inference-platform:tags": {"owner": "team", "costCenter": "cc"},
}
CANARY = {"image": {"tag": "2026.12.1"}}


def stack_file(tmp_path: Path, config: dict) -> Path:
    path = tmp_path / "Pulumi.custom.yaml"
    path.write_text(yaml.safe_dump({"config": config}))
    return path


def plan(repo, tmp_path, *args) -> int:
    return main(["plan", "--program", str(repo), "--out", str(tmp_path / "out"), "--quiet", *args])


def test_dev_plan_writes_json_and_markdown(repo, tmp_path, capsys):
    assert plan(repo, tmp_path, "--stack", "dev") == 0
    doc = json.loads((tmp_path / "out" / "dev.json").read_text())
    assert {"project", "stack", "resources", "outputs", "policies"} <= set(doc)
    assert doc["project"] == "inference-platform" and doc["stack"] == "dev"
    first = doc["resources"][0]
    assert {"urn", "type", "name", "parent", "custom", "inputs", "dependencies", "protect", "retainOnDelete"} <= set(
        first
    )
    assert doc["policies"]["violations"] == []
    assert doc["outputs"]["region"] == "us-west-2"
    md = (tmp_path / "out" / "dev.md").read_text()
    assert "Offline plan" in md and "no mandatory policy violations" in md
    assert "dev: " in capsys.readouterr().out


def test_the_tree_groups_resources_under_their_components(repo, tmp_path, capsys):
    assert main(["plan", "--program", str(repo), "--out", str(tmp_path), "--stack", "dev"]) == 0
    out = capsys.readouterr().out
    assert "pulumi:pulumi:Stack" in out and "inference:network:Network" in out
    assert "│  ├─ aws:ec2/subnet:Subnet" in out
    assert "Resources: + " in out and "Policies: " in out


@pytest.mark.parametrize(
    ("config", "key"),
    [
        ({"inference-platform:network": {"cidr": "10.0.0.0/33"}}, "network.cidr"),
        ({"inference-platform:network": {"cidr": "10.0.0.0/24", "azCount": 2}}, "network.cidr"),
        ({"inference-platform:network": {"azCount": 9}}, "network.azCount"),
        ({"inference-platform:network": {"azCount": 3}, "aws:region": "us-west-1"}, "network.azCount"),
        ({"aws:region": "moon-1"}, "aws:region"),
        ({"inference-platform:network": {"flowLogs": {"retentionDays": -1}}}, "network.flowLogs.retentionDays"),
        ({"inference-platform:network": {"azCuont": 3}}, "network.azCuont"),
        ({"inference-platform:tags": {"owner": "team"}}, "tags.costCenter"),
        # Issue 32's bad input. One weight, the canary's share (0-100; the current version has the rest, so the
        # two always sum to 100): outside it is refused.
        (
            {"inference-platform:models": {"canary": {"version": "v2", "weight": 101, "inference": CANARY}}},
            "models.canary.weight",
        ),
        ({"inference-platform:models": {"aliases": {"llama": "nope"}}}, "models.aliases.llama"),
        ({"inference-platform:models": {"additional": {"Llama-3.1-8B": {}}}}, "models.additional.Llama-3.1-8B"),
    ],
)
def test_bad_config_exits_2_naming_the_key_and_registers_nothing(repo, tmp_path, capsys, config, key):
    path = stack_file(tmp_path, {**GOOD, **config})
    assert plan(repo, tmp_path, "--stack", "custom", "--stack-file", str(path)) == 2
    err = capsys.readouterr().err
    assert key in err and "Traceback" not in err
    with pytest.raises(ProgramError) as raised:
        run_program(repo, "custom", stack_file=path)
    assert raised.value.registered == 0


def test_an_undeclared_top_level_key_is_a_config_error(repo, tmp_path, capsys):
    path = stack_file(tmp_path, {**GOOD, "inference-platform:netwrok": {"azCount": 2}})
    assert plan(repo, tmp_path, "--stack", "custom", "--stack-file", str(path)) == 2
    assert "inference-platform:netwrok" in capsys.readouterr().err


def test_a_missing_stack_file_is_a_config_error(repo, tmp_path, capsys):
    assert plan(repo, tmp_path, "--stack", "staging") == 2
    assert "Pulumi.staging.yaml" in capsys.readouterr().err


def test_another_program_is_checked_against_our_policies(repo, tmp_path, capsys):
    program = repo / "tests" / "fixtures" / "insecure_program"
    assert main(["plan", "--program", str(program), "--stack", "test", "--out", str(tmp_path), "--quiet"]) == 1
    doc = json.loads((tmp_path / "test.json").read_text())
    policies = {v["policy"] for v in doc["policies"]["violations"]}
    assert {
        "no-world-ingress",
        "vpc-flow-logs",
        "kms-key-rotation",
        "kms-no-wildcard-principal",
        "required-tags",
    } <= policies
    assert "mandatory" in capsys.readouterr().out


def test_a_policy_config_can_lower_enforcement(repo, tmp_path):
    program = repo / "tests" / "fixtures" / "insecure_program"
    config = tmp_path / "advisory.json"
    config.write_text(json.dumps({"all": "advisory"}))
    args = ["plan", "--program", str(program), "--stack", "test", "--out", str(tmp_path), "--quiet"]
    assert main([*args, "--policy-config", str(config)]) == 0


def test_an_unmocked_data_source_is_named(tmp_path, capsys):
    program = tmp_path / "prog"
    (program / "app").mkdir(parents=True)
    (program / "Pulumi.yaml").write_text("name: p\nruntime: python\nmain: app/\n")
    (program / "Pulumi.s.yaml").write_text("config:\n  aws:region: us-west-2\n")
    (program / "app" / "__main__.py").write_text("import pulumi_aws as aws\naws.ec2.get_vpc(default=True)\n")
    assert main(["plan", "--program", str(program), "--stack", "s", "--out", str(tmp_path), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "aws:ec2/getVpc:getVpc" in err and "Traceback" not in err


def test_a_program_bug_is_one_line_naming_where(tmp_path, capsys):
    program = tmp_path / "prog"
    (program / "app").mkdir(parents=True)
    (program / "Pulumi.yaml").write_text("name: p\nruntime: python\nmain: app/\n")
    (program / "Pulumi.s.yaml").write_text("config: {}\n")
    (program / "app" / "__main__.py").write_text("x = {}\nx['missing']\n")
    assert main(["plan", "--program", str(program), "--stack", "s", "--out", str(tmp_path), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "KeyError" in err and "app/__main__.py:2" in err and "Traceback" not in err


def test_make_plan_says_which_failure_make_reports_as_2(repo, tmp_path):
    """GNU make turns inferctl's exit 1 (violations) into 2: the recipe names the real outcome, and
    scripts that need it call `inferctl plan` (README)."""
    import shutil
    import subprocess

    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    program = repo / "tests" / "fixtures" / "insecure_program"
    # -o: treat the venv stamp as up to date (no reinstall from a test).
    args = ["make", "-s", "-o", ".venv/.installed", "plan", f"PROGRAM={program}", "STACK=test"]
    made = subprocess.run(args, cwd=repo, capture_output=True, text=True, timeout=300)
    assert made.returncode == 2 and "mandatory policy violations (inferctl plan exit 1" in made.stderr
    assert main(["plan", "--program", str(program), "--stack", "test", "--out", str(tmp_path), "--quiet"]) == 1


def _gpu_program(root):
    """Another team's project (its own Pulumi.yaml) with a stack called dev, as ours is, and 2 GPUs."""
    root.mkdir()
    (root / "Pulumi.yaml").write_text("name: team\nruntime: python\n")
    (root / "Pulumi.dev.yaml").write_text("config:\n  aws:region: us-west-2\n")
    (root / "__main__.py").write_text(
        "import pulumi_aws as aws\n"
        "aws.eks.NodeGroup('gpu', cluster_name='c', node_role_arn='r', subnet_ids=['s'], instance_types=['g6.xlarge'],"
        " scaling_config={'min_size': 0, 'max_size': 2, 'desired_size': 0})\n"
    )
    return root


def test_a_program_elsewhere_never_gets_this_repositorys_policy_config(tmp_path, capsys, monkeypatch):
    program = _gpu_program(tmp_path / "team")
    monkeypatch.chdir(REPO)  # run from our checkout, whose policies/config/dev.json allows accelerators
    assert main(["plan", "--program", str(program), "--stack", "dev", "--quiet"]) == 1
    captured = capsys.readouterr()
    assert "stack dev: no policy configuration applies" in captured.err
    assert "no policy configuration sets accelerator-budget.maxAccelerators" in captured.out
    assert "budget of 0" not in captured.out
    # Its plan is written under its own project, not over ours (build/plan/dev.json of this checkout).
    assert (program / "build" / "plan" / "dev.json").is_file()
    assert str(program / "build" / "plan" / "dev.json") in captured.out


def test_a_project_keeps_its_own_policy_config_beside_its_stacks(tmp_path, capsys):
    program = _gpu_program(tmp_path / "team")
    (program / "policies" / "config").mkdir(parents=True)
    (program / "policies" / "config" / "dev.json").write_text(json.dumps({"all": "advisory"}))
    assert main(["plan", "--program", str(program), "--stack", "dev", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert f"policy config {program / 'policies' / 'config' / 'dev.json'}" in out


def test_a_production_canary_without_its_gate_exits_2_naming_the_key(repo, tmp_path, capsys):
    """Issue 32: the prod stack with a canary whose gate is off is refused before anything is registered."""
    config = yaml.safe_load((REPO / "stacks" / "Pulumi.prod.yaml").read_text())["config"]
    canary = {"version": "v2", "weight": 5, "inference": {"image": {"digest": "sha256:" + "b" * 64}},
              "gate": {"enabled": False}}  # fmt: skip
    config["inference-platform:models"] = {"canary": canary}
    path = tmp_path / "Pulumi.prod.yaml"
    path.write_text(yaml.safe_dump({"config": config}))
    assert plan(repo, tmp_path, "--stack", "prod", "--stack-file", str(path)) == 2
    err = capsys.readouterr().err
    assert "models.canary.gate: " in err and "production canaries need the verification gate" in err, err
    assert "Traceback" not in err
