"""The Network component under the mock engine: subnets per zone and tier, NAT modes, routes,
the S3 gateway endpoint and encrypted flow logs."""

from __future__ import annotations

import ipaddress
import json

import pytest

from inference_platform.components.common.errors import ComponentArgsError
from inference_platform.components.network.vpc import FlowLogsArgs, Network, NetworkArgs
from tests.conftest import by_type, one

ZONES = ["us-west-2a", "us-west-2b", "us-west-2c"]
LOGS_KEY = "arn:aws:kms:us-west-2:123456789012:key/logs"


def network_args(**overrides) -> NetworkArgs:
    values = dict(
        cidr="10.1.0.0/16",
        availability_zones=ZONES,
        region="us-west-2",
        cluster_name="demo",
        account_id="123456789012",
        flow_logs=FlowLogsArgs(kms_key_arn=LOGS_KEY, retention_days=90),
    )
    values.update(overrides)
    return NetworkArgs(**values)


@pytest.fixture(scope="module")
def resources():
    from inference_platform.offline_plan.engine import run_function

    return run_function(lambda: Network("net", network_args(nat_gateways="perAz", intra_subnets=True))).resources


def test_one_subnet_per_tier_and_zone_named_by_zone(resources):
    subnets = by_type(resources, "aws:ec2/subnet:Subnet")
    assert sorted(s.name for s in subnets) == sorted(
        f"net-{t}-{z}" for t in ("private", "public", "intra") for z in ZONES
    )
    for s in subnets:
        assert s.inputs["availabilityZone"] == s.name.split("-", 2)[2]
        assert s.inputs["mapPublicIpOnLaunch"] is False


def test_subnets_are_inside_the_vpc_and_disjoint(resources):
    vpc = ipaddress.IPv4Network(one(resources, "net-vpc").inputs["cidrBlock"])
    cidrs = [ipaddress.IPv4Network(s.inputs["cidrBlock"]) for s in by_type(resources, "aws:ec2/subnet:Subnet")]
    assert all(c.subnet_of(vpc) for c in cidrs)
    assert all(not a.overlaps(b) for i, a in enumerate(cidrs) for b in cidrs[i + 1 :])


def test_subnets_carry_load_balancer_and_discovery_tags(resources):
    public = one(resources, "net-public-us-west-2a").inputs["tags"]
    private = one(resources, "net-private-us-west-2a").inputs["tags"]
    assert public["kubernetes.io/role/elb"] == "1"
    assert private["kubernetes.io/role/internal-elb"] == "1"
    assert private["karpenter.sh/discovery"] == "demo"
    assert "kubernetes.io/role/elb" not in one(resources, "net-intra-us-west-2a").inputs["tags"]


def test_per_az_nat_routes_each_private_zone_through_its_own_gateway(resources):
    nats = {r.name: r for r in by_type(resources, "aws:ec2/natGateway:NatGateway")}
    assert sorted(nats) == [f"net-nat-{z}" for z in ZONES]
    for zone in ZONES:
        route = one(resources, f"net-private-{zone}-default")
        assert route.property_dependencies["natGatewayId"] == [nats[f"net-nat-{zone}"].urn]
        nat_subnet = nats[f"net-nat-{zone}"].property_dependencies["subnetId"]
        assert nat_subnet == [one(resources, f"net-public-{zone}").urn]


@pytest.mark.parametrize(("mode", "expected"), [("single", 1), ("perAz", 3), ("none", 0)])
def test_nat_gateway_count_follows_the_mode(run_components, mode, expected):
    run = run_components(lambda: Network("net", network_args(nat_gateways=mode)))
    assert len(by_type(run.resources, "aws:ec2/natGateway:NatGateway")) == expected
    assert len(by_type(run.resources, "aws:ec2/eip:Eip")) == expected
    private_defaults = [r for r in by_type(run.resources, "aws:ec2/route:Route") if "private" in r.name]
    assert len(private_defaults) == (0 if mode == "none" else 3)


def test_intra_subnets_have_no_internet_route(resources):
    intra_rt = one(resources, "net-intra-rt").urn
    routes = by_type(resources, "aws:ec2/route:Route")
    assert not [r for r in routes if intra_rt in r.property_dependencies.get("routeTableId", [])]


def test_s3_gateway_endpoint_serves_private_and_intra_route_tables(resources):
    endpoint = one(resources, "net-s3")
    assert endpoint.inputs["vpcEndpointType"] == "Gateway"
    assert endpoint.inputs["serviceName"] == "com.amazonaws.us-west-2.s3"
    tables = set(endpoint.property_dependencies["routeTableIds"])
    expected = {one(resources, f"net-private-{z}-rt").urn for z in ZONES} | {one(resources, "net-intra-rt").urn}
    assert tables == expected


def test_flow_logs_go_to_an_encrypted_group_with_retention(resources):
    group = one(resources, "net-flow-logs")
    assert group.inputs["kmsKeyId"] == LOGS_KEY
    assert group.inputs["retentionInDays"] == 90
    flow = one(resources, "net-flow-log")
    assert flow.property_dependencies["vpcId"] == [one(resources, "net-vpc").urn]
    assert flow.inputs["trafficType"] == "ALL"
    trust = json.loads(one(resources, "net-flow-logs-role").inputs["assumeRolePolicy"])
    assert trust["Statement"][0]["Condition"] == {"StringEquals": {"aws:SourceAccount": "123456789012"}}
    policy = json.loads(one(resources, "net-flow-logs-policy").inputs["policy"])
    assert all(r.startswith("arn:aws:logs:") for r in policy["Statement"][0]["Resource"])


def test_default_security_group_is_stripped(resources):
    default = one(resources, "net-default-sg")
    assert default.inputs.get("ingress", []) == [] and default.inputs.get("egress", []) == []


def test_every_child_is_parented_to_the_component(resources):
    component = one(resources, "net")
    assert all(r.parent == component.urn for r in resources if r is not component)


def test_bad_arguments_are_reported_together(run_components):
    with pytest.raises(ComponentArgsError) as err:
        Network("net", network_args(availability_zones=["us-west-2a", "us-west-2a", "eu-west-1a"], nat_gateways="two"))
    text = str(err.value)
    assert "repeats a zone" in text and "not zones of us-west-2" in text and "nat_gateways" in text
