"""What a node pool is, derived from the catalog: pure data, shared by both provisioning modes.

A stack describes a pool by its instance types, capacity and size; everything a node needs to be
scheduled correctly (AMI type, labels, taint, accelerator resource, EFA interfaces, placement) follows
from the catalog here, once, so managed node groups, Karpenter NodePools, device-plugin selectors and
policies all agree. Conventions follow awslabs ai-on-eks (labels ``accelerator``/``accelerator-model``,
taints ``nvidia.com/gpu=true:NoSchedule`` and ``aws.amazon.com/neuron=true:NoSchedule``).

A pool is provisioned as one or more shards. A cluster placement group lives in one zone, so an EFA
pool becomes one shard per zone, each with its own placement group and the pool's sizes (min, max,
desired apply per zone); every other pool is one shard spanning its zones. Shards share the pool's
labels, so a pod selecting ``node-pool=<name>`` lands on any of them, and a zone spread can use them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final, Literal

from inference_platform import catalog
from inference_platform.catalog.image_cache import ImageCacheSpec

CapacityType = Literal["on-demand", "spot", "capacity-block", "reservation"]
RESERVED_CAPACITY: Final = frozenset({"capacity-block", "reservation"})
AmiFamily = Literal["al2023", "bottlerocket"]

LABEL_NODE_ROLE: Final = "node-role"
LABEL_ACCELERATOR: Final = "accelerator"
LABEL_ACCELERATOR_MODEL: Final = "accelerator-model"
LABEL_POOL: Final = "node-pool"
LABEL_EFA: Final = "efa"
RESERVED_LABELS: Final = frozenset({LABEL_NODE_ROLE, LABEL_ACCELERATOR, LABEL_ACCELERATOR_MODEL, LABEL_POOL, LABEL_EFA})
ROLE_SYSTEM: Final = "system"
ROLE_INFERENCE: Final = "inference"

TAINT_KEYS: Final[dict[str, str]] = {
    catalog.VENDOR_NVIDIA: catalog.RESOURCE_NVIDIA_GPU,
    catalog.VENDOR_NEURON: catalog.RESOURCE_NEURON_DEVICE,
}
# EKS managed node group capacity types; a reservation (ODCR) is on-demand capacity targeted by the
# launch template's capacity reservation specification.
_MANAGED_CAPACITY: Final[dict[str, str]] = {
    "on-demand": "ON_DEMAND",
    "spot": "SPOT",
    "capacity-block": "CAPACITY_BLOCK",
    "reservation": "ON_DEMAND",
}
# Karpenter v1 capacity types: ODCRs and Capacity Blocks are both "reserved" (ReservedCapacity gate).
_KARPENTER_CAPACITY: Final[dict[str, str]] = {
    "on-demand": "on-demand",
    "spot": "spot",
    "capacity-block": "reserved",
    "reservation": "reserved",
}

DEFAULT_DISK_SIZE_GIB: Final = 200
"""Root volume: TensorRT-LLM Triton images are ~20 GB and engines are cached locally."""
DEFAULT_EXPIRE_AFTER: Final = "720h"
DEFAULT_TERMINATION_GRACE_PERIOD: Final = "1h"
"""Long enough for a GPU pod to drain in-flight streams before Karpenter forces the node away."""
DEFAULT_CONSOLIDATE_AFTER: Final = "10m"
DEFAULT_DISRUPTION_BUDGET: Final = "10%"
# An AZ name is its region plus a suffix: us-east-1a, or us-west-2-lax-1a for a Local Zone.
_REGION_PREFIX: Final = re.compile(r"^[a-z]{2}(-gov)?-[a-z]+-\d+-?")


@dataclass(frozen=True)
class Taint:
    """A node taint (key, value, effect); pods of the pool tolerate it."""

    key: str
    value: str
    effect: str = "NoSchedule"

    @property
    def managed_effect(self) -> str:
        """The EKS API spelling (``NO_SCHEDULE``)."""
        return {"NoSchedule": "NO_SCHEDULE", "NoExecute": "NO_EXECUTE", "PreferNoSchedule": "PREFER_NO_SCHEDULE"}[
            self.effect
        ]


@dataclass(frozen=True, kw_only=True)
class PoolSpec:
    """One pool as the stack describes it (already validated by the settings)."""

    name: str
    instance_types: tuple[str, ...]
    role: str = ROLE_INFERENCE
    capacity_types: tuple[str, ...] = ("on-demand",)
    reservation_ids: tuple[str, ...] = ()
    min_size: int = 0
    """Per shard: per zone for EFA pools, for the whole pool otherwise."""
    max_size: int = 1
    """Per shard, like min_size."""
    desired_size: int | None = None
    disk_size_gib: int = DEFAULT_DISK_SIZE_GIB
    disk_throughput_mib_s: int | None = None
    """gp3 throughput of the node disk (125-1000 MiB/s); None: EBS's free 125 (nothing set)."""
    disk_iops: int | None = None
    """gp3 IOPS (3000-16000); None: EBS's free 3000 (nothing set)."""
    local_nvme_raid0: bool = False
    """The node's NVMe instance-store disks as one RAID0 array holding containerd and kubelet state (so
    image layers and emptyDir volumes, the staged model among them): nodeadm ``localStorage.strategy:
    RAID0`` on managed groups, ``instanceStorePolicy: RAID0`` on Karpenter (AL2023 only)."""
    fast_image_pull: bool = False
    """nodeadm's ``FastImagePull`` feature gate: SOCI parallel pull/unpack of container images (AL2023 only;
    coldStart.imagePull parallel, for the serving pool)."""
    image_cache: ImageCacheSpec | None = None
    """The serving image's cache volume, mounted as containerd's root (coldStart.imagePull cached, the serving pool's
    managed node groups, AL2023: catalog/image_cache.py)."""
    zones: tuple[str, ...] = ()
    """Zones the pool may use; empty: every zone of the cluster (EFA pools: the first one). An EFA pool
    gets one shard per zone."""
    efa: bool | None = None
    """None: EFA when every type is built for it (catalog ``efa_by_default``)."""
    ami_family: str = "al2023"
    labels: Mapping[str, str] = field(default_factory=dict)
    expire_after: str = DEFAULT_EXPIRE_AFTER
    termination_grace_period: str = DEFAULT_TERMINATION_GRACE_PERIOD
    consolidate_after: str = DEFAULT_CONSOLIDATE_AFTER
    disruption_budget: str = DEFAULT_DISRUPTION_BUDGET


