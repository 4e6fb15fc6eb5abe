"""Managed node groups: launch template with IMDSv2 (hop 1), encrypted gp3, tags on instances/volumes/ENIs;
EFA pools with every interface and a node group + cluster placement group per zone; the autoscaler owns
desired size and finds the groups (and their scale-from-zero templates) by their ASG tags."""

from __future__ import annotations

import re

import pytest

from inference_platform.catalog.pool_profile import PoolSpec, profile
from inference_platform.components.common.errors import ComponentArgsError
from inference_platform.components.compute.node_pool import NodePool, NodePoolArgs
from tests.conftest import by_type, one

ZONES = ("us-west-2a", "us-west-2b")
SUBNETS = {"us-west-2a": "subnet-a", "us-west-2b": "subnet-b"}
TAGS = {"owner": "team", "stack": "test"}
ASG_TAG = "aws:autoscaling/tag:Tag"


def pool_resources(run_components, *types, autoscaler=None, **spec):
    pool = profile(PoolSpec(name="gpu", instance_types=types, **spec), ZONES)
    args = NodePoolArgs(
        cluster_name="demo",
        name_prefix="demo",
        kubernetes_version="1.36",
        node_role_arn="arn:aws:iam::123456789012:role/nodes",
        pool=pool,
        subnet_ids_by_zone=SUBNETS,
        security_group_ids=["sg-cluster", "sg-nodes"],
        instance_tags=TAGS,
        autoscaler_cluster_name=autoscaler,
    )
    return run_components(lambda: NodePool("pool", args)).resources


def asg_tags(resources, group):
    """The autoscaler tags on one node group's ASG, as {key: value}."""
    asg = one(resources, group).outputs["resources"][0]["autoscalingGroups"][0]["name"]
    found = [t.inputs for t in by_type(resources, ASG_TAG) if t.inputs["autoscalingGroupName"] == asg]
    assert all(t["tag"]["propagateAtLaunch"] is False for t in found)
    return {t["tag"]["key"]: t["tag"]["value"] for t in found}


def test_launch_template_hardening_and_tags(run_components):
    lt = one(pool_resources(run_components, "g6.xlarge", max_size=2, disk_size_gib=300), "pool-lt").inputs
    assert lt["metadataOptions"] == {"httpEndpoint": "enabled", "httpTokens": "required", "httpPutResponseHopLimit": 1,
                                     "instanceMetadataTags": "disabled"}  # fmt: skip
    assert lt["blockDeviceMappings"] == [
        {
            "deviceName": "/dev/xvda",
            "ebs": {"volumeSize": 300, "volumeType": "gp3", "encrypted": "true", "deleteOnTermination": "true"},
        }
    ]
    assert {s["resourceType"] for s in lt["tagSpecifications"]} == {"instance", "volume", "network-interface"}
    assert all(s["tags"] == {**TAGS, "Name": "demo-gpu"} for s in lt["tagSpecifications"])
    assert lt["vpcSecurityGroupIds"] == ["sg-cluster", "sg-nodes"] and "networkInterfaces" not in lt


def test_node_group_from_the_profile(run_components):
    resources = pool_resources(run_components, "g6.xlarge", "g6.2xlarge", capacity_types=("spot",), max_size=2)
    ng = one(resources, "pool-ng")
    assert ng.inputs["amiType"] == "AL2023_x86_64_NVIDIA" and ng.inputs["capacityType"] == "SPOT"
    assert ng.inputs["instanceTypes"] == ["g6.xlarge", "g6.2xlarge"] and ng.inputs["version"] == "1.36"
    assert ng.inputs["scalingConfig"] == {"minSize": 0, "maxSize": 2, "desiredSize": 0}
    assert ng.inputs["taints"] == [{"key": "nvidia.com/gpu", "value": "true", "effect": "NO_SCHEDULE"}]
    assert ng.inputs["labels"]["accelerator"] == "nvidia" and ng.inputs["subnetIds"] == ["subnet-a", "subnet-b"]
    assert ng.ignore_changes == ["scalingConfig.desiredSize"]
    assert ng.property_dependencies["launchTemplate"] == [one(resources, "pool-lt").urn]
    assert "diskSize" not in ng.inputs  # the launch template owns the volume
    assert not by_type(resources, "aws:ec2/placementGroup:PlacementGroup")


