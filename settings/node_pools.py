"""``inference-platform:nodePools``: accelerator pools, keyed by pool name.

Pools are data: the npu stack swaps a spec, not a module. The key is the pool's stable name (node
group, NodePool and label ``node-pool``), so reordering pools never replaces one. Every check that
would otherwise fail at AWS, minutes into an update, is made here and reported by key path.

An EFA pool is provisioned per zone (inference_platform.catalog.pool_profile): one node group (or Karpenter NodePool)
with its own cluster placement group in each zone it lists, named ``<pool>-<zone suffix>``; its sizes
apply to each zone, so it holds zones x maxSize nodes. Every other pool is one group over its zones
and its sizes are totals. ``max_nodes`` is the count everything else (the rollout's capacity checks,
the accelerator budget) uses.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import ClassVar, Literal

from pydantic import ConfigDict, Field, RootModel

from inference_platform import catalog
from inference_platform.catalog import aws_names, charts, offerings
from inference_platform.catalog.pool_profile import (
    DEFAULT_CONSOLIDATE_AFTER,
    DEFAULT_DISK_SIZE_GIB,
    DEFAULT_DISRUPTION_BUDGET,
    DEFAULT_EXPIRE_AFTER,
    DEFAULT_TERMINATION_GRACE_PERIOD,
    RESERVED_LABELS,
    AmiFamily,
    CapacityType,
    pool_zones,
    shards,
)
from inference_platform.planners import cold_start
from inference_platform.settings.base import CheckContext, Problem, Section
from inference_platform.settings.network import NetworkSettings

MAX_MANAGED_NODES = 450
MAX_CLUSTER_NODES = 5000
"""Kubernetes' tested limit for one cluster ("Considerations for large clusters": no more than 5,000
nodes); EKS's own scalability guidance builds on the same figure. Karpenter pools have no per-group
quota, so this bounds each pool's maxSize x zones and every pool together (with the system group)."""
# <= 22 characters: node groups are named "<project>-<stack>-<pool>" (prefix <= 40) and EKS allows 63.
MAX_GROUP_NAME = 22
_POOL_NAME = re.compile(r"^[a-z0-9]([a-z0-9-]{0,20}[a-z0-9])?$")
_RESERVATION_ID = re.compile(r"^cr-[0-9a-f]{17}$")
# Karpenter v1.14.1's CRD patterns (pkg/apis/v1/nodepool.go:89,255,264; tests/data/upstream/
# karpenter_v1.14.1_termination_grace_period.json): whole hours, minutes and seconds only, so "1.5h" or "500ms"
# (Go durations the API server refuses in a NodePool) fail here, not at `pulumi up`. expireAfter and
# consolidateAfter also take Never.
_DURATION = re.compile(r"^([0-9]+(s|m|h))+$")
_DURATION_PART = re.compile(r"([0-9]+)(s|m|h)")
_NEVER_ALLOWED = frozenset({"expireAfter", "consolidateAfter"})
_BUDGET = re.compile(r"^((100|[0-9]{1,2})%|\d+)$")
_LABEL_KEY = re.compile(r"^([a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")