@dataclass(frozen=True)
class PoolShard:
    """One node group (or Karpenter NodePool) of a pool."""

    zone: str | None
    """The zone of a zonal shard (an EFA pool's); None for the one shard spanning the pool's zones."""
    name: str
    """Physical name fragment: ``<pool>`` or ``<pool>-<zone suffix>`` (``inference-a``)."""
    zones: tuple[str, ...]
    """Zones the shard's nodes use (its one zone, for a zonal shard)."""


@dataclass(frozen=True, kw_only=True)
class PoolProfile:
    """A pool with everything derived: what both provisioning modes and the add-ons consume."""

    spec: PoolSpec
    vendor: str
    accelerator_model: str | None
    ami_type: str
    labels: dict[str, str]
    taints: tuple[Taint, ...]
    resource_name: str | None
    accelerators_per_node: int
    efa_interfaces: int
    zones: tuple[str, ...]
    shards: tuple[PoolShard, ...]
    template_accelerators: int
    """Accelerators of the pool's smallest type: what an autoscaler may assume a new node brings."""

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def efa(self) -> bool:
        return self.efa_interfaces > 0

    @property
    def max_nodes(self) -> int:
        """Nodes at the pool's maximum: maxSize per shard, times its shards (zones for EFA pools)."""
        return self.spec.max_size * len(self.shards)

    @property
    def shard_accelerators(self) -> int:
        """Accelerators of one shard at its maximum size: a Karpenter NodePool's limit."""
        return self.accelerators_per_node * self.spec.max_size

    @property
    def total_accelerators(self) -> int:
        """Accelerators at the pool's maximum size over every shard: what budgets count."""
        return self.accelerators_per_node * self.max_nodes

    @property
    def desired_size(self) -> int:
        return self.spec.min_size if self.spec.desired_size is None else self.spec.desired_size

    @property
    def managed_capacity_type(self) -> str:
        return _MANAGED_CAPACITY[self.spec.capacity_types[0]]

    @property
    def karpenter_capacity_types(self) -> list[str]:
        return sorted({_KARPENTER_CAPACITY[c] for c in self.spec.capacity_types})

    @property
    def reserved(self) -> bool:
        return bool(RESERVED_CAPACITY & set(self.spec.capacity_types))

    @property
    def capacity_block(self) -> bool:
        return "capacity-block" in self.spec.capacity_types


