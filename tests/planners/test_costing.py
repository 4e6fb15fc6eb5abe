"""Cost of recorded resources: node pools at min/expected/max with spot and schedules, service prices,
free and unknown types, areas, and the region check."""

from __future__ import annotations

from datetime import time

import pytest

from inference_platform.catalog import prices
from inference_platform.components.autoscaling.scaled_object import ScaleTarget, ScalingPolicy, scaled_object_spec
from inference_platform.components.observability.promql import Scope
from inference_platform.planners import costing
from inference_platform.planners.costing import Usage, UsageError
from inference_platform.planners.night_schedule import NightSchedule

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


def pod(pool="gpu", gpus=4):
    return {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": "node-pool", "operator": "In", "values": [pool]}]}]}}},
            "containers": [{"resources": {"limits": {"nvidia.com/gpu": gpus if isinstance(gpus, str) else str(gpus)}}}]}  # fmt: skip


def deployment(pool="gpu", replicas=3, gpus=4, name="triton"):
    return {"urn": f"urn:pulumi:s::p::kubernetes:apps/v1:Deployment::{name}", "type": "kubernetes:apps/v1:Deployment",
            "name": name, "custom": True,
            "inputs": {"metadata": {"name": name, "namespace": "inference"},
                       "spec": {"replicas": float(replicas), "template": {"spec": pod(pool, gpus)}}}}  # fmt: skip


def scaled_object(day_min, day_max, night=None, target="triton", kind="Deployment"):
    """A ScaledObject as inference_platform.components.autoscaling renders it (the real renderer, not a copy of its shape)."""
    policy = ScalingPolicy(scope=Scope(namespace="inference", job="triton"), prometheus_url="http://p:9090",
                           min_replicas=day_min, max_replicas=day_max, night=night)  # fmt: skip
    spec = scaled_object_spec(policy, ScaleTarget(name=target, kind=kind))
    return res("kubernetes:keda.sh/v1alpha1:ScaledObject", f"so-{target}",
               metadata={"name": target, "namespace": "inference"}, spec=spec)  # fmt: skip


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


def test_spot_and_workload_demand_over_zonal_shards():
    spot = costing.estimate([node_group(capacity="SPOT")], region="us-east-1").lines[0]
    assert spot.monthly_expected == pytest.approx(55.04 * H * prices.DEFAULT_SPOT_FACTOR + 20 * 0.08)
    # 3 replicas x 4 GPUs over two zonal groups of one pool: 6 GPUs each -> 1 node each.
    groups = [node_group("a", lo=1, desired=1, hi=4), node_group("b", lo=1, desired=1, hi=4)]
    e = costing.estimate([*groups, deployment(replicas=3, gpus=4)], region="us-east-1")
    assert all("expected 1 " in x.basis for x in e.lines if x.type.endswith("NodeGroup"))
    e = costing.estimate([node_group(lo=0, desired=0, hi=4), deployment(replicas=4, gpus=8)], region="us-east-1")
    assert "expected 4 " in e.lines[0].basis


def test_the_night_schedule_of_the_plans_scaled_object_prices_the_pool():
    """Day 06:00-22:00 UTC at 4 replicas, night ceil(4 x 0.5) = 2: 16 h x 4 nodes + 8 h x 2 nodes."""
    pool = node_group(lo=0, desired=0, hi=4)
    e = costing.estimate([pool, deployment(replicas=4, gpus=8), scaled_object(4, 4, NightSchedule())],
                         region="us-east-1")  # fmt: skip
    line = e.lines[0]
    per_node = 55.04 * H + 20 * 0.08
    assert line.monthly_expected == pytest.approx(per_node * (16 * 4 + 8 * 2) / 24)
    assert "16 h x 4 + 8 h x 2" in line.basis and "16 h day at 4-4 replicas, 8 h night at 2-2" in line.basis
    # The pool's floor still holds at night, and its maximum caps the day.
    floor = costing.estimate([node_group(lo=3, desired=3, hi=3), deployment(replicas=4, gpus=8),
                              scaled_object(4, 4, NightSchedule())], region="us-east-1")  # fmt: skip
    assert floor.lines[0].monthly_expected == pytest.approx(per_node * 3)
    # A night that lowers only the floor saves only if load falls: priced at the planned replicas.
    floor_only = scaled_object(4, 4, NightSchedule(lower_ceiling=False))
    e = costing.estimate([pool, deployment(replicas=4, gpus=8), floor_only], region="us-east-1")
    assert e.lines[0].monthly_expected == pytest.approx(per_node * 4)
    # Without a schedule the plan runs around the clock.
    e = costing.estimate([pool, deployment(replicas=4, gpus=8), scaled_object(4, 4, None)], region="us-east-1")
    assert e.lines[0].monthly_expected == pytest.approx(per_node * 4)