class NodePoolSettings(Section):
    instance_types: list[str] = Field(min_length=1)
    """Required. Catalogued types of one vendor and one accelerator model (``[g6.xlarge, g6.2xlarge]``)."""
    capacity_types: list[CapacityType] = Field(
        # mypy reads the lambda's list as list[str]: Field's two-signature default_factory gives it no context.
        default_factory=lambda: ["on-demand"],  # type: ignore[arg-type]  # see above
        min_length=1,
    )
    """Default ``[on-demand]``. ``reservation`` (ODCR) and ``capacity-block`` need ``reservationIds``;
    spot never mixes with capacity-block. Managed node groups take exactly one; Karpenter prefers
    reserved capacity, then the others in price order."""
    reservation_ids: list[str] = Field(default_factory=list)
    """Default ``[]``. Capacity reservation ids (``cr-`` + 17 hex digits); managed node groups take one."""
    min_size: int = Field(default=0, ge=0)
    """Default 0 (scale to zero). Per zone for an EFA pool (one node group per zone), else for the pool."""
    max_size: int = Field(default=1, ge=1)
    """Default 1. Per zone for an EFA pool, else for the pool: the pool holds maxSize x zones (EFA) or
    maxSize nodes, and that times accelerators per node is what budgets and Karpenter limits count."""
    desired_size: int | None = Field(default=None, ge=0)
    """Default ``minSize``; per zone for an EFA pool. Ignored after creation (the cluster autoscaler, or
    Karpenter, owns it)."""
    disk_size_gib: int = Field(default=DEFAULT_DISK_SIZE_GIB, ge=20, le=16384)
    """Default 200 GiB encrypted gp3 (Triton + TensorRT-LLM images are ~20 GB)."""
    disk_throughput_mib_s: int | None = Field(default=None, ge=125, le=1000, alias="diskThroughputMiBps")
    """Default: what the pool's smallest EBS baseline can use, 125-1000 MiB/s (p5: 1000; g6.xlarge: 125). gp3
    throughput of the node disk; above 125 it is billed (and needs 4 IOPS per MiB/s: set for you)."""
    local_storage: Literal["auto", "raid0", "none"] = "auto"
    """Default ``auto``: ``raid0`` when every type has NVMe instance storage at least diskSizeGib large (AL2023).
    ``raid0`` puts containerd and kubelet state (images, the staged model) on a RAID0 of the NVMe disks."""
    availability_zones: list[str] | None = None
    """Default every cluster zone; for an EFA pool the first only (each zone adds maxSize nodes). Zones
    of the cluster the pool may use. An EFA pool gets one node group, placement group and (Karpenter)
    NodePool per zone listed, named ``<pool>-<zone suffix>`` (pool name + suffix within 22 characters)."""
    efa: bool | None = None
    """Default: on for types built for it (p4d, p5, p5en, p6-b200, trn1.32xlarge). ``true`` attaches EFA
    to other EFA-capable types; refused for types without EFA. EFA pools are provisioned per zone."""

    def efa_enabled(self) -> bool:
        """Whether the pool gets EFA (and so one shard per zone); False while its types are unknown."""
        if self.efa is not None:
            return self.efa
        try:
            types = [catalog.instance(t) for t in self.instance_types]
        except catalog.CatalogError:
            return False
        return all(t.efa_by_default for t in types)

    def disk_throughput(self) -> int:
        """gp3 MiB/s of the node disk: the setting, else the pool's smallest EBS baseline within 125..1000."""
        if self.disk_throughput_mib_s is not None:
            return self.disk_throughput_mib_s
        baselines = [d.ebs_baseline_mb_s * 1e6 / cold_start.MIB for t in self.instance_types
                     if (d := cold_start.disks(t)) is not None]  # fmt: skip
        if not baselines or len(baselines) < len(self.instance_types):
            return int(cold_start.GP3_BASE_MIB_S)
        return int(min(cold_start.GP3_MAX_MIB_S, max(cold_start.GP3_BASE_MIB_S, min(baselines))))

    def local_nvme_raid0(self) -> bool:
        """Whether the node's ephemeral storage is the RAID0 of its NVMe disks: only where the setting takes
        effect (AL2023, whose nodeadm NodeConfig or Karpenter instanceStorePolicy builds it, on types that
        have NVMe instance storage). Bottlerocket gets no such user data (node_pool._user_data)."""
        if self.local_storage == "none" or self.ami_family != "al2023":
            return False
        found = [cold_start.disks(t) for t in self.instance_types]
        if self.local_storage == "raid0":
            return all(d is not None and d.nvme_count > 0 for d in found)
        return all(d is not None and d.nvme_count and d.nvme_count * d.nvme_gb * 1e9 / 2**30 >= self.disk_size_gib
                   for d in found)  # fmt: skip

    def local_storage_problems(self, at: str) -> list[Problem]:
        """``localStorage: raid0`` where it does nothing: refused, naming why."""
        if self.local_storage != "raid0":
            return []
        if self.ami_family != "al2023":
            return [
                Problem(
                    f"{at}.localStorage",
                    f"got raid0; it has no effect with amiFamily {self.ami_family} (only AL2023 nodes get the "
                    "nodeadm NodeConfig that builds the RAID0; Bottlerocket keeps images on its EBS data volume): "
                    "remove it or use amiFamily al2023",
                )
            ]
        without = [t for t in self.instance_types if not ((d := cold_start.disks(t)) is not None and d.nvme_count)]
        if without:
            return [
                Problem(
                    f"{at}.localStorage",
                    f"got raid0; {', '.join(without)} {'has' if len(without) == 1 else 'have'} no NVMe instance "
                    "storage, so nodes of that type keep their state on the EBS root volume: remove it (auto "
                    "chooses raid0 where every type has the disks) or list only types with instance storage",
                )
            ]
        return []

    def zones(self, cluster_zones: Sequence[str]) -> tuple[str, ...]:
        """The zones the pool's nodes use (inference_platform.catalog.pool_profile.pool_zones)."""
        return pool_zones(self.availability_zones or (), cluster_zones, zonal=self.efa_enabled())

    def shard_count(self, cluster_zones: Sequence[str]) -> int:
        """Node groups (NodePools) of the pool: one per zone for EFA (at least one), else one."""
        return max(1, len(self.zones(cluster_zones))) if self.efa_enabled() else 1

    def max_nodes(self, cluster_zones: Sequence[str]) -> int:
        """Nodes at the pool's maximum over every zone: what capacity checks and budgets count."""
        return self.max_size * self.shard_count(cluster_zones)

    ami_family: AmiFamily = "al2023"
    """Default ``al2023``. ``bottlerocket`` for NVIDIA pools without EFA on managed node groups."""
    labels: dict[str, str] = Field(default_factory=dict)
    """Default ``{}``. Extra node labels; the platform's own (node-role, accelerator, ...) are reserved."""
    expire_after: str = DEFAULT_EXPIRE_AFTER
    """Default ``720h``. Karpenter: replace nodes older than this (``Never`` to keep them)."""
    termination_grace_period: str = DEFAULT_TERMINATION_GRACE_PERIOD
    """Default ``1h``. Karpenter: how long a draining node waits for pods before it is forced."""
    consolidate_after: str = DEFAULT_CONSOLIDATE_AFTER
    """Default ``10m``. Karpenter: how long a node stays empty before it is removed."""
    disruption_budget: str = DEFAULT_DISRUPTION_BUDGET
    """Default ``10%``. Karpenter: nodes (count or percent) that may be disrupted at once."""


