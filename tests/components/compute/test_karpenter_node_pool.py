"""Karpenter pools: EC2NodeClass + NodePool from the same profile as managed node groups; an EFA pool gets
one of each, and its own placement group, per zone."""

from __future__ import annotations

import pulumi_kubernetes as k8s
import pytest

from inference_platform.catalog import charts
from inference_platform.catalog.pool_profile import PoolSpec, profile
from inference_platform.components.common.errors import ComponentArgsError
from inference_platform.components.compute.karpenter_node_pool import KarpenterNodePool, KarpenterNodePoolArgs
from tests.conftest import by_type, one

ZONES = ("us-west-2a", "us-west-2b")


def crs(run_components, *types, **spec):
    pool = profile(PoolSpec(name="gpu", instance_types=types, **spec), ZONES)

    def program():
        provider = k8s.Provider("k8s", kubeconfig="{}")
        KarpenterNodePool(
            "pool",
            KarpenterNodePoolArgs(pool=pool, cluster_name="demo", node_role_name="nodes", cluster_security_group_id="sg-c",
                                  provider=provider, instance_tags={"owner": "team"}),
        )  # fmt: skip

    resources = run_components(program).resources
    key = f"pool-{pool.shards[0].zone}" if pool.shards[0].zone else "pool"
    return resources, one(resources, f"{key}-nodeclass"), one(resources, f"{key}-nodepool")


def test_node_class_hardening_and_discovery(run_components):
    _, node_class, _ = crs(run_components, "g6.xlarge", max_size=2)
    spec = node_class.inputs["spec"]
    assert node_class.inputs["apiVersion"] == "karpenter.k8s.aws/v1" and node_class.inputs["kind"] == "EC2NodeClass"
    assert spec["amiSelectorTerms"] == [{"alias": charts.KARPENTER_AMI_ALIAS}] and spec["role"] == "nodes"
    assert (
        spec["metadataOptions"]["httpTokens"] == "required" and spec["metadataOptions"]["httpPutResponseHopLimit"] == 1
    )
    assert spec["blockDeviceMappings"][0]["ebs"] == {"volumeSize": "200Gi", "volumeType": "gp3", "encrypted": True,
                                                     "deleteOnTermination": True}  # fmt: skip
    assert spec["subnetSelectorTerms"] == [{"tags": {"karpenter.sh/discovery": "demo"}}]
    assert {"id": "sg-c"} in spec["securityGroupSelectorTerms"] and spec["tags"] == {"owner": "team"}


def test_node_pool_requirements_taints_limits_and_gpu_disruption(run_components):
    _, _, node_pool = crs(run_components, "g6.xlarge", "g6.2xlarge", capacity_types=("spot",), max_size=3)
    spec = node_pool.inputs["spec"]
    requirements = {r["key"]: r["values"] for r in spec["template"]["spec"]["requirements"]}
    assert requirements == {
        "node.kubernetes.io/instance-type": ["g6.2xlarge", "g6.xlarge"],
        "karpenter.k8s.aws/instance-family": ["g6"],
        "karpenter.k8s.aws/instance-size": ["2xlarge", "xlarge"],
        "karpenter.sh/capacity-type": ["spot"],
        "topology.kubernetes.io/zone": list(ZONES),
    }
    assert spec["template"]["spec"]["taints"] == [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}]
    assert spec["template"]["metadata"]["labels"]["accelerator-model"] == "l4"
    assert spec["limits"] == {"nvidia.com/gpu": "3"}
    assert spec["disruption"] == {
        "consolidationPolicy": "WhenEmpty",
        "consolidateAfter": "10m",
        "budgets": [{"nodes": "10%"}],
    }
    assert (
        spec["template"]["spec"]["expireAfter"] == "720h" and spec["template"]["spec"]["terminationGracePeriod"] == "1h"
    )


