"""Stack names in physical names (issue 17 §5): name_prefix keeps short names as they are and hashes long
ones; a stack name AWS would refuse inside physical names is a settings problem naming the stack."""

from __future__ import annotations

import pytest

from inference_platform.settings import SettingsError, load_settings, stack_files
from tests.conftest import STACKS

TAGS = {"owner": "team", "costCenter": "cc-1"}


def _settings(stack: str, project: str = "inference-platform"):
    return load_settings({"tags": TAGS}, project=project, stack=stack, region="us-east-1")


@pytest.mark.parametrize("stack", STACKS)
def test_the_shipped_stacks_keep_their_prefix(stack):
    # A changed prefix renames (replaces) the EKS cluster, node groups, repositories, secrets...
    assert stack_files.load(stack).name_prefix == f"inference-platform-{stack}"


@pytest.mark.parametrize(
    ("stack", "prefix"),
    [
        ("production-us-east-1", "inference-platform-production-us-east-1"),  # 39: fits, unchanged
        ("production-us-east-1a", "inference-platform-production-us-east-1a"),  # 40: fits, unchanged
        ("production-us-east-1-blue", "inference-platform-production-us-bdc1c1"),  # old cut ended on '-'
        ("production-us-east-1a-blue", "inference-platform-production-us-433ba2"),
        ("production-us-east-1a-green", "inference-platform-production-us-2f644e"),
    ],
)
def test_long_stack_names_get_a_hash_of_the_whole_name(stack, prefix):
    assert _settings(stack).name_prefix == prefix
    assert len(prefix) <= 40 and not prefix.endswith("-")


def test_blue_and_green_no_longer_share_a_prefix():
    # The old rule (f"{project}-{stack}"[:40]) gave both "inference-platform-production-us-east-1a".
    blue, green = _settings("production-us-east-1a-blue"), _settings("production-us-east-1a-green")
    assert f"{blue.project}-{blue.stack}"[:40] == f"{green.project}-{green.stack}"[:40]
    assert blue.name_prefix != green.name_prefix


@pytest.mark.parametrize("stack", ["Prod", "prod_blue", "prod.blue", "prod--blue", "prod-", "-prod"])
def test_a_stack_name_aws_refuses_in_physical_names_is_a_problem_naming_it(stack):
    with pytest.raises(SettingsError) as err:
        _settings(stack)
    (problem,) = [p for p in err.value.problems if p.path == "stack"]
    assert repr(stack) in problem.message and "lowercase letters and digits" in problem.message


def test_a_project_name_that_cannot_start_physical_names_is_a_problem():
    with pytest.raises(SettingsError) as err:
        _settings("dev", project="1nference_Platform")
    assert any(p.path == "name (Pulumi.yaml)" and "'1nference_Platform'" in p.message for p in err.value.problems)


def test_inferctl_plan_refuses_such_a_stack_with_exit_2_naming_it(repo, tmp_path, capsys):
    from inference_platform.inferctl.cli import main

    stack_file = tmp_path / "Pulumi.Prod_Blue.yaml"
    stack_file.write_text((repo / "stacks" / "Pulumi.dev.yaml").read_text())
    code = main(["plan", "--program", str(repo), "--out", str(tmp_path / "out"), "--quiet",
                 "--stack", "Prod_Blue", "--stack-file", str(stack_file)])  # fmt: skip
    assert code == 2
    err = capsys.readouterr().err
    assert "stack name 'Prod_Blue'" in err
    assert not (tmp_path / "out" / "Prod_Blue.json").exists()
