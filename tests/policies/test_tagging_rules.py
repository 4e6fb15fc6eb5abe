"""required-tags: a passing and failing fixture, and the required set from policy config."""

from __future__ import annotations

import pulumi
import pulumi_aws as aws

from inference_platform.components.common.tagging import default_tags_transform

TAGS = {"project": "p", "stack": "s", "owner": "o", "cost-center": "c"}


def test_tagged_resources_pass(violations):
    def program():
        pulumi.runtime.register_resource_transform(default_tags_transform(TAGS))
        aws.ec2.Vpc("v", cidr_block="10.0.0.0/16")
        aws.kms.Alias("not-taggable", name="alias/x", target_key_id="k")

    assert violations(program, "required-tags") == []


def test_missing_or_empty_tags_fail(violations):
    def program():
        aws.ec2.Vpc("untagged", cidr_block="10.0.0.0/16")
        aws.ec2.Vpc("empty-owner", cidr_block="10.1.0.0/16", tags={**TAGS, "owner": " "})

    found = {v.urn.split("::")[-1]: v.message for v in violations(program, "required-tags")}
    assert set(found) == {"untagged", "empty-owner"}
    assert "project, stack, owner, cost-center" in found["untagged"] and "tags owner (" in found["empty-owner"]
    # The fix is named where the violation is read (issue 28: a new user's plan failed 19 times saying nothing).
    assert "default_tags_transform" in found["untagged"]


def test_required_set_comes_from_policy_config(violations):
    def program():
        aws.ec2.Vpc("v", cidr_block="10.0.0.0/16", tags=TAGS)

    (found,) = violations(program, "required-tags", {"requiredTags": ["owner", "data-classification"]})
    assert "data-classification" in found.message
