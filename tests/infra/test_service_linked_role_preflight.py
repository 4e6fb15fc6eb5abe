"""Issue 28 R7: a fresh account's first `up` failed creating the storage key, whose policy names
AWSServiceRoleForAutoScaling (KMS refuses a policy naming a role that does not exist; AWS creates the role with an
account's first Auto Scaling group). The program now looks the role up before anything is created (the preflight in
infra/foundation.py) and either creates it (keys.createAutoscalingServiceRole, tagged as the stack's) or stops with
exit 2 naming the key; creating it where the account already has one (IAM: "has been taken") is refused the same
way, unless this stack created it."""

from __future__ import annotations

import dataclasses
import json

import pytest
import yaml

from inference_platform.components.keys.kms import SERVICE_ROLE_MARKER
from inference_platform.inferctl.cli import main
from inference_platform.offline_plan import mock_context
from tests.conftest import REPO

ROLE = "AWSServiceRoleForAutoScaling"
KEY = "inference-platform:keys"


@pytest.fixture
def account(monkeypatch):
    """Sets the offline account's service-linked roles (name -> tags) for the plans this test runs."""
    original = mock_context.MockContext.for_region.__func__

    def use(roles):
        def for_region(cls, name):
            return dataclasses.replace(original(cls, name), service_linked_roles=roles)

        monkeypatch.setattr(mock_context.MockContext, "for_region", classmethod(for_region))

    return use


def stack_file(tmp_path, *, create: bool):
    doc = yaml.safe_load((REPO / "stacks" / "Pulumi.prod.yaml").read_text())
    doc["config"][KEY] = {**doc["config"].get(KEY, {}), "createAutoscalingServiceRole": create}
    path = tmp_path / "Pulumi.prod.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def plan(tmp_path, capsys, *, create: bool):
    out = tmp_path / f"plan-{create}"
    code = main(
        ["plan", "--stack", "prod", "--stack-file", str(stack_file(tmp_path, create=create)), "--out", str(out)]
    )
    return code, capsys.readouterr()


def test_a_fresh_account_stops_before_anything_naming_the_key_and_the_fix(account, tmp_path, capsys):
    account({})
    code, out = plan(tmp_path, capsys, create=False)
    assert code == 2
    assert f"keys.createAutoscalingServiceRole: {ROLE} does not exist in account 123456789012" in out.err
    assert "aws iam create-service-linked-role --aws-service-name autoscaling.amazonaws.com" in out.err
    assert "Traceback" not in out.err


def test_a_fresh_account_with_the_key_set_creates_the_role_before_the_keys(account, tmp_path, capsys):
    account({})
    code, _ = plan(tmp_path, capsys, create=True)
    assert code == 0
    resources = json.loads((tmp_path / "plan-True" / "prod.json").read_text())["resources"]
    (role,) = [r for r in resources if r["type"] == "aws:iam/serviceLinkedRole:ServiceLinkedRole"]
    assert role["inputs"]["awsServiceName"] == "autoscaling.amazonaws.com" and role["retainOnDelete"] is True
    assert role["inputs"]["tags"][SERVICE_ROLE_MARKER] == "inference-platform-prod"
    (storage,) = [r for r in resources if r["type"] == "aws:kms/key:Key" and r["name"] == "keys-storage"]
    assert role["urn"] in storage["dependencies"]


def test_the_key_set_where_the_account_has_the_role_already_is_refused(account, tmp_path, capsys):
    account({ROLE: {}})
    code, out = plan(tmp_path, capsys, create=True)
    assert code == 2 and "already exists in account 123456789012 and this stack did not create it" in out.err


def test_the_stack_that_created_the_role_keeps_it_on_later_runs(account, tmp_path, capsys):
    account({ROLE: {SERVICE_ROLE_MARKER: "inference-platform-prod"}})
    code, out = plan(tmp_path, capsys, create=True)
    assert code == 0, out.err
    account({ROLE: {SERVICE_ROLE_MARKER: "another-stack"}})
    code, _ = plan(tmp_path, capsys, create=True)
    assert code == 2


def test_an_account_that_has_the_role_plans_as_before(account, tmp_path, capsys):
    account({ROLE: {}})
    assert plan(tmp_path, capsys, create=False)[0] == 0
