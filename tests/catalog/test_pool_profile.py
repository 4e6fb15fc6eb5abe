"""Pool profiles: everything a pool's nodes need, derived from the catalog once for both provisioning modes."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from inference_platform import catalog
from inference_platform.catalog.pool_profile import (
    PoolShard,
    PoolSpec,
    Taint,
    ami_type,
    profile,
    zone_suffix,
)

ZONES = ("us-east-1a", "us-east-1b", "us-east-1c")
ACCELERATED = [t for t in catalog.known_instance_types() if catalog.instance(t).is_accelerated]


def spec(*types: str, **kw) -> PoolSpec:
    return PoolSpec(name="p", instance_types=types, **kw)


def test_nvidia_pool_labels_taint_and_ami():
    p = profile(spec("g6.xlarge", "g6.2xlarge", max_size=3), ZONES)
    assert p.ami_type == "AL2023_x86_64_NVIDIA" and p.vendor == "nvidia"
    assert p.labels == {"node-role": "inference", "node-pool": "p", "accelerator": "nvidia", "accelerator-model": "l4"}
    assert p.taints == (Taint("nvidia.com/gpu", "true"),) and p.taints[0].managed_effect == "NO_SCHEDULE"
    assert (p.resource_name, p.total_accelerators, p.efa, p.zones) == ("nvidia.com/gpu", 3, False, ZONES)


def test_neuron_pool_uses_the_neuron_ami_taint_and_device_resource():
    p = profile(spec("inf2.24xlarge", "inf2.48xlarge", max_size=2), ZONES)
    assert p.ami_type == "AL2023_x86_64_NEURON"
    assert p.taints == (Taint("aws.amazon.com/neuron", "true"),)
    assert p.resource_name == "aws.amazon.com/neuron"
    assert p.accelerators_per_node == 12 and p.total_accelerators == 24  # the largest type decides


@pytest.mark.parametrize(("name", "interfaces"), [("p5.48xlarge", 32), ("p5en.48xlarge", 16), ("trn1.32xlarge", 8),
                                                  ("p4d.24xlarge", 4)])  # fmt: skip
def test_efa_types_get_every_interface_one_zone_and_the_efa_label(name, interfaces):
    p = profile(spec(name), ZONES)
    assert p.efa_interfaces == interfaces and p.zones == ZONES[:1] and p.labels["efa"] == "true"


def test_efa_can_be_turned_off_or_asked_for_where_the_type_has_it():
    assert profile(spec("p5.48xlarge", efa=False), ZONES).efa_interfaces == 0
    assert profile(spec("g6e.48xlarge", efa=True), ZONES).efa_interfaces == 4
    with pytest.raises(ValueError, match=r"g6e\.xlarge has no EFA"):
        profile(spec("g6e.xlarge", efa=True), ZONES)


def test_pinned_zones_are_kept_and_an_efa_pool_defaults_to_the_first():
    assert profile(spec("g6.xlarge", zones=("us-east-1c",)), ZONES).zones == ("us-east-1c",)
    assert profile(spec("p5.48xlarge"), ZONES).zones == ("us-east-1a",)
    assert profile(spec("p5.48xlarge", zones=("us-east-1b", "us-east-1c")), ZONES).zones == ("us-east-1b", "us-east-1c")


def test_an_efa_pool_is_one_shard_per_zone_and_its_sizes_count_per_zone():
    p = profile(spec("p5.48xlarge", zones=("us-east-1a", "us-east-1b"), min_size=1, max_size=2), ZONES)
    assert p.shards == (
        PoolShard(zone="us-east-1a", name="p-a", zones=("us-east-1a",)),
        PoolShard(zone="us-east-1b", name="p-b", zones=("us-east-1b",)),
    )
    assert (p.max_nodes, p.shard_accelerators, p.total_accelerators) == (4, 16, 32)
    spanning = profile(spec("g6.xlarge", max_size=3), ZONES)
    assert spanning.shards == (PoolShard(zone=None, name="p", zones=ZONES),)
    assert (spanning.max_nodes, spanning.total_accelerators) == (3, 3)


@pytest.mark.parametrize(
    ("zone", "suffix"),
    [("us-east-1a", "a"), ("ap-southeast-2c", "c"), ("us-gov-west-1b", "b"), ("us-west-2-lax-1a", "lax-1a")],
)
def test_zone_suffixes_name_a_zone_within_its_region(zone, suffix):
    assert zone_suffix(zone) == suffix


def test_the_autoscaler_template_assumes_the_smallest_type():
    p = profile(spec("inf2.24xlarge", "inf2.48xlarge"), ZONES)
    assert (p.template_accelerators, p.accelerators_per_node) == (6, 12)


@pytest.mark.parametrize(
    ("kinds", "managed", "karpenter"),
    [
        (("on-demand",), "ON_DEMAND", ["on-demand"]),
        (("spot",), "SPOT", ["spot"]),
        (("reservation",), "ON_DEMAND", ["reserved"]),
        (("capacity-block",), "CAPACITY_BLOCK", ["reserved"]),
        (("reservation", "on-demand"), "ON_DEMAND", ["on-demand", "reserved"]),
    ],
)
def test_capacity_types_map_to_eks_and_karpenter_names(kinds, managed, karpenter):
    p = profile(spec("p5.48xlarge", capacity_types=kinds), ZONES)
    assert p.managed_capacity_type == managed and p.karpenter_capacity_types == karpenter


def test_mixed_vendors_and_mixed_accelerators_are_refused():
    with pytest.raises(catalog.CatalogError, match="exactly one vendor"):
        profile(spec("g6.xlarge", "inf2.xlarge"), ZONES)
    with pytest.raises(ValueError, match="h100, h200"):
        profile(spec("p5.48xlarge", "p5en.48xlarge"), ZONES)


def test_system_pool_and_ami_families():
    p = profile(PoolSpec(name="system", role="system", instance_types=("m7i.xlarge",)), ZONES)
    assert p.ami_type == "AL2023_x86_64_STANDARD" and p.taints == () and p.labels["node-role"] == "system"
    assert "accelerator" not in p.labels and p.resource_name is None
    assert ami_type("nvidia", "bottlerocket") == "BOTTLEROCKET_x86_64_NVIDIA"
    with pytest.raises(ValueError, match="no EKS bottlerocket AMI for neuron"):
        ami_type("neuron", "bottlerocket")


@given(st.sampled_from(ACCELERATED), st.integers(min_value=0, max_value=50))
def test_any_accelerated_type_yields_a_consistent_profile(name, max_size):
    t = catalog.instance(name)
    p = profile(spec(name, max_size=max_size), ZONES)
    assert p.ami_type in t.ami_types
    assert p.total_accelerators == t.accelerator_count * max_size
    assert p.labels["accelerator-model"] == t.accelerator_model and catalog.is_label_value(
        p.labels["accelerator-model"]
    )
    assert p.efa == t.efa_by_default and (len(p.zones) == 1 if p.efa else p.zones == ZONES)
    assert len(p.shards) == 1 and p.max_nodes == max_size
    assert p.taints[0].key == t.resource_name