class NodePoolsSettings(RootModel[dict[str, NodePoolSettings]]):
    """The pools of the stack; an empty mapping means a cluster with system nodes only."""

    model_config = ConfigDict(frozen=True)
    key: ClassVar[str] = "nodePools"
    root: dict[str, NodePoolSettings] = Field(default_factory=dict)

    def instance_types(self, pool: str) -> list[str] | None:
        """The pool's instance types, or None when there is no such pool (serving settings ask).

        A stack without any pool (a cluster with system nodes only) answers ``[]``: there is no
        accelerator to check a model against, which is not a mistake in the serving settings."""
        if not self.root:
            return []
        found = self.root.get(pool)
        return list(found.instance_types) if found is not None else None

    def problems(self, ctx: CheckContext) -> list[Problem]:
        cluster = ctx.sections.get("cluster")
        karpenter = getattr(cluster, "provisioning", "managed") == "karpenter"
        zones = cluster_zones(ctx)
        out: list[Problem] = []
        for name, pool in self.root.items():
            out += _pool_problems(name, pool, karpenter=karpenter, zones=zones)
            out += _offering_problems(name, pool, zones, ctx.region.name if ctx.region else None)
        out += _system_offering_problems(cluster, zones, ctx.region.name if ctx.region else None)
        out += _cluster_size_problems(self.root, cluster, zones)
        version = getattr(cluster, "kubernetes_version", None)
        if self.root and not karpenter and version is not None and version not in charts.CLUSTER_AUTOSCALER_TAGS:
            out.append(
                Problem(
                    "cluster.kubernetesVersion",
                    f"got {version!r}; managed node pools are scaled by the cluster autoscaler, pinned for "
                    f"{', '.join(charts.CLUSTER_AUTOSCALER_TAGS)} (catalog/charts.py)",
                )
            )
        return out


