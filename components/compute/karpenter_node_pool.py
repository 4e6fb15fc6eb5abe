"""One pool provisioned by Karpenter: an EC2NodeClass and a NodePool (karpenter.sh/v1) per shard, plus
a cluster placement group per shard of an EFA pool.

The same PoolProfile as a managed node group, expressed as Karpenter requirements: exact instance
types (with family and size, which Karpenter's scheduling simulation uses), capacity types including
``reserved`` with capacity-reservation selector terms, the pool's labels and taint, a limit on the
pool's total accelerators, and a disruption policy suited to GPUs: only empty nodes are consolidated
(evicting a serving pod costs a multi-minute model load), at most 10% of nodes at a time, nodes expire
after ``expireAfter`` and get a long ``terminationGracePeriod`` to drain streams (ai-on-eks NodePools).
EFA interfaces come from Karpenter itself: it attaches as many as the pods on a node request
(``vpc.amazonaws.com/efa``).

An EFA pool has one shard per zone (inference_platform.catalog.pool_profile): an EC2NodeClass selects one placement
group, and a cluster placement group lives in one zone, so each zone gets its own class, group and
NodePool, named ``<pool>-<zone suffix>`` and limited to the per-zone maximum. Every shard carries the
pool's labels, so pods select the pool, not a shard.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from inference_platform.catalog import charts
from inference_platform.catalog.pool_profile import PoolProfile, PoolShard
from inference_platform.components.common.errors import raise_if
from inference_platform.components.compute.node_pool import (
    EFA_MEMLOCK_NODE_CONFIG,
    FAST_IMAGE_PULL_NODE_CONFIG,
    IMDS_HOP_LIMIT,
    ROOT_DEVICE,
    node_config_mime,
    node_scripts,
)

NODEPOOL_API = "karpenter.sh/v1"
NODECLASS_API = "karpenter.k8s.aws/v1"


@dataclass(frozen=True, kw_only=True)
class KarpenterNodePoolArgs:
    """What a Karpenter pool needs: the pool's profile, the cluster, node role, cluster security group and provider."""

    pool: PoolProfile
    """Required. The pool (inference_platform.catalog.pool_profile)."""
    cluster_name: str
    """Required. Physical cluster name: subnets and the node SG are discovered by its tag."""
    node_role_name: pulumi.Input[str]
    """Required. Node IAM role name; Karpenter makes the instance profile."""
    cluster_security_group_id: pulumi.Input[str]
    """Required. EKS's cluster security group (control plane <-> nodes)."""
    provider: k8s.Provider
    """Required. The cluster's Kubernetes provider."""
    depends_on: Sequence[pulumi.Resource] = field(default_factory=tuple)
    """Required in practice: the Karpenter release (its CRDs and webhook must exist first)."""
    instance_tags: Mapping[str, str] = field(default_factory=dict)
    """Default none. Tags Karpenter puts on instances, volumes and interfaces it creates."""
    volume_kms_key_arn: pulumi.Input[str] | None = None
    """Default none: the account's default EBS key. The customer-managed key of the root volume; Karpenter
    launches through EC2 Fleet with its own role, which needs grants on this key (inference_platform.components.compute.karpenter)."""
    ami_alias: str = charts.KARPENTER_AMI_ALIAS
    """Default the pinned AL2023 release (``al2023@vYYYYMMDD``); never ``@latest`` in a plan."""


class KarpenterNodePool(pulumi.ComponentResource):
    """One pool provisioned by Karpenter: an EC2NodeClass and a NodePool per shard (and placement groups for EFA)."""

    node_pool_names: list[str]
    """The NodePools (and EC2NodeClasses, named alike), one per shard."""
    placement_group_names: dict[str, pulumi.Output[str]]
    """By shard name; empty for a pool without EFA."""

    def __init__(self, name: str, args: KarpenterNodePoolArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        _validate(args)
        super().__init__("inference:compute:KarpenterNodePool", name, None, opts)
        self.node_pool_names = [shard.name for shard in args.pool.shards]
        self.placement_group_names = {}
        for shard in args.pool.shards:
            self._shard(name, args, shard)
        self.register_outputs(
            {"node_pool_names": self.node_pool_names, "placement_group_names": self.placement_group_names}
        )

    def _shard(self, name: str, args: KarpenterNodePoolArgs, shard: PoolShard) -> None:
        # Zonal shards are keyed by zone: adding a zone adds resources and replaces none.
        key = f"{name}-{shard.zone}" if shard.zone else name
        placement = None
        if args.pool.efa:
            group = aws.ec2.PlacementGroup(
                f"{key}-placement",
                name=f"{args.cluster_name}-{shard.name}",
                strategy="cluster",
                opts=pulumi.ResourceOptions(parent=self),
            )
            placement = self.placement_group_names[shard.name] = group.name
        k8s_child = pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=list(args.depends_on))
        node_class = k8s.apiextensions.CustomResource(
            f"{key}-nodeclass",
            api_version=NODECLASS_API,
            kind="EC2NodeClass",
            metadata={"name": shard.name},
            spec=node_class_spec(args, placement),
            opts=k8s_child,
        )
        k8s.apiextensions.CustomResource(
            f"{key}-nodepool",
            api_version=NODEPOOL_API,
            kind="NodePool",
            metadata={"name": shard.name},
            spec=node_pool_spec(args.pool, shard),
            opts=pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=[node_class]),
        )