def profile(spec: PoolSpec, cluster_zones: Sequence[str]) -> PoolProfile:
    """Derive a pool's profile. Raises CatalogError for types the catalog does not know or that mix
    vendors; ValueError for EFA on a type without it (settings report these earlier, by key)."""
    types = [catalog.instance(t) for t in spec.instance_types]
    vendor = catalog.pool_vendor(types)
    models = sorted({t.accelerator_model for t in types if t.accelerator_model})
    if len(models) > 1:
        raise ValueError(f"pool {spec.name}: instance types carry different accelerators ({', '.join(models)})")
    model = models[0] if models else None
    efa = all(t.efa_by_default for t in types) if spec.efa is None else spec.efa
    interfaces = catalog.max_efa_interfaces(types) if efa else 0
    if efa and interfaces == 0:
        without = [t.name for t in types if not t.efa_capable]
        raise ValueError(f"pool {spec.name}: EFA requested but {', '.join(without)} has no EFA")
    zones = pool_zones(spec.zones, cluster_zones, zonal=interfaces > 0)
    labels = {LABEL_NODE_ROLE: spec.role, LABEL_POOL: spec.name}
    if vendor != catalog.VENDOR_NONE:
        labels[LABEL_ACCELERATOR] = vendor
    if model:
        labels[LABEL_ACCELERATOR_MODEL] = model
    if interfaces:
        labels[LABEL_EFA] = "true"
    labels.update(spec.labels)
    taint_key = TAINT_KEYS.get(vendor)
    return PoolProfile(
        spec=spec,
        vendor=vendor,
        accelerator_model=model,
        ami_type=ami_type(vendor, spec.ami_family),
        labels=labels,
        taints=(Taint(taint_key, "true"),) if taint_key else (),
        resource_name=types[0].resource_name,
        accelerators_per_node=max(t.accelerator_count for t in types),
        efa_interfaces=interfaces,
        zones=zones,
        shards=shards(spec.name, zones, zonal=interfaces > 0),
        template_accelerators=min(t.accelerator_count for t in types),
    )


def pool_zones(listed: Sequence[str], cluster_zones: Sequence[str], *, zonal: bool) -> tuple[str, ...]:
    """The zones a pool uses: those it lists, else every cluster zone; a zonal (EFA) pool that lists
    none takes the first only, because each zone multiplies its nodes and p5-class nodes are costly."""
    if listed:
        return tuple(listed)
    return tuple(cluster_zones[:1]) if zonal else tuple(cluster_zones)


def shards(pool: str, zones: Sequence[str], *, zonal: bool) -> tuple[PoolShard, ...]:
    """One shard per zone for a zonal (EFA) pool, named by zone so adding a zone replaces nothing;
    otherwise one shard named like the pool spanning every zone."""
    if not zonal:
        return (PoolShard(zone=None, name=pool, zones=tuple(zones)),)
    return tuple(PoolShard(zone=z, name=f"{pool}-{zone_suffix(z)}", zones=(z,)) for z in zones)


def zone_suffix(zone: str) -> str:
    """What names a zone within its region: ``a`` for us-east-1a, ``lax-1a`` for us-west-2-lax-1a."""
    return _REGION_PREFIX.sub("", zone) or zone


def ami_type(vendor: str, family: str) -> str:
    """The EKS AMI type for a vendor and OS family (raises ValueError for pairs EKS does not ship)."""
    table = {
        (catalog.VENDOR_NVIDIA, "al2023"): catalog.AMI_AL2023_NVIDIA,
        (catalog.VENDOR_NVIDIA, "bottlerocket"): catalog.AMI_BOTTLEROCKET_NVIDIA,
        (catalog.VENDOR_NEURON, "al2023"): catalog.AMI_AL2023_NEURON,
        (catalog.VENDOR_NONE, "al2023"): catalog.AMI_AL2023_STANDARD,
        (catalog.VENDOR_NONE, "bottlerocket"): catalog.AMI_BOTTLEROCKET_STANDARD,
    }
    if (vendor, family) not in table:
        raise ValueError(f"no EKS {family} AMI for {vendor} instances")
    return table[(vendor, family)]