def _pool_problems(name: str, pool: NodePoolSettings, *, karpenter: bool, zones: list[str] | None) -> list[Problem]:
    at = f"nodePools.{name}"
    out: list[Problem] = []
    if not _POOL_NAME.match(name):
        out.append(Problem(at, "pool names are 1-22 lowercase letters, digits and '-' (they name node groups)"))
    types = _known_types(at, pool, out)
    if types and len(types) == len(pool.instance_types):
        out += _vendor_problems(at, pool, types)
    desired = pool.min_size if pool.desired_size is None else pool.desired_size
    if pool.min_size > pool.max_size:
        out.append(Problem(f"{at}.minSize", f"{pool.min_size} is larger than maxSize {pool.max_size}"))
    elif not pool.min_size <= desired <= pool.max_size:
        out.append(
            Problem(f"{at}.desiredSize", f"{desired} is outside [minSize {pool.min_size}, maxSize {pool.max_size}]")
        )
    elif karpenter:
        # A Karpenter NodePool has limits but no minimum or desired count: nodes exist for pending pods only.
        # Accepting the keys would promise warm nodes that never come.
        if pool.min_size > 0:
            out.append(
                Problem(
                    f"{at}.minSize",
                    f"got {pool.min_size}; a Karpenter pool (cluster.provisioning: karpenter) has no minimum, nodes "
                    "come for pending pods only: keep serving replicas running instead (inference.replicas, "
                    "autoscaling.minReplicas), or use cluster.provisioning: managed",
                )
            )
        if pool.desired_size is not None:
            out.append(
                Problem(
                    f"{at}.desiredSize",
                    f"got {pool.desired_size}; a Karpenter pool (cluster.provisioning: karpenter) has no desired node "
                    "count (nodes follow pending pods)",
                )
            )
    if not karpenter and pool.max_size > MAX_MANAGED_NODES:
        out.append(
            Problem(f"{at}.maxSize", f"{pool.max_size} exceeds EKS's {MAX_MANAGED_NODES} nodes per managed node group")
        )
    out += _capacity_problems(at, pool, karpenter)
    out += _zone_problems(name, pool, zones)
    if pool.ami_family == "bottlerocket":
        if karpenter:
            out.append(Problem(f"{at}.amiFamily", "Karpenter pools use the pinned AL2023 release; use al2023"))
        elif types and any(catalog.AMI_BOTTLEROCKET_NVIDIA not in t.ami_types for t in types):
            out.append(
                Problem(f"{at}.amiFamily", "bottlerocket is offered for NVIDIA g5/g6/g6e/p4d/p5/p5en types only")
            )
        elif types and len(types) == len(pool.instance_types) and pool.efa_enabled():
            # The EFA nodes' locked-memory limit and huge pages are nodeadm NodeConfig and a cloud-init script
            # (components/compute/node_pool.py): AL2023 only. A Bottlerocket EFA node would boot without them.
            out.append(
                Problem(
                    f"{at}.amiFamily",
                    f"got bottlerocket for an EFA pool ({', '.join(pool.instance_types)}); its nodes need the "
                    "containers' locked-memory limit and the huge pages EFA registers memory from, which only the "
                    "AL2023 nodes get (nodeadm NodeConfig): use amiFamily al2023, or efa: false",
                )
            )
    if types and len(types) == len(pool.instance_types):
        out += pool.local_storage_problems(at)
    for key, value in pool.labels.items():
        if key in RESERVED_LABELS:
            out.append(Problem(f"{at}.labels.{key}", "set by the platform from the catalog; choose another key"))
        elif not _LABEL_KEY.match(key) or not catalog.is_label_value(value):
            out.append(Problem(f"{at}.labels.{key}", f"{key}={value!r} is not a valid Kubernetes label"))
    for field, value in (("expireAfter", pool.expire_after), ("terminationGracePeriod", pool.termination_grace_period),
                         ("consolidateAfter", pool.consolidate_after)):  # fmt: skip
        if not _DURATION.match(value) and not (field in _NEVER_ALLOWED and value == "Never"):
            never = " or Never" if field in _NEVER_ALLOWED else ""
            out.append(Problem(f"{at}.{field}", f"got {value!r}; expected whole hours, minutes and seconds such as "
                                                f"720h, 10m or 1h30m{never} (Karpenter's pattern)"))  # fmt: skip
    if not _BUDGET.match(pool.disruption_budget):
        out.append(Problem(f"{at}.disruptionBudget", f"got {pool.disruption_budget!r}; expected a count or 0-100%"))
    return out