def test_efa_pool_gets_all_interfaces_with_the_node_groups_and_a_placement_group_in_its_zone(run_components):
    resources = pool_resources(run_components, "p5.48xlarge", min_size=2, max_size=4)
    lt = one(resources, "pool-us-west-2a-lt")
    interfaces = lt.inputs["networkInterfaces"]
    assert len(interfaces) == 32 and "vpcSecurityGroupIds" not in lt.inputs
    assert [(i["networkCardIndex"], i["deviceIndex"]) for i in interfaces[:3]] == [(0, 0), (1, 1), (2, 1)]
    assert all(i["interfaceType"] == "efa" and i["securityGroups"] == ["sg-cluster", "sg-nodes"] for i in interfaces)
    pg = one(resources, "pool-us-west-2a-placement")
    assert pg.inputs["strategy"] == "cluster" and lt.property_dependencies["placement"] == [pg.urn]
    ng = one(resources, "pool-us-west-2a-ng").inputs
    assert ng["subnetIds"] == ["subnet-a"] and re.fullmatch(r"demo-gpu-a-[0-9a-f]{8}", ng["nodeGroupName"])
    assert len(by_type(resources, "aws:eks/nodeGroup:NodeGroup")) == 1  # no zones listed: the first only


def test_an_efa_pool_over_two_zones_is_one_pinned_group_and_placement_group_per_zone(run_components):
    resources = pool_resources(run_components, "p5.48xlarge", zones=ZONES, min_size=1, max_size=2)
    groups = {g.name: g.inputs for g in by_type(resources, "aws:eks/nodeGroup:NodeGroup")}
    assert set(groups) == {"pool-us-west-2a-ng", "pool-us-west-2b-ng"}
    for zone, subnet in SUBNETS.items():
        group = groups[f"pool-{zone}-ng"]
        suffix = zone[-1]
        assert group["subnetIds"] == [subnet] and re.fullmatch(
            rf"demo-gpu-{suffix}-[0-9a-f]{{8}}", group["nodeGroupName"]
        )
        assert group["scalingConfig"] == {"minSize": 1, "maxSize": 2, "desiredSize": 1}  # per zone
        assert group["labels"]["node-pool"] == "gpu" and group["labels"]["efa"] == "true"  # pods select the pool
        lt = one(resources, f"pool-{zone}-lt")
        pg = one(resources, f"pool-{zone}-placement")
        assert pg.inputs["name"] == f"demo-gpu-{suffix}" and lt.property_dependencies["placement"] == [pg.urn]
        assert len(lt.inputs["networkInterfaces"]) == 32
        assert one(resources, f"pool-{zone}-ng").property_dependencies["launchTemplate"] == [lt.urn]
    assert len(by_type(resources, "aws:ec2/placementGroup:PlacementGroup")) == 2


def test_without_an_autoscaler_no_asg_is_tagged(run_components):
    assert not by_type(pool_resources(run_components, "g6.xlarge", max_size=2), ASG_TAG)


def test_autoscaler_discovery_and_scale_from_zero_templates_on_every_groups_asg(run_components):
    resources = pool_resources(run_components, "p5.48xlarge", autoscaler="demo", zones=ZONES, disk_size_gib=500)
    for zone in ZONES:
        tags = asg_tags(resources, f"pool-{zone}-ng")
        template = "k8s.io/cluster-autoscaler/node-template"
        assert tags == {
            "k8s.io/cluster-autoscaler/enabled": "true",
            "k8s.io/cluster-autoscaler/demo": "owned",
            f"{template}/label/node-role": "inference",
            f"{template}/label/node-pool": "gpu",
            f"{template}/label/accelerator": "nvidia",
            f"{template}/label/accelerator-model": "h100",
            f"{template}/label/efa": "true",
            f"{template}/taint/nvidia.com/gpu": "true:NoSchedule",
            f"{template}/resources/nvidia.com/gpu": "8",
            f"{template}/resources/vpc.amazonaws.com/efa": "32",
            f"{template}/resources/ephemeral-storage": "450Gi",
        }
    spanning = pool_resources(run_components, "g6.xlarge", "g6.2xlarge", autoscaler="demo", max_size=2)
    tags = asg_tags(spanning, "pool-ng")
    assert tags["k8s.io/cluster-autoscaler/node-template/resources/nvidia.com/gpu"] == "1"
    assert not [k for k in tags if k.endswith("vpc.amazonaws.com/efa")]


