"""Security groups: world ingress only on the load balancer's 443/80, serving ports only from the
load balancer, metrics only from the VPC, all traffic between nodes, every rule described."""

from __future__ import annotations

import pytest

from inference_platform.components.common.errors import ComponentArgsError
from inference_platform.components.network.security_groups import (
    ROLE_LOAD_BALANCER,
    ROLE_TAG,
    SecurityGroups,
    SecurityGroupsArgs,
)
from tests.conftest import by_type, one

INGRESS = "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"
EGRESS = "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule"


def groups(run_components, **overrides):
    values = dict(vpc_id="vpc-1", vpc_cidr="10.0.0.0/16", cluster_name="demo", allowed_ingress_cidrs=["0.0.0.0/0"])
    values.update(overrides)
    return run_components(lambda: SecurityGroups("sg", SecurityGroupsArgs(**values))).resources


def test_world_ingress_only_reaches_the_load_balancer_on_443_and_80(run_components):
    resources = groups(run_components)
    lb = one(resources, "sg-lb")
    world = [r for r in by_type(resources, INGRESS) if r.inputs.get("cidrIpv4") == "0.0.0.0/0"]
    assert sorted(r.inputs["fromPort"] for r in world) == [80, 443]
    assert all(r.property_dependencies["securityGroupId"] == [lb.urn] for r in world)
    assert lb.inputs["tags"][ROLE_TAG] == ROLE_LOAD_BALANCER


def test_no_ingress_at_all_without_allowed_cidrs(run_components):
    resources = groups(run_components, allowed_ingress_cidrs=[])
    lb_urn = one(resources, "sg-lb").urn
    assert not [r for r in by_type(resources, INGRESS) if r.property_dependencies["securityGroupId"] == [lb_urn]]


def test_port_80_only_when_redirect_is_wanted(run_components):
    resources = groups(run_components, allowed_ingress_cidrs=["198.51.100.0/24"], redirect_http=False)
    ports = [r.inputs["fromPort"] for r in by_type(resources, INGRESS) if r.inputs.get("cidrIpv4") == "198.51.100.0/24"]
    assert ports == [443]


def test_the_load_balancer_opens_no_triton_port_and_metrics_come_only_from_the_vpc(run_components):
    """Issue 28 R11: the edge targets Envoy through the controller's backend security group; Triton's 8000/8001
    are opened to nothing (they were, from the load balancer, on every node)."""
    resources = groups(run_components)
    nodes, lb = one(resources, "sg-nodes"), one(resources, "sg-lb")
    on_nodes = [r for r in by_type(resources, INGRESS) if r.property_dependencies["securityGroupId"] == [nodes.urn]]
    by_port = {r.inputs.get("fromPort"): r for r in on_nodes}
    assert set(by_port) == {8002, None}
    assert by_port[8002].inputs["cidrIpv4"] == "10.0.0.0/16"
    assert by_port[None].inputs["ipProtocol"] == "-1"
    assert by_port[None].property_dependencies["referencedSecurityGroupId"] == [nodes.urn]
    rules = by_type(resources, INGRESS) + by_type(resources, EGRESS)
    touching_lb = [r for r in rules if lb.urn in (r.property_dependencies.get("securityGroupId", []) +
                                                  r.property_dependencies.get("referencedSecurityGroupId", []))]  # fmt: skip
    assert {(r.type, r.inputs["fromPort"]) for r in touching_lb} == {(INGRESS, 443), (INGRESS, 80)}


def test_every_rule_has_a_description_and_the_node_group_is_discoverable(run_components):
    resources = groups(run_components)
    rules = by_type(resources, INGRESS) + by_type(resources, EGRESS)
    assert rules and all(r.inputs.get("description") for r in rules)
    assert one(resources, "sg-nodes").inputs["tags"]["karpenter.sh/discovery"] == "demo"


def test_endpoint_group_admits_https_from_the_vpc_only(run_components):
    resources = groups(run_components)
    endpoints = one(resources, "sg-endpoints")
    rules = [r for r in by_type(resources, INGRESS) if r.property_dependencies["securityGroupId"] == [endpoints.urn]]
    assert [(r.inputs["fromPort"], r.inputs["cidrIpv4"]) for r in rules] == [(443, "10.0.0.0/16")]


def test_bad_arguments_are_reported_together():
    with pytest.raises(ComponentArgsError) as err:
        SecurityGroups(
            "sg",
            SecurityGroupsArgs(
                vpc_id="vpc-1",
                vpc_cidr="10.0.0.0/33",
                cluster_name="c",
                allowed_ingress_cidrs=["x", "x"],
                metrics_port=0,
            ),
        )
    text = str(err.value)
    assert "10.0.0.0/33" in text and "'x'" in text and "repeats" in text and "metrics=0" in text