def _known_types(at: str, pool: NodePoolSettings, out: list[Problem]) -> list[catalog.InstanceType]:
    found = []
    for i, name in enumerate(pool.instance_types):
        try:
            found.append(catalog.instance(name))
        except catalog.CatalogError as err:
            out.append(Problem(f"{at}.instanceTypes[{i}]", str(err)))
    if len(set(pool.instance_types)) != len(pool.instance_types):
        out.append(Problem(f"{at}.instanceTypes", "lists a type twice"))
    return found


def _vendor_problems(at: str, pool: NodePoolSettings, types: list[catalog.InstanceType]) -> list[Problem]:
    out = []
    vendors = sorted({t.vendor for t in types})
    models = sorted({t.accelerator_model or "none" for t in types})
    if len(vendors) > 1:
        detail = ", ".join(f"{t.name}={t.vendor}" for t in types)
        out.append(
            Problem(f"{at}.instanceTypes", f"mixes vendors ({detail}); one AMI, taint and device plugin per pool")
        )
    elif vendors == [catalog.VENDOR_NONE]:
        out.append(
            Problem(f"{at}.instanceTypes", "has no accelerators; general-purpose nodes are cluster.systemNodeGroup")
        )
    elif len(models) > 1:
        out.append(
            Problem(
                f"{at}.instanceTypes", f"mixes accelerators ({', '.join(models)}); label accelerator-model must hold"
            )
        )
    if pool.efa:
        without = [t.name for t in types if not t.efa_capable]
        if without:
            out.append(Problem(f"{at}.efa", f"EFA requested but {', '.join(without)}: no EFA interface"))
    return out


def _capacity_problems(at: str, pool: NodePoolSettings, karpenter: bool) -> list[Problem]:
    out = []
    kinds = pool.capacity_types
    if len(set(kinds)) != len(kinds):
        out.append(Problem(f"{at}.capacityTypes", "lists a capacity type twice"))
    if "spot" in kinds and "capacity-block" in kinds:
        out.append(
            Problem(f"{at}.capacityTypes", "spot cannot be combined with capacity-block (a prepaid, fixed-term block)")
        )
    if not karpenter and len(set(kinds)) > 1:
        out.append(
            Problem(
                f"{at}.capacityTypes",
                "a managed node group takes one capacity type; use cluster.provisioning: karpenter for fallbacks",
            )
        )
    unsold = [t for t in pool.instance_types if aws_names.instance_family(t) not in aws_names.CAPACITY_BLOCK_FAMILIES]
    if "capacity-block" in kinds and unsold and not any(p.path == f"{at}.capacityTypes" for p in out):
        out.append(
            Problem(
                f"{at}.capacityTypes",
                f"capacity-block with {', '.join(repr(t) for t in unsold)}: AWS sells Capacity Blocks for ML only for "
                f"{', '.join(sorted(aws_names.CAPACITY_BLOCK_FAMILIES))} instances",
            )
        )
    reserved = [k for k in kinds if k in ("reservation", "capacity-block")]
    if reserved and not pool.reservation_ids:
        out.append(
            Problem(
                f"{at}.reservationIds", f"capacity type {reserved[0]} needs the id of its capacity reservation (cr-...)"
            )
        )
    if pool.reservation_ids and not reserved:
        out.append(Problem(f"{at}.reservationIds", "given without capacity type reservation or capacity-block"))
    if not karpenter and len(pool.reservation_ids) > 1:
        out.append(
            Problem(f"{at}.reservationIds", "a managed node group targets one reservation; use Karpenter for more")
        )
    for i, rid in enumerate(pool.reservation_ids):
        if not _RESERVATION_ID.match(rid):
            out.append(Problem(f"{at}.reservationIds[{i}]", f"got {rid!r}; expected cr- followed by 17 hex digits"))
    return out


