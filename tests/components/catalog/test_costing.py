"""Cost of recorded resources: node pools at min/expected/max with spot and schedules, service prices,
free and unknown types, areas, and the region check."""

from __future__ import annotations

import pytest

from components.catalog import costing, prices
from components.catalog.costing import Usage

H = prices.HOURS_PER_MONTH
URN = "urn:pulumi:s::p::inference:compute:NodePool$aws:eks/nodeGroup:NodeGroup::{}"


def node_group(name="gpu", types=("p5.48xlarge",), lo=1, desired=1, hi=2, capacity="ON_DEMAND", pool="gpu", lt=None):
    inputs = {"instanceTypes": list(types), "capacityType": capacity, "labels": {"node-pool": pool},
              "scalingConfig": {"minSize": float(lo), "desiredSize": float(desired), "maxSize": float(hi)}}  # fmt: skip
    if lt:
        inputs["launchTemplate"] = {"id": lt, "version": "1"}
    return {"urn": URN.format(name), "type": "aws:eks/nodeGroup:NodeGroup", "name": name, "custom": True,
            "id": f"{name}-id", "inputs": inputs}  # fmt: skip


def launch_template(id_="lt-1", gib=500):
    return {"urn": "urn:pulumi:s::p::aws:ec2/launchTemplate:LaunchTemplate::lt", "name": "lt", "custom": True,
            "type": "aws:ec2/launchTemplate:LaunchTemplate", "id": id_,
            "inputs": {"blockDeviceMappings": [{"ebs": {"volumeSize": float(gib), "volumeType": "gp3"}}]}}  # fmt: skip


