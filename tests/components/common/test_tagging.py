"""Default tags: which types are taggable, and the transform the engine (and the plan) runs."""

from __future__ import annotations

import pulumi
import pulumi_aws as aws
import pytest

from inference_platform.components.common.tagging import default_tags_transform, is_taggable, merge_tags

DEFAULTS = {"project": "p", "stack": "s", "owner": "o", "cost-center": "c"}


@pytest.mark.parametrize(
    ("token", "taggable"),
    [
        ("aws:ec2/vpc:Vpc", True),
        ("aws:kms/key:Key", True),
        ("aws:eks/nodeGroup:NodeGroup", True),
        ("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule", True),
        ("aws:kms/alias:Alias", False),
        ("aws:iam/rolePolicy:RolePolicy", False),
        ("aws:ec2/routeTableAssociation:RouteTableAssociation", False),
        ("aws:autoscaling/group:Group", False),  # its `tags` is a list of blocks, not a map
        ("kubernetes:core/v1:Namespace", False),
        ("aws:nosuch/thing:Thing", False),
    ],
)
def test_taggable_types(token, taggable):
    assert is_taggable(token) is taggable


def test_resource_tags_win_over_defaults():
    assert merge_tags(DEFAULTS, {"owner": "team-b", "Name": "x"}) == {**DEFAULTS, "owner": "team-b", "Name": "x"}
    assert merge_tags(DEFAULTS, None) == DEFAULTS


def test_transform_tags_custom_taggable_resources_only():
    transform = default_tags_transform(DEFAULTS)
    opts = pulumi.ResourceOptions()
    vpc = transform(pulumi.ResourceTransformArgs(True, "aws:ec2/vpc:Vpc", "v", {"tags": {"Name": "v"}}, opts))
    assert vpc.props["tags"] == {**DEFAULTS, "Name": "v"}
    assert transform(pulumi.ResourceTransformArgs(True, "aws:kms/alias:Alias", "a", {}, opts)) is None
    assert transform(pulumi.ResourceTransformArgs(False, "inference:network:Network", "n", {}, opts)) is None


def test_the_recorded_inputs_are_what_the_engine_would_send(run_components):
    def program():
        pulumi.runtime.register_resource_transform(default_tags_transform(DEFAULTS))
        aws.ec2.Vpc("v", cidr_block="10.0.0.0/16", tags={"Name": "v"})
        aws.ec2.RouteTable("rt", vpc_id="vpc-1")

    run = run_components(program)
    by_name = {r.name: r for r in run.resources}
    assert by_name["v"].inputs["tags"] == {**DEFAULTS, "Name": "v"}
    assert by_name["rt"].inputs["tags"] == DEFAULTS
