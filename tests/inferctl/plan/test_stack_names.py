"""Long stack names through the whole plan (issue 17 §5): a 20- and a 25-character stack name plan with
no name AWS would refuse; two stacks planned together are refused when their physical names collide
(blue/green under the old 40-character cut), and the hash rule keeps them apart."""

from __future__ import annotations

import json

import pytest

from inference_platform.inferctl.cli import main
from inference_platform.settings import Settings

BLUE, GREEN = "production-us-east-1a-blue", "production-us-east-1a-green"


def _stack_file(repo, tmp_path, stack, source="prod"):
    path = tmp_path / f"Pulumi.{stack}.yaml"
    path.write_text((repo / "stacks" / f"Pulumi.{source}.yaml").read_text())
    return path


def _old_cut(monkeypatch):
    """The rule before issue 17: the prefix cut at 40 characters."""
    monkeypatch.setattr(Settings, "name_prefix", property(lambda s: f"{s.project}-{s.stack}"[:40]))


@pytest.mark.parametrize("stack", ["production-us-east-1", "production-us-east-1-blue"])  # 20 and 25 characters
def test_a_long_stack_name_plans_with_every_name_within_aws_limits(repo, tmp_path, capsys, stack):
    out = tmp_path / "out"
    code = main(["plan", "--program", str(repo), "--out", str(out), "--quiet", "--stack", stack,
                 "--stack-file", str(_stack_file(repo, tmp_path, stack)),
                 "--policy-config", str(repo / "policies" / "config" / "prod.json")])  # fmt: skip
    printed = capsys.readouterr()
    assert code == 0, printed.out + printed.err
    plan = json.loads((out / f"{stack}.json").read_text())
    by_type = {r["type"]: r["inputs"] for r in plan["resources"]}
    group_id = by_type["aws:elasticache/replicationGroup:ReplicationGroup"]["replicationGroupId"]
    assert len(group_id) <= 40 and not group_id.endswith("-")
    assert by_type["aws:ecr/repository:Repository"]["name"].count("-/") == 0


def test_under_the_old_cut_a_25_character_name_failed_with_an_ecr_error(repo, tmp_path, capsys, monkeypatch):
    # What the issue saw: the cut prefix ends on '-', so the repository path has '-/'. (The 20-character
    # case, an ElastiCache id ending on '-', is refused by aws-physical-names: tests/policies/test_name_rules.py.)
    _old_cut(monkeypatch)
    stack = "production-us-east-1-blue"
    code = main(["plan", "--program", str(repo), "--out", str(tmp_path / "out"), "--quiet", "--stack", stack,
                 "--stack-file", str(_stack_file(repo, tmp_path, stack)),
                 "--policy-config", str(repo / "policies" / "config" / "prod.json")])  # fmt: skip
    assert code == 2
    err = capsys.readouterr().err
    assert "inference-platform-production-us-east-1-/inference" in err
    assert f"stack {stack}: " in err, "the error names the stack whose name made the repository name"


def _plan_pair(repo, tmp_path, capsys):
    args = ["plan", "--program", str(repo), "--out", str(tmp_path / "out"), "--quiet"]
    for stack in (BLUE, GREEN):
        args += ["--stack", stack, "--stack-file", str(_stack_file(repo, tmp_path, stack))]
    code = main(args)
    return code, capsys.readouterr().err


def test_blue_and_green_collide_under_the_old_cut_and_the_plan_refuses_them(repo, tmp_path, capsys, monkeypatch):
    _old_cut(monkeypatch)
    code, err = _plan_pair(repo, tmp_path, capsys)
    assert code == 1
    assert f"stacks {BLUE} and {GREEN} would share" in err
    for what in ("aws:eks/cluster:Cluster name 'inference-platform-production-us-east-1a'",
                 "aws:ecr/repository:Repository name", "aws:kms/alias:Alias name", "aws:wafv2/webAcl:WebAcl name",
                 "aws:eks/nodeGroup:NodeGroup nodeGroupName", "aws:secretsmanager/secret:Secret name",
                 "aws:elasticache/replicationGroup:ReplicationGroup replicationGroupId"):  # fmt: skip
        assert what in err, what


def test_with_the_hash_rule_blue_and_green_share_no_physical_name(repo, tmp_path, capsys):
    _, err = _plan_pair(repo, tmp_path, capsys)
    assert "would share" not in err
    blue = json.loads((tmp_path / "out" / f"{BLUE}.json").read_text())
    cluster = next(r for r in blue["resources"] if r["type"] == "aws:eks/cluster:Cluster")
    assert cluster["inputs"]["name"] == "inference-platform-production-us-433ba2"


def test_one_stack_file_per_stack(repo, tmp_path, capsys):
    args = ["plan", "--program", str(repo), "--out", str(tmp_path), "--stack", "a", "--stack", "b"]
    assert main([*args, "--stack-file", str(_stack_file(repo, tmp_path, "a"))]) == 2
    assert "give one --stack per --stack-file" in capsys.readouterr().err


def test_the_shipped_stacks_share_no_physical_name(stack_plan):
    from inference_platform.policies.rules.names import colliding_names

    plans = {s: stack_plan(s).run.resources for s in ("dev", "prod", "npu")}
    for a, b in (("dev", "prod"), ("dev", "npu"), ("prod", "npu")):
        assert colliding_names(plans[a], plans[b]) == [], (a, b)
    # The same stack twice shares every fixed name: the check sees them (and not the autonames).
    shared = {c.what for c in colliding_names(plans["dev"], plans["dev"])}
    assert {"aws:eks/cluster:Cluster name", "aws:sqs/queue:Queue name", "aws:s3/bucket:Bucket bucketPrefix"} <= shared
    assert not any(w.startswith("aws:iam/role:Role") for w in shared)
