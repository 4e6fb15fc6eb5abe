"""The managed node groups of one pool, with their launch templates (and placement groups for EFA).

The launch template carries what EKS's default one does not: IMDSv2 required with hop limit 1 (pods
use Pod Identity, so nothing in a pod's network namespace needs the node's credentials; EKS best
practices, "Restrict access to the instance profile"), an encrypted gp3 root volume sized per pool,
the stack's tags on instances, volumes and network interfaces (the stack's tag transform only reaches
the template itself), capacity reservations, and for EFA pools every EFA interface the instance type
takes plus a cluster placement group.

A pool is one node group per shard (inference_platform.catalog.pool_profile): an EFA pool has one per zone, each
pinned to its zone with its own placement group (a cluster placement group cannot span zones), so its
nodes can serve from several zones; other pools are one group across their zones. With
``autoscaler_cluster_name`` each group's Auto Scaling group is tagged for the cluster autoscaler
(inference_platform.components.compute.autoscaler_tags): EKS does not copy a node group's own tags to its ASG, where the
autoscaler reads them, so the tags go on the ASG itself (as terraform-aws-eks does).

Replacement. ``aws_eks_node_group`` forces a new group when any of ``instance_types``, ``capacity_type``,
``ami_type``, ``subnet_ids``, ``node_role_arn``, ``launch_template.id`` (or ``node_group_name``) changes
(Terraform AWS provider, ``internal/service/eks/node_group.go``; pinned in
tests/data/upstream/replacement.json), and Pulumi replaces create-before-delete: a group keeping its name
would collide with itself (``ResourceInUseException``). So a group's name ends in a digest of exactly
those inputs (``<prefix>-<shard>-<8 hex>``): a change that forces a new group also names a new one, the
new group is ACTIVE before the old one is drained and deleted, and serving capacity is kept through the
swap. The digest is stable while those inputs are (a plan twice gives the same name), so nothing else
renames a group. A pool on reserved capacity (an ODCR or a Capacity Block) cannot hold two groups' nodes
at once, the new group's instances would wait for the old group's reservation: its group keeps the plain
name ``<prefix>-<shard>`` and is replaced delete-before-replace. Launch templates and placement groups
keep ``<prefix>-<shard>``: their only replace-forcing inputs here are the name itself (and the constant
placement strategy), so a replacement always comes with a new name.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_aws as aws

from inference_platform.catalog import image_cache
from inference_platform.catalog.efa import efa_hugepages_script, node_hugepages_2mi
from inference_platform.catalog.nodeadm import AMI_CONTAINER_RLIMITS
from inference_platform.catalog.pool_profile import PoolProfile, PoolShard
from inference_platform.components.common.errors import raise_if
from inference_platform.components.compute import autoscaler_tags

IMDS_HOP_LIMIT = 1
ROOT_DEVICE = "/dev/xvda"
BOTTLEROCKET_DATA_DEVICE = "/dev/xvdb"
BOTTLEROCKET_ROOT_GIB = 4
MAX_MANAGED_NODES = 450
"""EKS quota "nodes per managed node group"."""
MAX_NODE_GROUP_NAME = 63
"""EKS CreateNodegroup: ``nodegroupName`` is at most 63 characters."""
REPLACEMENT_DIGEST_CHARS = 8
"""Hex characters of the replace-forcing inputs' digest that end an elastic pool's node group name."""


@dataclass(frozen=True, kw_only=True)
class NodePoolArgs:
    """What a managed pool needs: the cluster, the pool's profile (``profile``), node role, subnets and security
    groups."""

    cluster_name: pulumi.Input[str]
    """Required. The cluster the nodes join."""
    name_prefix: str
    """Required. Physical-name prefix (node group ``<prefix>-<shard>``: ``<prefix>-<pool>``, or
    ``<prefix>-<pool>-<zone suffix>`` for an EFA pool's zonal groups)."""
    kubernetes_version: str
    """Required. The nodes' kubelet version: the cluster's (managed node groups follow it on update)."""
    node_role_arn: pulumi.Input[str]
    """Required. IAM role of the nodes (inference_platform.components.node_role)."""
    pool: PoolProfile
    """Required. The pool, as derived from the catalog (inference_platform.catalog.pool_profile); its sizes apply to
    each of its node groups."""
    subnet_ids_by_zone: Mapping[str, pulumi.Input[str]]
    """Required. Private subnet per zone; the pool uses those of ``pool.zones``."""
    security_group_ids: Sequence[pulumi.Input[str]]
    """Required. The cluster security group (control plane <-> nodes) and the node security group,
    whose self-referencing all-traffic rule NCCL and EFA need."""
    instance_tags: Mapping[str, str] = field(default_factory=dict)
    """Default none. Tags for instances, volumes and network interfaces (the stack's default tags)."""
    volume_kms_key_arn: pulumi.Input[str] | None = None
    """Default none: the account's default EBS key. The customer-managed key of every EBS volume; its key
    policy must let EC2 Auto Scaling's service-linked role use it (inference_platform.components.keys.kms)."""
    autoscaler_cluster_name: str | None = None
    """Default none: no autoscaler tags (a stack without the cluster autoscaler). The physical cluster
    name: tag every group's ASG for the cluster autoscaler's auto-discovery and scale-from-zero
    templates."""


class NodePool(pulumi.ComponentResource):
    """One pool as EKS managed node groups, one per shard, with hardened launch templates (and placement groups for
    EFA)."""

    node_group_names: dict[str, pulumi.Output[str]]
    """By shard name (``inference``, or ``inference-a`` for an EFA pool's zone a)."""
    node_group_arns: dict[str, pulumi.Output[str]]
    launch_template_ids: dict[str, pulumi.Output[str]]
    placement_group_names: dict[str, pulumi.Output[str]]
    """By shard name; empty for a pool without EFA."""

    def __init__(self, name: str, args: NodePoolArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        _validate(args)
        super().__init__("inference:compute:NodePool", name, None, opts)
        self.node_group_names, self.node_group_arns = {}, {}
        self.launch_template_ids, self.placement_group_names = {}, {}
        restores = self._fast_restores(name, args)
        for shard in args.pool.shards:
            self._shard(name, args, shard, restores)
        self.register_outputs(
            {
                "node_group_names": self.node_group_names,
                "node_group_arns": self.node_group_arns,
                "launch_template_ids": self.launch_template_ids,
                "placement_group_names": self.placement_group_names,
            }
        )

    def _fast_restores(self, name: str, args: NodePoolArgs) -> list[pulumi.Resource]:
        """Fast snapshot restore of the image cache's snapshot in each zone the pool's nodes launch in (a zone without
        it restores volumes lazily from S3). Keyed by zone, so adding a zone adds one and replaces none; destroying
        disables it (nothing is stored). The provider waits until it is enabled, which takes about an hour per TiB
        (catalog/image_cache.py): the create timeout is sized to the snapshot."""
        cache = args.pool.spec.image_cache
        if cache is None or not cache.fast_snapshot_restore:
            return []
        timeout = pulumi.CustomTimeouts(create=f"{image_cache.fsr_enable_minutes(cache.size_gib)}m")
        opts = pulumi.ResourceOptions(parent=self, custom_timeouts=timeout)
        return [
            aws.ebs.FastSnapshotRestore(
                f"{name}-image-cache-{zone}", availability_zone=zone, snapshot_id=cache.snapshot_id, opts=opts
            )
            for zone in args.pool.zones
        ]

    def _shard(self, name: str, args: NodePoolArgs, shard: PoolShard, restores: Sequence[pulumi.Resource]) -> None:
        # Zonal shards are keyed by zone: adding a zone adds resources and replaces none.
        key = f"{name}-{shard.zone}" if shard.zone else name
        child = pulumi.ResourceOptions(parent=self)
        pool, spec = args.pool, args.pool.spec
        physical = f"{args.name_prefix}-{shard.name}"
        placement = None
        if pool.efa:
            group = aws.ec2.PlacementGroup(
                f"{key}-placement", name=physical, strategy="cluster", tags={"Name": physical}, opts=child
            )
            self.placement_group_names[shard.name] = group.name
            placement = {"group_name": group.name}
        template = aws.ec2.LaunchTemplate(
            f"{key}-lt",
            name=physical,
            description=f"Nodes of pool {spec.name}" + (f" in {shard.zone}" if shard.zone else ""),
            update_default_version=True,
            metadata_options={
                "http_endpoint": "enabled",
                "http_tokens": "required",
                "http_put_response_hop_limit": IMDS_HOP_LIMIT,
                "instance_metadata_tags": "disabled",
            },
            block_device_mappings=_block_devices(pool, args.volume_kms_key_arn),
            user_data=_user_data(pool),
            # With explicit interfaces the groups go on each interface; EC2 refuses both forms at once.
            network_interfaces=_efa_interfaces(pool.efa_interfaces, args.security_group_ids) or None,
            vpc_security_group_ids=None if pool.efa else list(args.security_group_ids),
            placement=placement,
            capacity_reservation_specification=_reservation(pool),
            instance_market_options={"market_type": "capacity-block"} if pool.capacity_block else None,
            tag_specifications=[
                {"resource_type": kind, "tags": {**args.instance_tags, "Name": physical}}
                for kind in ("instance", "volume", "network-interface")
            ],
            tags={"Name": physical},
            opts=child,
        )
        subnet_ids = [args.subnet_ids_by_zone[z] for z in shard.zones]
        holds_reservation = reserved_capacity(pool)
        group = aws.eks.NodeGroup(
            f"{key}-ng",
            cluster_name=args.cluster_name,
            node_group_name=physical
            if holds_reservation
            else pulumi.Output.all(subnet_ids, args.node_role_arn, template.id).apply(
                lambda v: node_group_name(
                    physical,
                    instance_types=spec.instance_types,
                    capacity_type=pool.managed_capacity_type,
                    ami_type=pool.ami_type,
                    subnet_ids=v[0],
                    node_role_arn=v[1],
                    launch_template_id=v[2],
                )
            ),
            node_role_arn=args.node_role_arn,
            version=args.kubernetes_version,
            subnet_ids=subnet_ids,
            instance_types=list(spec.instance_types),
            ami_type=pool.ami_type,
            capacity_type=pool.managed_capacity_type,
            scaling_config={"min_size": spec.min_size, "max_size": spec.max_size, "desired_size": pool.desired_size},
            # One node at a time: an accelerator node is a large share of a pool's capacity.
            update_config={"max_unavailable": 1},
            labels=dict(pool.labels),
            taints=[{"key": t.key, "value": t.value, "effect": t.managed_effect} for t in pool.taints],
            launch_template={"id": template.id, "version": template.latest_version.apply(str)},
            tags={"Name": physical},
            # The cluster autoscaler (or an operator, without one) owns the desired size once the group exists.
            # A group on reserved capacity goes before its replacement comes (module docstring).
            opts=pulumi.ResourceOptions(
                parent=self,
                ignore_changes=["scalingConfig.desiredSize"],
                delete_before_replace=holds_reservation or None,
                # Nodes launched from a new cache snapshot come after its fast restore is enabled, not while it
                # optimizes (their volumes would restore lazily).
                depends_on=list(restores) or None,
            ),
        )
        if args.autoscaler_cluster_name is not None:
            asg_name = group.resources.apply(lambda found: found[0].autoscaling_groups[0].name)
            tags = {
                **autoscaler_tags.discovery_tags(args.autoscaler_cluster_name),
                **autoscaler_tags.node_template_tags(pool),
            }
            for tag_key, value in tags.items():
                aws.autoscaling.Tag(
                    f"{key}-asg-{autoscaler_tags.tag_slug(tag_key)}",
                    autoscaling_group_name=asg_name,
                    # The template describes nodes to the autoscaler; instances need none of it.
                    tag={"key": tag_key, "value": value, "propagate_at_launch": False},
                    opts=child,
                )
        self.node_group_names[shard.name] = group.node_group_name
        self.node_group_arns[shard.name] = group.arn
        self.launch_template_ids[shard.name] = template.id


def reserved_capacity(pool: PoolProfile) -> bool:
    """A pool whose nodes run on a reservation (ODCR or Capacity Block): it cannot hold a second group's
    nodes, so its group is replaced delete-before-replace under its plain name."""
    return pool.reserved or pool.capacity_block


def node_group_name(
    physical: str,
    *,
    instance_types: Sequence[str],
    capacity_type: str,
    ami_type: str,
    subnet_ids: Sequence[str],
    node_role_arn: str,
    launch_template_id: str,
) -> str:
    """``<physical>-<digest>``: the digest covers every input of ``aws_eks_node_group`` that forces a new
    group (except the cluster, whose change makes a new namespace of names), so a replacement is named anew."""
    forcing = {
        "instance_types": list(instance_types),
        "capacity_type": capacity_type,
        "ami_type": ami_type,
        "subnet_ids": sorted(subnet_ids),
        "node_role_arn": node_role_arn,
        "launch_template_id": launch_template_id,
    }
    digest = hashlib.sha256(json.dumps(forcing, sort_keys=True).encode()).hexdigest()
    return f"{physical}-{digest[:REPLACEMENT_DIGEST_CHARS]}"


def _block_devices(pool: PoolProfile, kms_key_arn: pulumi.Input[str] | None) -> list[dict[str, Any]]:
    def ebs(device: str, size: int) -> dict[str, Any]:
        volume: dict[str, Any] = {
            "volume_size": size,
            "volume_type": "gp3",
            "encrypted": "true",
            "delete_on_termination": "true",
        }
        if pool.spec.disk_throughput_mib_s is not None:
            volume["throughput"] = pool.spec.disk_throughput_mib_s
        if pool.spec.disk_iops is not None:
            volume["iops"] = pool.spec.disk_iops
        if kms_key_arn is not None:
            volume["kms_key_id"] = kms_key_arn
        return {"device_name": device, "ebs": volume}

    if pool.spec.ami_family == "bottlerocket":
        # Bottlerocket keeps the OS on a small root volume and images/containers on the data volume.
        return [ebs(ROOT_DEVICE, BOTTLEROCKET_ROOT_GIB), ebs(BOTTLEROCKET_DATA_DEVICE, pool.spec.disk_size_gib)]
    cache = pool.spec.image_cache
    if cache is None:
        return [ebs(ROOT_DEVICE, pool.spec.disk_size_gib)]
    return [ebs(ROOT_DEVICE, pool.spec.disk_size_gib), _cache_volume(cache)]


def _cache_volume(cache: image_cache.ImageCacheSpec) -> dict[str, Any]:
    """The serving image's cache volume, restored from its snapshot. No encryption value: EC2 refuses one beside a
    snapshot id, and the volume takes the snapshot's, which the preflight holds to the stack's storage key
    (infra/image_cache.py)."""
    volume: dict[str, Any] = {
        "snapshot_id": cache.snapshot_id,
        "volume_size": cache.size_gib,
        "volume_type": "gp3",
        "throughput": image_cache.CACHE_THROUGHPUT_MIB_S,
        "iops": image_cache.CACHE_IOPS,
        "delete_on_termination": "true",
    }
    if cache.initialization_rate_mib_s is not None:
        volume["volume_initialization_rate"] = cache.initialization_rate_mib_s
    return {"device_name": image_cache.CACHE_DEVICE, "ebs": volume}


LOCAL_STORAGE_BOUNDARY = "//"
LOCAL_STORAGE_NODE_CONFIG = """apiVersion: node.eks.aws/v1alpha1
kind: NodeConfig
spec:
  instance:
    localStorage:
      strategy: RAID0
"""
"""nodeadm's NodeConfig for a RAID0 of the instance-store NVMe disks (awslabs/amazon-eks-ami nodeadm API
``InstanceOptions.LocalStorage``; what Karpenter v1.14.1 writes for ``instanceStorePolicy: RAID0``,
pkg/providers/amifamily/bootstrap/nodeadm.go). EKS merges this MIME part with its own bootstrap part."""
EFA_MEMLOCK_BYTES = 2**63 - 1
"""Effectively unlimited, and an int64: nodeadm decodes the YAML into JSON numbers, where 2**64 - 1
(RLIM_INFINITY) would not survive as an exact integer."""


def _rlimit_items(rlimits: Sequence[Mapping[str, object]]) -> str:
    return "".join(
        f"          - type: {r['type']}\n            hard: {r['hard']}\n            soft: {r['soft']}\n"
        for r in rlimits
    )


EFA_RLIMITS: tuple[Mapping[str, object], ...] = (
    *AMI_CONTAINER_RLIMITS,
    {"type": "RLIMIT_MEMLOCK", "hard": EFA_MEMLOCK_BYTES, "soft": EFA_MEMLOCK_BYTES},
)
"""Every container rlimit of an EFA node: the AMI's own (``catalog.nodeadm.AMI_CONTAINER_RLIMITS``, the open-files
limit) and the locked-memory limit. The whole list, because nodeadm replaces the AMI's list with the one given
rather than merging them (``catalog/nodeadm.py`` cites the merge)."""
EFA_MEMLOCK_NODE_CONFIG = f"""apiVersion: node.eks.aws/v1alpha1
kind: NodeConfig
spec:
  containerd:
    baseRuntimeSpec:
      process:
        rlimits:
{_rlimit_items(EFA_RLIMITS)}"""
"""The locked-memory limit of every container on an EFA node, beside the AMI's open-files limit. EFA registers
(pins) host memory for its buffers; a container inherits containerd's limit (8 MiB by default) and a non-root pod
cannot raise it (IPC_LOCK is inert without ambient capabilities: catalog/efa.py). nodeadm's
``containerd.baseRuntimeSpec`` is merged into the OCI spec every container starts from (awslabs/amazon-eks-ami
v20260724 nodeadm/doc/examples.md "Modifying container RLIMITs"), lists replaced whole."""


FAST_IMAGE_PULL_NODE_CONFIG = """apiVersion: node.eks.aws/v1alpha1
kind: NodeConfig
spec:
  featureGates:
    FastImagePull: true
"""
"""nodeadm's FastImagePull feature gate (awslabs/amazon-eks-ami v20260724 nodeadm/doc/examples.md "Enabling fast
image pull"): containerd uses the SOCI snapshotter in parallel pull/unpack mode
(nodeadm/internal/containerd/snapshotter/soci-snapshotter.config.toml). nodeadm merges NodeConfig maps, so the gate
joins EKS's own bootstrap part. Ignored below 4 vCPUs or 7 GiB (internal/containerd/config.go)."""


LOCAL_STORAGE_CACHED_NODE_CONFIG = (
    LOCAL_STORAGE_NODE_CONFIG
    + """      disabledMounts:
        - Containerd
"""
)
"""The RAID0 without containerd's directory, which the image cache volume holds (catalog/image_cache.py): nodeadm
passes ``--no-bind-containerd`` to setup-local-disks (nodeadm/internal/system/local_disk.go at v20260724), which
would otherwise copy the mounted cache onto the array and bind-mount the copy over it."""


def node_config_parts(pool: PoolProfile) -> list[str]:
    """nodeadm NodeConfig documents an AL2023 node of ``pool`` needs beyond EKS's own bootstrap part."""
    if pool.spec.ami_family != "al2023":
        return []
    parts = []
    if pool.spec.local_nvme_raid0:
        parts.append(LOCAL_STORAGE_CACHED_NODE_CONFIG if pool.spec.image_cache else LOCAL_STORAGE_NODE_CONFIG)
    if pool.efa:
        parts.append(EFA_MEMLOCK_NODE_CONFIG)
    if pool.spec.fast_image_pull:
        parts.append(FAST_IMAGE_PULL_NODE_CONFIG)
    return parts


def node_scripts(pool: PoolProfile) -> list[str]:
    """Shell scripts an AL2023 node of ``pool`` runs before nodeadm starts containerd and the kubelet: the image
    cache's mount, the EFA pods' huge pages."""
    if pool.spec.ami_family != "al2023":
        return []
    scripts = [image_cache.mount_script()] if pool.spec.image_cache else []
    if pool.efa:
        scripts.append(efa_hugepages_script(node_hugepages_2mi(pool.accelerators_per_node, pool.efa_interfaces)))
    return scripts


# The content types Karpenter v1.14.1 writes (pkg/providers/amifamily/bootstrap/mime/mime.go), which cloud-init and
# nodeadm read alike: cloud-init runs the scripts in cloud-final, nodeadm-run starts after it.
SHELL_SCRIPT = 'text/x-shellscript; charset="us-ascii"'
NODE_CONFIG = "application/node.eks.aws"


def node_config_mime(parts: Sequence[str], scripts: Sequence[str] = ()) -> str:
    """MIME multi-part user data: NodeConfig documents for nodeadm, then shell scripts for cloud-init."""
    typed = [(NODE_CONFIG, p) for p in parts] + [(SHELL_SCRIPT, s) for s in scripts]
    body = "".join(f"--{LOCAL_STORAGE_BOUNDARY}\nContent-Type: {kind}\n\n{part}\n" for kind, part in typed)
    return (
        f'MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary="{LOCAL_STORAGE_BOUNDARY}"\n\n'
        f"{body}--{LOCAL_STORAGE_BOUNDARY}--\n"
    )


def _user_data(pool: PoolProfile) -> str | None:
    """Base64 MIME user data with the pool's NodeConfig parts (AL2023: RAID0 local storage, EFA memlock, fast
    image pull) and its scripts (EFA huge pages)."""
    parts, scripts = node_config_parts(pool), node_scripts(pool)
    if not parts and not scripts:
        return None
    return base64.b64encode(node_config_mime(parts, scripts).encode()).decode()


def _efa_interfaces(count: int, security_group_ids: Sequence[pulumi.Input[str]]) -> list[dict[str, Any]]:
    """One EFA interface per network card; card 0 is the primary (device 0), the others device 1, as
    Karpenter and eksctl lay them out (karpenter-provider-aws pkg/providers/launchtemplate)."""
    return [
        {
            "network_card_index": i,
            "device_index": 0 if i == 0 else 1,
            "interface_type": "efa",
            "security_groups": list(security_group_ids),
            "delete_on_termination": "true",
        }
        for i in range(count)
    ]


def _reservation(pool: PoolProfile) -> dict[str, Any] | None:
    ids = pool.spec.reservation_ids
    if not ids:
        return None
    # A launch template targets one reservation; more ids need Karpenter (capacityReservationSelectorTerms).
    return {"capacity_reservation_target": {"capacity_reservation_id": ids[0]}}


def _validate(args: NodePoolArgs) -> None:
    pool, spec = args.pool, args.pool.spec
    problems = []
    if pool.efa and spec.ami_family != "al2023":
        # node_config_parts and node_scripts write EFA's memlock limit and huge pages for AL2023 (nodeadm) only.
        problems.append(f"ami_family: {spec.ami_family} with EFA; EFA nodes need AL2023 (memlock, huge pages)")
    if spec.image_cache is not None and spec.ami_family != "al2023":
        problems.append(f"image_cache: with ami_family {spec.ami_family}; AL2023's cloud-init mounts it")
    if spec.image_cache is not None and spec.fast_image_pull:
        problems.append(
            "image_cache: with fast_image_pull; the SOCI snapshotter cannot use the cache's overlayfs store"
        )
    if not 0 <= spec.min_size <= pool.desired_size <= spec.max_size:
        problems.append(f"sizes: need 0 <= min {spec.min_size} <= desired {pool.desired_size} <= max {spec.max_size}")
    if spec.max_size > MAX_MANAGED_NODES:
        problems.append(f"max_size: {spec.max_size} exceeds EKS's {MAX_MANAGED_NODES} nodes per managed node group")
    if len(spec.capacity_types) != 1:
        problems.append(
            f"capacity_types: a managed node group takes one capacity type, got {list(spec.capacity_types)}"
        )
    if pool.reserved and len(spec.reservation_ids) != 1:
        problems.append("reservation_ids: a managed node group targets exactly one capacity reservation")
    missing = [z for z in pool.zones if z not in args.subnet_ids_by_zone]
    if missing or not pool.zones:
        problems.append(f"zones: no private subnet for {missing or 'any zone'}")
    suffix = 0 if reserved_capacity(pool) else 1 + REPLACEMENT_DIGEST_CHARS
    for shard in pool.shards:
        physical = f"{args.name_prefix}-{shard.name}"
        if len(physical) + suffix > MAX_NODE_GROUP_NAME:
            shown = physical + ("-" + "x" * REPLACEMENT_DIGEST_CHARS if suffix else "")
            problems.append(f"name: node group {shown!r} is longer than EKS's {MAX_NODE_GROUP_NAME} characters")
    if not args.security_group_ids:
        problems.append("security_group_ids: at least the cluster security group is required")
    raise_if("NodePool", problems)