def deployment(pool="gpu", replicas=3, gpus=4):
    return {"urn": "urn:pulumi:s::p::kubernetes:apps/v1:Deployment::d", "type": "kubernetes:apps/v1:Deployment",
            "name": "d", "custom": True,
            "inputs": {"spec": {"replicas": float(replicas), "template": {"spec": {
                "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "node-pool", "operator": "In", "values": [pool]}]}]}}},
                "containers": [{"resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}]}}}}}  # fmt: skip


def res(type_, name="r", **inputs):
    return {"urn": f"urn:pulumi:s::p::{type_}::{name}", "type": type_, "name": name, "custom": True, "inputs": inputs}


def test_node_group_min_expected_max_with_its_volumes():
    e = costing.estimate([node_group(lt="lt-1"), launch_template()], region="us-east-1")
    (line,) = [x for x in e.lines if x.type.endswith("NodeGroup")]
    per_node = 55.04 * H + 500 * 0.08
    assert (line.monthly_min, line.monthly_expected, line.monthly_max) == pytest.approx(
        (per_node, per_node, 2 * per_node)
    )
    assert line.category == "EC2 accelerators" and line.area == "compute"


def test_spot_workload_demand_zonal_shards_and_night_schedule():
    spot = costing.estimate([node_group(capacity="SPOT")], region="us-east-1").lines[0]
    assert spot.monthly_expected == pytest.approx(55.04 * H * prices.DEFAULT_SPOT_FACTOR + 20 * 0.08)
    # 3 replicas x 4 GPUs over two zonal groups of one pool: 6 GPUs each -> 1 node each.
    groups = [node_group("a", lo=1, desired=1, hi=4), node_group("b", lo=1, desired=1, hi=4)]
    e = costing.estimate([*groups, deployment(replicas=3, gpus=4)], region="us-east-1")
    assert all("expected 1 " in x.basis for x in e.lines if x.type.endswith("NodeGroup"))
    e = costing.estimate([node_group(lo=0, desired=0, hi=4), deployment(replicas=4, gpus=8)], region="us-east-1")
    assert "expected 4 " in e.lines[0].basis
    night = costing.estimate([node_group(lo=1, desired=1, hi=4), deployment(replicas=4, gpus=8)],
                             region="us-east-1", usage=Usage(night_hours=12))  # fmt: skip
    assert night.lines[0].monthly_expected == pytest.approx(e.lines[0].monthly_max * 2.5 / 4, rel=1e-3)


def test_services_free_and_unknown():
    items = [
        res("aws:eks/cluster:Cluster"),
        res("aws:ec2/natGateway:NatGateway"),
        res("aws:ec2/vpcEndpoint:VpcEndpoint", "ep", vpcEndpointType="Interface", subnetIds=["a", "b", "c"]),
        res("aws:ec2/vpcEndpoint:VpcEndpoint", "s3", vpcEndpointType="Gateway"),
        res(
            "aws:fsx/lustreFileSystem:LustreFileSystem",
            deploymentType="PERSISTENT_2",
            storageCapacity=2400.0,
            perUnitStorageThroughput=500.0,
        ),
        res("aws:kms/key:Key"),
        res("aws:secretsmanager/secret:Secret"),
        res("aws:lb/loadBalancer:LoadBalancer", loadBalancerType="application"),
        res("aws:elasticache/replicationGroup:ReplicationGroup", nodeType="cache.t4g.small", numCacheClusters=2.0),
        res("aws:iam/role:Role"),
        res("kubernetes:core/v1:Service"),
        res("aws:sagemaker/endpoint:Endpoint", "mystery"),
    ]
    e = costing.estimate(items, region="us-east-1")
    by = {(x.type, x.name): x for x in e.lines}
    assert by[("aws:eks/cluster:Cluster", "r")].monthly_expected == pytest.approx(73.0)
    assert by[("aws:ec2/natGateway:NatGateway", "r")].monthly_expected == pytest.approx(0.045 * H + 0.045 * 100)
    assert by[("aws:ec2/vpcEndpoint:VpcEndpoint", "ep")].monthly_expected == pytest.approx(3 * 0.01 * H + 0.5)
    assert by[("aws:ec2/vpcEndpoint:VpcEndpoint", "s3")].status == "free"
    assert by[("aws:fsx/lustreFileSystem:LustreFileSystem", "r")].monthly_expected == pytest.approx(2400 * 0.34)
    assert by[("aws:elasticache/replicationGroup:ReplicationGroup", "r")].monthly_expected == pytest.approx(
        2 * 0.032 * H
    )
    assert by[("aws:iam/role:Role", "r")].status == "free"
    assert by[("kubernetes:core/v1:Service", "r")].status == "free"
    (unknown,) = e.unknown
    assert unknown.name == "mystery" and unknown.monthly_expected is None
    assert e.monthly_expected == pytest.approx(sum(x.monthly_expected or 0 for x in e.lines))


def test_unknown_instance_types_are_unknown_not_zero():
    e = costing.estimate([node_group(types=("x9.huge",))], region="us-east-1")
    assert e.lines[0].status == "unknown" and e.monthly_expected == 0 and e.unknown


def test_region_must_be_priced():
    with pytest.raises(prices.PriceError, match="ap-south-1"):
        costing.estimate([], region="ap-south-1")
    assert costing.plan_region({"outputs": {"region": "us-west-2"}, "resources": []}) == "us-west-2"
    assert (
        costing.plan_region({"resources": [res("aws:ec2/subnet:Subnet", availabilityZone="us-east-2b")]}) == "us-east-2"
    )


def test_area_comes_from_the_outermost_component():
    assert costing.area_of("urn:pulumi:s::p::inference:network:Network$aws:ec2/vpc:Vpc::v") == "network"
    assert costing.area_of("urn:pulumi:s::p::aws:s3/bucket:Bucket::b") == "stack"


def test_usage_from_camel_case_config():
    u = Usage.from_config({"natGibPerGateway": 1000, "s3ModelGib": 2000, "nightHours": 8, "other": 1})
    assert (u.nat_gib_per_gateway, u.s3_model_gib, u.night_hours) == (1000, 2000, 8)


def test_ingresses_of_one_alb_group_are_one_load_balancer():
    def ingress(name):
        return res("kubernetes:networking.k8s.io/v1:Ingress", name, metadata={"name": name, "namespace": "edge"},
                   spec={"ingressClassName": "alb"})  # fmt: skip

    items = [
        res("kubernetes:networking.k8s.io/v1:IngressClass", "cls", metadata={"name": "alb"},
            spec={"controller": "ingress.k8s.aws/alb", "parameters": {"name": "params"}}),
        res("kubernetes:elbv2.k8s.aws/v1beta1:IngressClassParams", "p", metadata={"name": "params"},
            spec={"group": {"name": "edge"}}),
        ingress("http"),
        ingress("grpc"),
    ]  # fmt: skip
    lines = [x for x in costing.estimate(items, region="us-east-1").lines if x.type.endswith(":Ingress")]
    assert [x.status for x in lines] == ["priced", "free"]
    assert lines[0].monthly_expected == pytest.approx(0.0225 * H + 0.008 * H)
