"""The whole program for every shipped stack, as `make plan` runs it."""

from __future__ import annotations

import ipaddress
import json

import pytest

from inference_platform.components.common.tagging import is_taggable
from inference_platform.policies.rules.tagging import REQUIRED_TAGS
from tests.conftest import STACKS, by_type

EXPECTED = {
    # stack: (region, zones, NAT gateways, interface endpoints): everything the cluster calls (base 9,
    # autoscaling and eks for managed pools, fsx for the cache, sqs for the batch lane; catalog/endpoint_services.py).
    "dev": ("us-west-2", 2, 1, 0),
    "prod": ("us-east-1", 3, 3, 12),  # no FSx cache: no fsx endpoint
    "npu": ("us-east-2", 3, 3, 13),
}


@pytest.mark.parametrize("stack", STACKS)
def test_subnets_are_inside_the_vpc_disjoint_and_spread_over_the_zones(stack_plan, stack):
    resources = stack_plan(stack).run.resources
    region, zones, _, _ = EXPECTED[stack]
    (vpc,) = by_type(resources, "aws:ec2/vpc:Vpc")
    network = ipaddress.IPv4Network(vpc.inputs["cidrBlock"])
    subnets = by_type(resources, "aws:ec2/subnet:Subnet")
    cidrs = [ipaddress.IPv4Network(s.inputs["cidrBlock"]) for s in subnets]
    assert all(c.subnet_of(network) for c in cidrs)
    assert all(not a.overlaps(b) for i, a in enumerate(cidrs) for b in cidrs[i + 1 :])
    private = [s for s in subnets if s.inputs["tags"]["tier"] == "private"]
    assert len({s.inputs["availabilityZone"] for s in private}) == zones
    assert all(s.inputs["availabilityZone"].startswith(region) for s in subnets)


@pytest.mark.parametrize("stack", STACKS)
def test_nat_gateways_and_endpoints_per_stack(stack_plan, stack):
    resources = stack_plan(stack).run.resources
    _, _, nats, interface = EXPECTED[stack]
    assert len(by_type(resources, "aws:ec2/natGateway:NatGateway")) == nats
    endpoints = by_type(resources, "aws:ec2/vpcEndpoint:VpcEndpoint")
    assert [e.inputs["vpcEndpointType"] for e in endpoints].count("Interface") == interface
    assert [e.inputs["serviceName"] for e in endpoints if e.inputs["vpcEndpointType"] == "Gateway"] == [
        f"com.amazonaws.{EXPECTED[stack][0]}.s3"
    ]


@pytest.mark.parametrize("stack", STACKS)
def test_every_taggable_resource_carries_the_required_tags(stack_plan, stack):
    plan = stack_plan(stack)
    taggable = [r for r in plan.run.resources if r.custom and is_taggable(r.type)]
    assert taggable
    for r in taggable:
        tags = r.inputs.get("tags", {})
        assert all(tags.get(t) for t in REQUIRED_TAGS), f"{r.urn} lacks tags: {tags}"
        assert tags["stack"] == stack and tags["project"] == "inference-platform"


@pytest.mark.parametrize("stack", STACKS)
def test_shipped_stacks_pass_every_policy(stack_plan, stack):
    assert stack_plan(stack).violations == []


def test_production_keys_are_protected_and_development_keys_are_not(stack_plan):
    for stack, protected in (("dev", False), ("prod", True), ("npu", True)):
        keys = by_type(stack_plan(stack).run.resources, "aws:kms/key:Key")
        assert len(keys) == 3
        assert all(k.protect is protected and k.retain_on_delete is protected for k in keys)
        assert {k.inputs["deletionWindowInDays"] for k in keys} == {30 if protected else 7}


def test_urns_take_the_engine_form(stack_plan):
    for r in stack_plan("dev").run.resources:
        assert "pulumi:pulumi:Stack$" not in r.urn
        assert r.urn.startswith("urn:pulumi:dev::inference-platform::")


def test_no_plaintext_secret_in_the_plan_json(tmp_path, repo):
    """A program that puts a secret config value on a resource: the plan shows `[secret]` only."""
    from inference_platform.inferctl.plan.command import make_plan
    from inference_platform.inferctl.plan.report import to_json

    plan = make_plan(repo / "tests" / "fixtures" / "secret_program", "test", secret_values={"token": "s3cr3t-VALUE-42"})
    text = json.dumps(to_json(plan))
    assert "s3cr3t-VALUE-42" not in text
    assert "[secret]" in text