def test_a_night_window_in_another_timezone_and_schedules_that_cannot_be_read():
    per_node = 55.04 * H + 20 * 0.08
    pool = node_group(lo=0, desired=0, hi=4)
    paris = scaled_object(2, 2, NightSchedule(timezone="Europe/Paris", start=time(20, 0), end=time(8, 0)))
    e = costing.estimate([pool, deployment(replicas=2, gpus=8), paris], region="us-east-1")
    assert e.lines[0].monthly_expected == pytest.approx(per_node * (12 * 2 + 12 * 1) / 24)
    assert "(Europe/Paris)" in e.lines[0].basis
    odd = scaled_object(2, 2, NightSchedule())
    odd["inputs"]["spec"]["triggers"][-1]["metadata"]["start"] = "0 6 * * 1-5"
    e = costing.estimate([pool, deployment(replicas=2, gpus=8), odd], region="us-east-1")
    assert e.lines[0].monthly_expected == pytest.approx(per_node * 2) and "not read" in e.lines[0].basis


def test_a_leader_worker_set_counts_the_leader_and_every_worker():
    """2 groups of size 2 (a leader and one worker, 8 GPUs each): 32 GPUs = 4 p5 nodes, not 2 x 8 = 2."""
    lws = res("kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet", "lws",
              metadata={"name": "triton", "namespace": "inference"},
              spec={"replicas": 2.0, "leaderWorkerTemplate": {"size": 2.0, "leaderTemplate": {"spec": pod(gpus=8)},
                                                               "workerTemplate": {"spec": pod(gpus=8)}}})  # fmt: skip
    e = costing.estimate([node_group(lo=0, desired=0, hi=8), lws], region="us-east-1")
    assert "expected 4 " in e.lines[0].basis and "triton 2 x 16 accelerators" in e.lines[0].basis
    # Without a leader template the leader runs the worker's pod (LeaderWorkerSet's default); size 4.
    del lws["inputs"]["spec"]["leaderWorkerTemplate"]["leaderTemplate"]
    lws["inputs"]["spec"]["leaderWorkerTemplate"]["size"] = 4.0
    e = costing.estimate([node_group(lo=0, desired=0, hi=8), lws], region="us-east-1")
    assert "expected 8 " in e.lines[0].basis
    # Its ScaledObject scales groups: night ceil(2 x 0.5) = 1 group of 4 nodes.
    e = costing.estimate([node_group(lo=0, desired=0, hi=8), lws, scaled_object(2, 2, NightSchedule(),
                                                                                 kind="LeaderWorkerSet")],
                         region="us-east-1")  # fmt: skip
    assert "16 h x 8 + 8 h x 4" in e.lines[0].basis