def node_class_spec(args: KarpenterNodePoolArgs, placement_group: pulumi.Input[str] | None) -> dict[str, Any]:
    pool = args.pool
    discovery = {"tags": {"karpenter.sh/discovery": args.cluster_name}}
    spec: dict[str, Any] = {
        "role": args.node_role_name,
        "amiSelectorTerms": [{"alias": args.ami_alias}],
        "subnetSelectorTerms": [discovery],
        "securityGroupSelectorTerms": [discovery, {"id": args.cluster_security_group_id}],
        "metadataOptions": {
            "httpEndpoint": "enabled",
            "httpProtocolIPv6": "disabled",
            "httpPutResponseHopLimit": IMDS_HOP_LIMIT,
            "httpTokens": "required",
        },
        "blockDeviceMappings": [
            {
                "deviceName": ROOT_DEVICE,
                "rootVolume": True,
                "ebs": {
                    "volumeSize": f"{pool.spec.disk_size_gib}Gi",
                    "volumeType": "gp3",
                    "encrypted": True,
                    "deleteOnTermination": True,
                    **({"throughput": pool.spec.disk_throughput_mib_s} if pool.spec.disk_throughput_mib_s else {}),
                    **({"iops": pool.spec.disk_iops} if pool.spec.disk_iops else {}),
                    **({"kmsKeyID": args.volume_kms_key_arn} if args.volume_kms_key_arn is not None else {}),
                },
            }
        ],
        "tags": dict(args.instance_tags),
    }
    if pool.spec.local_nvme_raid0 and pool.spec.ami_family == "al2023":
        # Karpenter v1.14.1 pkg/apis/v1/ec2nodeclass.go: RAID0 of every NVMe instance-store disk, holding
        # /var/lib/containerd and /var/lib/kubelet (images and emptyDir volumes).
        spec["instanceStorePolicy"] = "RAID0"
    parts: list[str] = []
    if pool.efa and pool.spec.ami_family == "al2023":
        # Karpenter appends every MIME part of userData to its own NodeConfig (bootstrap/nodeadm.go parseUserData):
        # the EFA containers' rlimits (components/compute/node_pool.py EFA_MEMLOCK_NODE_CONFIG) and the script
        # reserving the EFA pods' huge pages before the kubelet starts (catalog/efa.py).
        parts.append(EFA_MEMLOCK_NODE_CONFIG)
    if pool.spec.fast_image_pull and pool.spec.ami_family == "al2023":
        parts.append(FAST_IMAGE_PULL_NODE_CONFIG)
    scripts = node_scripts(pool)
    if parts or scripts:
        spec["userData"] = node_config_mime(parts, scripts)
    if pool.spec.reservation_ids:
        spec["capacityReservationSelectorTerms"] = [{"id": rid} for rid in pool.spec.reservation_ids]
    if placement_group is not None:
        spec["placementGroupSelector"] = {"name": placement_group}
    return spec


def node_pool_spec(pool: PoolProfile, shard: PoolShard) -> dict[str, Any]:
    spec = pool.spec
    requirements = [
        {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": sorted(spec.instance_types)},
        {
            "key": "karpenter.k8s.aws/instance-family",
            "operator": "In",
            "values": sorted({t.split(".")[0] for t in spec.instance_types}),
        },
        {
            "key": "karpenter.k8s.aws/instance-size",
            "operator": "In",
            "values": sorted({t.split(".", 1)[1] for t in spec.instance_types}),
        },
        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": pool.karpenter_capacity_types},
        {"key": "topology.kubernetes.io/zone", "operator": "In", "values": list(shard.zones)},
    ]
    return {
        "template": {
            "metadata": {"labels": dict(pool.labels)},
            "spec": {
                "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": shard.name},
                "requirements": requirements,
                "taints": [{"key": t.key, "value": t.value, "effect": t.effect} for t in pool.taints],
                "expireAfter": spec.expire_after,
                "terminationGracePeriod": spec.termination_grace_period,
            },
        },
        "limits": {pool.resource_name: str(pool.shard_accelerators)} if pool.resource_name else {},
        "disruption": {
            "consolidationPolicy": "WhenEmpty",
            "consolidateAfter": spec.consolidate_after,
            "budgets": [{"nodes": spec.disruption_budget}],
        },
    }


def _validate(args: KarpenterNodePoolArgs) -> None:
    problems = []
    if not args.pool.zones:
        problems.append("pool.zones: a Karpenter pool needs at least one zone")
    if args.pool.spec.ami_family != "al2023":
        problems.append(f"pool.ami_family: {args.pool.spec.ami_family!r}; Karpenter pools use the pinned al2023 alias")
    if not args.ami_alias.startswith("al2023@v"):
        problems.append(f"ami_alias: {args.ami_alias!r} is not a pinned al2023@vYYYYMMDD release")
    if args.pool.spec.image_cache is not None:
        # The cache volume and its mount are written for managed node groups' launch templates (node_pool.py); an
        # EC2NodeClass would get the mount script without the volume.
        problems.append("pool.image_cache: not offered on Karpenter pools; use managed node groups")
    raise_if("KarpenterNodePool", problems)
