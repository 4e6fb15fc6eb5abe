"""KMS keys: one per purpose, rotation on, deletion window, aliases, named principals only."""

from __future__ import annotations

import json

import pytest

from inference_platform.components.keys.kms import PURPOSES, Keys, KeysArgs, key_policy
from inference_platform.policies.rules.keys import wildcard_principals
from tests.conftest import by_type, one

ADMIN = "arn:aws:iam::123456789012:role/platform-admin"


def keys_args(**overrides) -> KeysArgs:
    values = dict(alias_prefix="demo-dev", account_id="123456789012", region="us-west-2", admin_role_arns=[ADMIN])
    values.update(overrides)
    return KeysArgs(**values)


@pytest.mark.parametrize("purpose", PURPOSES)
def test_key_policies_name_every_principal(purpose):
    policy = key_policy(purpose, keys_args())
    assert wildcard_principals(policy) == []
    principals = [s["Principal"] for s in policy["Statement"]]
    assert {"AWS": "arn:aws:iam::123456789012:root"} in principals
    assert {"AWS": [ADMIN]} in principals


def test_admins_administer_but_never_use_key_material():
    admin = next(s for s in key_policy("storage", keys_args())["Statement"] if s["Sid"] == "AllowKeyAdministration")
    assert not {"kms:Decrypt", "kms:Encrypt", "kms:GenerateDataKey", "kms:*"} & set(admin["Action"])


def test_only_the_logs_key_admits_cloudwatch_logs_scoped_by_encryption_context():
    logs = key_policy("logs", keys_args())["Statement"][-1]
    assert logs["Principal"] == {"Service": "logs.us-west-2.amazonaws.com"}
    assert logs["Condition"] == {
        "ArnLike": {"kms:EncryptionContext:aws:logs:arn": "arn:aws:logs:us-west-2:123456789012:log-group:*"}
    }
    for other in ("cluster", "storage"):
        assert all("Service" not in s["Principal"] for s in key_policy(other, keys_args())["Statement"])


def test_no_admin_statement_without_admin_roles():
    sids = [s["Sid"] for s in key_policy("cluster", keys_args(admin_role_arns=()))["Statement"]]
    assert sids == ["EnableIamPolicies"]


def test_gov_cloud_keys_use_the_gov_partition():
    policy = key_policy("logs", keys_args(partition="aws-us-gov", region="us-gov-west-1"))
    assert policy["Statement"][0]["Principal"] == {"AWS": "arn:aws-us-gov:iam::123456789012:root"}


@pytest.mark.parametrize(("protect", "window"), [(True, 30), (False, 7)])
def test_component_creates_rotating_keys_and_aliases(run_components, protect, window):
    run = run_components(lambda: Keys("keys", keys_args(protect=protect, deletion_window_days=window)))
    keys = by_type(run.resources, "aws:kms/key:Key")
    assert sorted(k.name for k in keys) == [f"keys-{p}" for p in sorted(PURPOSES)]
    for key in keys:
        assert key.inputs["enableKeyRotation"] is True
        assert key.inputs["deletionWindowInDays"] == window
        assert key.protect is protect and key.retain_on_delete is protect
        assert wildcard_principals(json.loads(key.inputs["policy"])) == []
    aliases = sorted(a.inputs["name"] for a in by_type(run.resources, "aws:kms/alias:Alias"))
    assert aliases == [f"alias/demo-dev/{p}" for p in sorted(PURPOSES)]
    alias = one(run.resources, "keys-logs-alias")
    assert alias.property_dependencies["targetKeyId"] == [one(run.resources, "keys-logs").urn]