def test_kubernetes_quantities_and_unreadable_ones():
    gpu_class = res("kubernetes:karpenter.k8s.aws/v1:EC2NodeClass", "nc", metadata={"name": "gpu"},
                    spec={"blockDeviceMappings": [{"ebs": {"volumeSize": "0.5Ti"}}]})  # fmt: skip
    karpenter = res("kubernetes:karpenter.sh/v1:NodePool", "kp", metadata={"name": "gpu"},
                    spec={"limits": {"nvidia.com/gpu": "16"}, "template": {"spec": {
                        "nodeClassRef": {"name": "gpu"},
                        "requirements": [{"key": "node.kubernetes.io/instance-type", "operator": "In",
                                          "values": ["p5.48xlarge"]}]}}})  # fmt: skip
    e = costing.estimate([gpu_class, karpenter], region="us-east-1")
    line = next(x for x in e.lines if x.name == "kp")
    assert "512 GiB gp3 per node" in line.basis and line.monthly_max == pytest.approx(2 * (55.04 * H + 512 * 0.08))
    assert costing.estimate([res("aws:ebs/volume:Volume", size=100.0)], region="us-east-1").monthly_expected == 8.0
    bad = costing.estimate([node_group(lo=0, desired=0, hi=4), deployment(gpus="four")], region="us-east-1")
    (unknown,) = bad.unknown
    assert "'four'" in unknown.basis and "limits.nvidia.com/gpu" in unknown.basis
    lots = node_group(lo=0, desired=0, hi=4)
    lots["inputs"]["scalingConfig"]["maxSize"] = "lots"
    bad_size = costing.estimate([lots], region="us-east-1")
    assert bad_size.unknown and "scalingConfig.maxSize" in bad_size.unknown[0].basis


def test_buckets_are_priced_by_their_component_not_their_name():
    store = "urn:pulumi:s::p::inference:storage:ModelStore$aws:s3/bucket:Bucket::{}"

    def bucket(urn, role=None):
        return {"urn": urn, "type": "aws:s3/bucket:Bucket", "name": urn.rsplit("::", 1)[1], "custom": True,
                "inputs": {"tags": {"bucket-role": role}} if role else {}}  # fmt: skip

    items = [
        bucket(store.format("weights"), "models"),
        bucket(store.format("models-logs"), "access-logs"),
        bucket("urn:pulumi:s::p::inference:edge:Edge$aws:s3/bucket:Bucket::model-archive"),
    ]
    by = {x.name: x.monthly_expected for x in costing.estimate(items, region="us-east-1").lines}
    assert by == pytest.approx({"weights": 500 * 0.023, "models-logs": 50 * 0.023, "model-archive": 50 * 0.023})


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
    u = Usage.from_config({"natGibPerGateway": 1000, "s3ModelGib": 2000, "spotFactor": 0.3})
    assert (u.nat_gib_per_gateway, u.s3_model_gib, u.spot_factor) == (1000, 2000, 0.3)


def test_bad_usage_assumptions_are_named_together():
    with pytest.raises(UsageError) as err:
        Usage.from_config(
            {"nightHours": 8, "natGibPerGateway": "lots", "spotFactor": 1.5, "albLcu": -1, "ecrGib": True}
        )
    keys = [k for k, _ in err.value.problems]
    assert keys == [f"assumptions.{k}" for k in ("nightHours", "natGibPerGateway", "spotFactor", "albLcu", "ecrGib")]
    text = str(err.value)
    assert "unknown key; allowed: albLcu" in text and "got 'lots'; expected a number" in text
    assert "expected a number in [0.01, 1]" in text


def test_the_assumptions_schema_declares_every_usage_field():
    schema = costing.assumptions_schema()
    assert schema["additionalProperties"] is False
    assert set(schema["properties"]) == {costing.assumption_key(f) for f in Usage.__dataclass_fields__}
    assert {"natGibPerGateway", "s3ModelGib", "endpointGibPerEndpoint", "spotFactor"} <= set(schema["properties"])


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


def test_fast_snapshot_restore_is_priced_per_zone_hour():
    """coldStart.imageCache: $0.75 per snapshot per zone-hour (Amazon EBS pricing, us-east-1), carried by region."""
    fsr = res("aws:ebs/fastSnapshotRestore:FastSnapshotRestore", availabilityZone="us-east-1a",
              snapshotId="snap-0a1b2c3d4e5f60718")  # fmt: skip
    (line,) = costing.estimate([fsr], region="us-east-1").lines
    assert line.status == "priced" and line.monthly_expected == pytest.approx(0.75 * H)
    assert "us-east-1a" in line.basis and line.category == "EBS"
