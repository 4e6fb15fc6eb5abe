"""Pod placement arithmetic: devices per pod, pods per node, EFA shares and what a node leaves pods."""

from __future__ import annotations

import pytest

from inference_platform import catalog
from inference_platform.planners.placement import (
    RESERVED_MEMORY_GIB,
    accelerators_per_pod,
    allocatable,
    efa_per_pod,
    pods_per_node,
    pool_fit,
    replica_slots,
    smallest,
)


@pytest.mark.parametrize(
    ("ranks", "units", "devices"),
    [(1, 1, 1), (4, 1, 4), (8, 1, 8), (8, 2, 4), (2, 2, 1), (3, 2, 2), (32, 2, 16)],
)
def test_a_pod_requests_whole_devices_for_its_ranks(ranks, units, devices):
    assert accelerators_per_pod(ranks, units) == devices


def test_ranks_and_units_must_be_positive():
    with pytest.raises(ValueError, match="ranks_per_node=0"):
        accelerators_per_pod(0, 1)
    with pytest.raises(ValueError, match="accelerators=0"):
        pods_per_node(8, 0)


def test_pods_per_node_and_efa_share_on_p5():
    p5 = catalog.instance("p5.48xlarge")
    assert pods_per_node(p5.accelerator_count, 4) == 2
    assert efa_per_pod(p5.efa_interfaces, p5.accelerator_count, 4) == 16
    assert efa_per_pod(p5.efa_interfaces, p5.accelerator_count, 8) == 32
    assert efa_per_pod(0, 8, 4) == 0
    assert efa_per_pod(2, 8, 1) == 1  # never zero on an EFA pool


def test_allocatable_leaves_room_for_the_node_and_every_type_is_positive():
    for name in catalog.known_instance_types():
        node = catalog.instance(name)
        room = allocatable(name)
        assert 0 < room.memory_gib < node.ram_gib - RESERVED_MEMORY_GIB
        assert 0 < room.cpu < node.vcpu


def test_the_tightest_type_of_a_pool_decides():
    assert smallest(["g6.2xlarge", "g6.xlarge"]).instance_type == "g6.xlarge"
    with pytest.raises(ValueError):
        smallest([])


def test_pool_fit_per_stack_pool():
    dev = pool_fit(["g6.xlarge", "g6.2xlarge"], 1)
    assert (dev.accelerators, dev.pods_per_node, dev.node.instance_type) == (1, 1, "g6.xlarge")
    prod = pool_fit(["p5.48xlarge"], 4)
    assert (prod.accelerators, prod.pods_per_node) == (4, 2)
    # TP 8 on Inferentia2: 8 NeuronCores = 4 devices; an inf2.24xlarge (6 devices) holds one such pod.
    npu = pool_fit(["inf2.24xlarge", "inf2.48xlarge"], 8)
    assert (npu.accelerators, npu.pods_per_node, npu.node.instance_type) == (4, 1, "inf2.24xlarge")
    assert pool_fit(["g6.xlarge"], 2).pods_per_node == 0


def test_replica_slots_count_every_zonal_group_and_keep_multi_node_replicas_inside_one():
    p5 = pool_fit(["p5.48xlarge"], 4)  # two TP-4 pods per node
    assert replica_slots(p5, max_size=2, shards=2) == 8  # prod: 2 nodes per zone x 2 zones x 2 pods
    assert replica_slots(p5, max_size=2, shards=1) == 4
    whole = pool_fit(["p5.48xlarge"], 8)
    # A 2-node replica needs both nodes in one zone's placement group: 3 nodes per zone hold one each.
    assert replica_slots(whole, max_size=3, shards=2, nodes_per_replica=2) == 2
    with pytest.raises(ValueError, match="shards=0"):
        replica_slots(p5, max_size=2, shards=0)


def test_pool_fit_refuses_general_purpose_types():
    with pytest.raises(ValueError, match="accelerators"):
        pool_fit(["m7i.xlarge"], 1)
    with pytest.raises(catalog.CatalogError):
        pool_fit(["x9.huge"], 1)
