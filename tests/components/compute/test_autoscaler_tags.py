"""Cluster Autoscaler ASG tags: discovery by this cluster's ownership tag, and scale-from-zero templates
that describe a pool's new node exactly (labels, taint, accelerators, EFA, allocatable disk)."""

from __future__ import annotations

import pytest

from inference_platform.catalog.pool_profile import PoolSpec, profile
from inference_platform.components.compute import autoscaler_tags

ZONES = ("us-east-2a", "us-east-2b")
TEMPLATE = "k8s.io/cluster-autoscaler/node-template"


def test_discovery_tags_name_the_cluster_as_owner():
    assert autoscaler_tags.discovery_tags("prod-1") == {
        "k8s.io/cluster-autoscaler/enabled": "true",
        "k8s.io/cluster-autoscaler/prod-1": "owned",
    }


def test_a_neuron_pool_template_has_its_devices_taint_and_extra_labels():
    pool = profile(PoolSpec(name="inf", instance_types=("inf2.24xlarge", "inf2.48xlarge"), disk_size_gib=200,
                            labels={"team": "ml"}), ZONES)  # fmt: skip
    tags = autoscaler_tags.node_template_tags(pool)
    assert tags[f"{TEMPLATE}/resources/aws.amazon.com/neuron"] == "6"  # the smaller type
    assert tags[f"{TEMPLATE}/taint/aws.amazon.com/neuron"] == "true:NoSchedule"
    assert tags[f"{TEMPLATE}/label/team"] == "ml" and tags[f"{TEMPLATE}/label/accelerator"] == "neuron"
    assert tags[f"{TEMPLATE}/resources/ephemeral-storage"] == "180Gi"  # 10% kept for kubelet eviction
    assert not [k for k in tags if "efa" in k]


def test_a_system_pool_template_has_labels_and_disk_only():
    pool = profile(PoolSpec(name="system", role="system", instance_types=("m7i.xlarge",), disk_size_gib=50), ZONES)
    assert autoscaler_tags.node_template_tags(pool) == {
        f"{TEMPLATE}/label/node-pool": "system",
        f"{TEMPLATE}/label/node-role": "system",
        f"{TEMPLATE}/resources/ephemeral-storage": "45Gi",
    }


@pytest.mark.parametrize(
    ("key", "slug"),
    [
        ("k8s.io/cluster-autoscaler/enabled", "discovery-enabled"),
        ("k8s.io/cluster-autoscaler/prod-1", "discovery-cluster"),
        (f"{TEMPLATE}/label/node-pool", "label-node-pool"),
        (f"{TEMPLATE}/taint/nvidia.com/gpu", "taint-nvidia.com-gpu"),
        (f"{TEMPLATE}/resources/vpc.amazonaws.com/efa", "resources-vpc.amazonaws.com-efa"),
    ],
)
def test_every_tag_has_a_stable_resource_name(key, slug):
    assert autoscaler_tags.tag_slug(key) == slug


def test_other_keys_are_not_autoscaler_tags():
    with pytest.raises(ValueError, match="not a cluster-autoscaler tag"):
        autoscaler_tags.tag_slug("team/owner")