def _zone_problems(name: str, pool: NodePoolSettings, zones: list[str] | None) -> list[Problem]:
    at = f"nodePools.{name}.availabilityZones"
    out = []
    wanted = pool.availability_zones
    if wanted is not None and not wanted:
        out.append(Problem(at, "is empty; omit it to use every cluster zone"))
    for i, zone in enumerate(wanted or ()):
        if zones is not None and zone not in zones:
            out.append(
                Problem(f"{at}[{i}]", f"got {zone!r}; the cluster's zones (network.availabilityZones, or the "
                        f"region's first network.azCount) are {', '.join(zones)}")
            )  # fmt: skip
    if wanted and len(set(wanted)) != len(wanted):
        out.append(Problem(at, "lists a zone twice"))
    if pool.efa_enabled():
        groups = shards(name, pool.zones(zones or ()), zonal=True)
        too_long = [g.name for g in groups if len(g.name) > MAX_GROUP_NAME]
        if too_long:
            out.append(
                Problem(
                    f"nodePools.{name}",
                    f"an EFA pool has a node group per zone ({', '.join(too_long)}); keep '<pool>-<zone suffix>' "
                    f"within {MAX_GROUP_NAME} characters",
                )
            )
    return out


def _offering_problems(name: str, pool: NodePoolSettings, zones: list[str] | None, region: str | None) -> list[Problem]:
    """Each type offered in each zone of the pool (inference_platform.catalog.offerings: AWS's offerings as moto
    ships them). Where zone names map to zones per account only what holds in every account is checked
    here; the program checks the rest against the account's zone IDs (infra/foundation.py)."""
    if region is None or zones is None:
        return []
    known = [t for t in dict.fromkeys(pool.instance_types) if t in catalog.CATALOG]
    pool_zones_ = [z for z in pool.zones(zones) if z in zones]
    out = []
    for gap in offerings.unoffered(known, region, pool_zones_):
        if not gap.offered_zone_ids:
            index = pool.instance_types.index(gap.instance_type)
            out.append(Problem(f"nodePools.{name}.instanceTypes[{index}]", gap.describe(region)))
        else:
            out.append(Problem(f"nodePools.{name}.availabilityZones", gap.describe(region)))
    return out


def _system_offering_problems(cluster: object, zones: list[str] | None, region: str | None) -> list[Problem]:
    """The system node group spans every cluster zone: each of its types offered in each of them."""
    group = getattr(cluster, "system_node_group", None)
    if group is None or region is None or zones is None:
        return []
    known = [t for t in dict.fromkeys(group.instance_types) if t in catalog.CATALOG]
    return [
        Problem("cluster.systemNodeGroup.instanceTypes", gap.describe(region))
        for gap in offerings.unoffered(known, region, zones)
    ]


def _cluster_size_problems(
    pools: dict[str, NodePoolSettings], cluster: object, zones: list[str] | None
) -> list[Problem]:
    """Every pool's nodes at its maximum, and all of them with the system group, within one cluster's
    limit. For an EFA pool maxSize counts per zone, so its bound is the limit over its zones."""
    out: list[Problem] = []
    total = getattr(getattr(cluster, "system_node_group", None), "max_size", 0) or 0
    for name, pool in pools.items():
        shards = pool.shard_count(zones or ())
        nodes = pool.max_size * shards
        total += nodes
        if nodes > MAX_CLUSTER_NODES:
            bound = MAX_CLUSTER_NODES // shards
            per_zone = f" per zone over {shards} zones" if shards > 1 else ""
            out.append(
                Problem(
                    f"nodePools.{name}.maxSize",
                    f"got {pool.max_size}{per_zone}: {nodes} nodes, over the {MAX_CLUSTER_NODES} nodes one Kubernetes "
                    f"cluster supports; at most {bound}",
                )
            )
    if total > MAX_CLUSTER_NODES and not out:
        out.append(
            Problem(
                "nodePools",
                f"the pools and the system group can grow to {total} nodes together, over the {MAX_CLUSTER_NODES} "
                "nodes one Kubernetes cluster supports; lower the pools' maxSize",
            )
        )
    return out


def cluster_zones(ctx: CheckContext) -> list[str] | None:
    """The zones the foundation will use, as far as settings can know them."""
    network = ctx.sections.get("network")
    if not isinstance(network, NetworkSettings) or ctx.region is None:
        return None
    explicit = getattr(network, "availability_zones", None)
    return list(explicit) if explicit else sorted(ctx.region.zones)[: network.az_count]


def duration_seconds(value: str) -> int | None:
    """A Karpenter duration (``1h30m``) in seconds; None for ``Never`` or a value its pattern refuses."""
    if not _DURATION.match(value):
        return None
    return sum(int(n) * {"s": 1, "m": 60, "h": 3600}[unit] for n, unit in _DURATION_PART.findall(value))
