"""Where one inference pod fits on a node of its pool: pure arithmetic over the catalog, no Pulumi.

Settings use it to refuse a rollout that cannot schedule (before any resource exists) and the
rollout uses the same numbers to request accelerators, so the two never disagree.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from inference_platform import catalog

GIB = 2**30
# What a node keeps for itself before pods: kubelet and container runtime, the eviction threshold and
# the platform's DaemonSets (CNI, kube-proxy, pod identity agent, CSI node plugins, device plugins,
# DCGM exporter / neuron-monitor). An estimate above the EKS AL2023 kube-reserved formula (255 MiB +
# 11 MiB per pod; 6% of the first core, then less) so that a plan errs on the safe side.
RESERVED_MEMORY_GIB = 1.5
RESERVED_MEMORY_FRACTION = 0.05
RESERVED_CPU = 0.5
RESERVED_CPU_FRACTION = 0.02
IMAGE_DISK_GIB = 60
"""Root-volume space for the OS and images (Triton + TensorRT-LLM images unpack to ~40-50 GiB)."""


@dataclass(frozen=True)
class Allocatable:
    """What pods may request on one node (an estimate; see RESERVED_*)."""

    instance_type: str
    cpu: float
    memory_gib: float
    ram_gib: float


def allocatable(instance_type: str) -> Allocatable:
    node = catalog.instance(instance_type)
    memory = node.ram_gib - RESERVED_MEMORY_GIB - RESERVED_MEMORY_FRACTION * node.ram_gib
    cpu = node.vcpu - RESERVED_CPU - RESERVED_CPU_FRACTION * node.vcpu
    return Allocatable(node.name, cpu, memory, float(node.ram_gib))


def smallest(instance_types: Iterable[str]) -> Allocatable:
    """The pool's tightest node: a pod must fit every type the pool may launch."""
    found = [allocatable(t) for t in instance_types]
    if not found:
        raise ValueError("a pool has at least one instance type")
    return min(found, key=lambda a: (a.memory_gib, a.cpu))


def accelerators_per_pod(ranks_per_node: int, units_per_device: int) -> int:
    """Devices one pod requests: one GPU per rank, or the Neuron devices holding its NeuronCores."""
    if ranks_per_node < 1 or units_per_device < 1:
        raise ValueError(f"ranks_per_node={ranks_per_node} and units_per_device={units_per_device} must be >= 1")
    return math.ceil(ranks_per_node / units_per_device)


def pods_per_node(accelerators_per_node: int, accelerators: int) -> int:
    """Serving pods one node holds (0 when the pod needs more devices than the node has)."""
    if accelerators < 1:
        raise ValueError(f"accelerators={accelerators} must be >= 1")
    return accelerators_per_node // accelerators


def efa_per_pod(efa_interfaces: int, accelerators_per_node: int, accelerators: int) -> int:
    """The pod's share of the node's EFA interfaces, in proportion to its accelerators (0 without EFA).

    p5.48xlarge has 32 interfaces for 8 GPUs: a 4-GPU pod takes 16, so two pods share a node."""
    if efa_interfaces <= 0:
        return 0
    return max(1, efa_interfaces * accelerators // max(1, accelerators_per_node))


@dataclass(frozen=True)
class PoolFit:
    """How the serving pods of one pool are placed, for the pool's tightest instance type."""

    accelerators: int
    """Devices per pod (``nvidia.com/gpu`` or ``aws.amazon.com/neuron``)."""
    pods_per_node: int
    node: Allocatable


def replica_slots(fit: PoolFit, *, max_size: int, shards: int, nodes_per_replica: int = 1) -> int:
    """Replicas a pool holds at its maximum: per shard (an EFA pool's zonal node group, each up to
    ``max_size`` nodes), whole replicas only, because a multi-node replica stays inside one shard's
    placement group; then over every shard."""
    if min(max_size, shards, nodes_per_replica) < 1:
        raise ValueError(f"max_size={max_size}, shards={shards}, nodes_per_replica={nodes_per_replica} must be >= 1")
    return shards * (fit.pods_per_node * max_size // nodes_per_replica)


def pool_fit(instance_types: Iterable[str], ranks_per_node: int) -> PoolFit:
    """Devices per pod and pods per node on the pool's tightest type (raises CatalogError, ValueError)."""
    types = [catalog.instance(t) for t in instance_types]
    if not types or any(t.accelerator is None for t in types):
        raise ValueError("every instance type of a serving pool carries accelerators")
    units = max(t.accelerator.tensor_parallel_units for t in types if t.accelerator)
    accelerators = accelerators_per_pod(ranks_per_node, units)
    per_node = min(pods_per_node(t.accelerator_count, accelerators) for t in types)
    return PoolFit(accelerators, per_node, smallest(t.name for t in types))