def test_reservations_and_capacity_blocks_target_their_reservation(run_components):
    rid = "cr-0123456789abcdef0"
    lt = one(pool_resources(run_components, "p5.48xlarge", capacity_types=("capacity-block",), reservation_ids=(rid,)),
             "pool-us-west-2a-lt").inputs  # fmt: skip
    assert lt["capacityReservationSpecification"] == {"capacityReservationTarget": {"capacityReservationId": rid}}
    assert lt["instanceMarketOptions"] == {"marketType": "capacity-block"}
    resources = pool_resources(run_components, "p5.48xlarge", capacity_types=("reservation",), reservation_ids=(rid,))
    assert "instanceMarketOptions" not in one(resources, "pool-us-west-2a-lt").inputs
    assert one(resources, "pool-us-west-2a-ng").inputs["capacityType"] == "ON_DEMAND"


def test_bottlerocket_keeps_images_on_a_separate_data_volume(run_components):
    lt = one(pool_resources(run_components, "g6.xlarge", ami_family="bottlerocket"), "pool-lt").inputs
    assert [(b["deviceName"], b["ebs"]["volumeSize"]) for b in lt["blockDeviceMappings"]] == [
        ("/dev/xvda", 4),
        ("/dev/xvdb", 200),
    ]


def test_bad_pools_are_reported_together():
    pool = profile(PoolSpec(name="gpu", instance_types=("g6.xlarge",), min_size=3, max_size=500,
                            capacity_types=("spot", "on-demand"), zones=("us-west-2c",)), ("us-west-2c",))  # fmt: skip
    with pytest.raises(ComponentArgsError) as err:
        NodePool(
            "p",
            NodePoolArgs(cluster_name="c", name_prefix="c", kubernetes_version="1.36", node_role_arn="r", pool=pool,
                         subnet_ids_by_zone=SUBNETS, security_group_ids=[]),
        )  # fmt: skip
    text = str(err.value)
    assert all(w in text for w in ("max_size: 500", "one capacity type", "us-west-2c", "cluster security group"))
    with pytest.raises(ComponentArgsError, match="longer than EKS's 63"):
        NodePool(
            "p",
            NodePoolArgs(cluster_name="c", name_prefix="x" * 40, kubernetes_version="1.36", node_role_arn="r",
                         pool=profile(PoolSpec(name="a-twenty-one-char-efa", instance_types=("p5.48xlarge",)), ZONES),
                         subnet_ids_by_zone=SUBNETS, security_group_ids=["sg"]),
        )  # fmt: skip


def test_gp3_throughput_and_nvme_raid0_for_the_model_copy(run_components):
    """Issue 21 cold start: a provisioned gp3 and a RAID0 of the NVMe disks (nodeadm NodeConfig part)."""
    import base64

    lt = one(pool_resources(run_components, "p5.48xlarge", disk_throughput_mib_s=1000, disk_iops=4000,
                            local_nvme_raid0=True), "pool-us-west-2a-lt").inputs  # fmt: skip
    ebs = lt["blockDeviceMappings"][0]["ebs"]
    assert (ebs["throughput"], ebs["iops"]) == (1000, 4000)
    user_data = base64.b64decode(lt["userData"]).decode()
    assert "Content-Type: application/node.eks.aws" in user_data and "strategy: RAID0" in user_data
    plain = one(pool_resources(run_components, "g6.xlarge"), "pool-lt").inputs
    assert "userData" not in plain and "throughput" not in plain["blockDeviceMappings"][0]["ebs"]
