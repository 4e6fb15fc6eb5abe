"""The controllers' IAM documents: the Load Balancer Controller's published policy, narrowed to this
cluster (tag), account, region and the features in use, loses no permission the controller needs."""

from __future__ import annotations

import pytest

from inference_platform.components.edge.iam_documents import (
    CLUSTER_TAG,
    external_dns_policy,
    load_balancer_controller_policy,
    published_load_balancer_controller_policy,
)
from inference_platform.policies.rules.iam import problems

SCOPE = {"cluster_name": "inference-platform-prod", "account_id": "123456789012", "region": "us-east-1"}
DROPPED = {
    "waf-regional:AssociateWebACL",
    "waf-regional:DisassociateWebACL",
    "shield:CreateProtection",
    "shield:DeleteProtection",
}


def actions(policy):
    return {a for s in policy["Statement"] for a in (s["Action"] if isinstance(s["Action"], list) else [s["Action"]])}


def test_every_published_action_survives_except_the_unused_features():
    published = published_load_balancer_controller_policy()
    assert actions(load_balancer_controller_policy(**SCOPE)) == actions(published) - DROPPED


def test_no_write_is_left_on_every_resource():
    assert problems(load_balancer_controller_policy(**SCOPE)) == []
    assert problems(published_load_balancer_controller_policy())  # the published one would not pass


def test_every_cluster_tag_condition_names_this_cluster():
    policy = load_balancer_controller_policy(**SCOPE)
    published = published_load_balancer_controller_policy()
    loose = sum(
        1
        for s in published["Statement"]
        for key, value in s.get("Condition", {}).get("Null", {}).items()
        if CLUSTER_TAG in key and value == "false"
    )
    scoped = [
        value
        for s in policy["Statement"]
        for key, value in s.get("Condition", {}).get("StringEquals", {}).items()
        if CLUSTER_TAG in key
    ]
    assert loose > 0 and len(scoped) >= loose and set(scoped) == {"inference-platform-prod"}
    for statement in policy["Statement"]:
        for key, value in statement.get("Condition", {}).get("Null", {}).items():
            assert value == "true", (key, statement)  # only "the request does not change the tag" remains


def test_arns_name_this_partition_account_and_region():
    policy = load_balancer_controller_policy(**SCOPE, partition="aws-us-gov")
    for statement in policy["Statement"]:
        resources = statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
        for arn in resources:
            if arn != "*":
                assert arn.startswith("arn:aws-us-gov:")
                assert ":*:*:" not in arn and "123456789012" in arn


def test_a_cluster_name_is_required():
    with pytest.raises(ValueError, match="cluster_name"):
        load_balancer_controller_policy(cluster_name="", account_id="1", region="us-east-1")


def test_external_dns_writes_only_the_api_zone():
    policy = external_dns_policy(hosted_zone_id="Z0EXAMPLE", partition="aws")
    (write,) = [s for s in policy["Statement"] if "route53:ChangeResourceRecordSets" in s["Action"]]
    assert write["Resource"] == ["arn:aws:route53:::hostedzone/Z0EXAMPLE"]
    assert problems(policy) == []