def test_reserved_capacity_and_efa_placement(run_components):
    ids = ("cr-0123456789abcdef0", "cr-0123456789abcdef1")
    resources, node_class, node_pool = crs(
        run_components, "trn1.32xlarge", capacity_types=("reservation", "on-demand"), reservation_ids=ids, max_size=2
    )
    spec = node_class.inputs["spec"]
    assert spec["capacityReservationSelectorTerms"] == [{"id": i} for i in ids]
    (pg,) = by_type(resources, "aws:ec2/placementGroup:PlacementGroup")
    assert pg.inputs["strategy"] == "cluster" and spec["placementGroupSelector"] == {"name": "demo-gpu-a"}
    assert node_class.inputs["metadata"]["name"] == node_pool.inputs["metadata"]["name"] == "gpu-a"
    requirements = {r["key"]: r["values"] for r in node_pool.inputs["spec"]["template"]["spec"]["requirements"]}
    assert requirements["karpenter.sh/capacity-type"] == ["on-demand", "reserved"]
    assert requirements["topology.kubernetes.io/zone"] == ["us-west-2a"]
    assert node_pool.inputs["spec"]["limits"] == {"aws.amazon.com/neuron": "32"}
    assert node_class.urn in node_pool.dependencies


def test_an_efa_pool_over_two_zones_gets_a_class_pool_and_placement_group_per_zone(run_components):
    resources, _, _ = crs(run_components, "p5.48xlarge", zones=ZONES, max_size=2)
    classes = {
        c.inputs["metadata"]["name"]: c for c in by_type(resources, "kubernetes:karpenter.k8s.aws/v1:EC2NodeClass")
    }
    pools = {p.inputs["metadata"]["name"]: p for p in by_type(resources, "kubernetes:karpenter.sh/v1:NodePool")}
    assert set(classes) == set(pools) == {"gpu-a", "gpu-b"}
    for zone in ZONES:
        name = f"gpu-{zone[-1]}"
        spec = pools[name].inputs["spec"]
        requirements = {r["key"]: r["values"] for r in spec["template"]["spec"]["requirements"]}
        assert requirements["topology.kubernetes.io/zone"] == [zone]
        assert spec["template"]["spec"]["nodeClassRef"]["name"] == name
        assert spec["template"]["metadata"]["labels"]["node-pool"] == "gpu"
        assert spec["limits"] == {"nvidia.com/gpu": "16"}  # per zone: 2 nodes x 8
        pg = one(resources, f"pool-{zone}-placement")
        assert classes[name].inputs["spec"]["placementGroupSelector"] == {"name": f"demo-{name}"}
        assert pg.inputs["name"] == f"demo-{name}" and classes[name].urn in pools[name].dependencies


def test_bottlerocket_is_refused_for_karpenter_pools():
    pool = profile(PoolSpec(name="gpu", instance_types=("g6.xlarge",), ami_family="bottlerocket"), ZONES)
    with pytest.raises(ComponentArgsError, match="al2023"):
        KarpenterNodePool("p", KarpenterNodePoolArgs(pool=pool, cluster_name="c", node_role_name="n",
                                                     cluster_security_group_id="sg", provider=None))  # fmt: skip


def test_instance_store_raid0_and_gp3_throughput(run_components):
    """Karpenter v1.14.1 EC2NodeClass.spec.instanceStorePolicy: RAID0 (pkg/apis/v1/ec2nodeclass.go)."""
    _, node_class, _ = crs(
        run_components, "g6.xlarge", disk_throughput_mib_s=500, disk_iops=3000, local_nvme_raid0=True
    )
    spec = node_class.inputs["spec"]
    assert spec["instanceStorePolicy"] == "RAID0"
    assert (spec["blockDeviceMappings"][0]["ebs"]["throughput"], spec["blockDeviceMappings"][0]["ebs"]["iops"]) == (
        500,
        3000,
    )
    _, plain, _ = crs(run_components, "g6.xlarge")
    assert "instanceStorePolicy" not in plain.inputs["spec"]
