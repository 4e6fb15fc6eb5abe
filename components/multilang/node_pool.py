"""An accelerator (GPU or Neuron) node pool for other Pulumi languages: the pool as data, derived from the
catalog (components.compute.pool_profile.profile), provisioned as managed node groups
(components.compute.NodePool)."""

# Annotations stay real types (no ``from __future__ import annotations``): the provider's analyzer reads them.
from enum import Enum
from typing import NotRequired, TypedDict, get_args

import pulumi

from inference_platform.catalog.pool_profile import ROLE_INFERENCE, CapacityType, profile
from inference_platform.components.common.errors import ComponentArgsError
from inference_platform.components.compute import NodePool as _NodePool
from inference_platform.components.compute import NodePoolArgs as _NodePoolArgs
from inference_platform.components.compute import PoolSpec
from inference_platform.components.multilang.options import inner_options, supplied

CAPACITY_TYPES: tuple[str, ...] = get_args(CapacityType)


class AmiFamily(Enum):
    """The node OS."""

    AL2023 = "al2023"
    """Amazon Linux 2023 (the EKS-optimized accelerated AMI for GPU and Neuron types)."""
    BOTTLEROCKET = "bottlerocket"
    """Bottlerocket (NVIDIA and CPU types only, pools without EFA)."""


class NodePoolSpec(TypedDict):
    """One pool: instance types, capacity and size. Labels, taints, the accelerator resource, EFA and the
    AMI type follow from the instance catalog."""

    name: str
    """Pool name: the ``node-pool`` label and the node group name's suffix."""
    instance_types: list[str]
    """EC2 instance types of one accelerator vendor, e.g. ``["g6e.2xlarge"]`` or ``["inf2.xlarge"]``."""
    capacity_types: NotRequired[list[str]]
    """Default ``["on-demand"]``. One of ``on-demand``, ``spot``, ``capacity-block`` or ``reservation`` (with its
    id in ``reservationIds``): a managed node group takes one. (Strings, not an enum: the Pulumi SDK's provider
    maps a list of enums to empty objects, tests/components/multilang/test_sdk_limits.py.)"""
    reservation_ids: NotRequired[list[str]]
    """Default none. Capacity reservation or Capacity Block ids."""
    min_size: NotRequired[int]
    """Default 0. Nodes at least (per zone for an EFA pool)."""
    max_size: NotRequired[int]
    """Default 1. Nodes at most (per zone for an EFA pool)."""
    desired_size: NotRequired[int]
    """Default ``minSize``. Nodes at creation (the autoscaler owns it afterwards)."""
    disk_size_gib: NotRequired[int]
    """Default 200. Root volume (gp3, encrypted)."""
    zones: NotRequired[list[str]]
    """Default every zone of ``clusterZones`` (an EFA pool: the first only)."""
    efa: NotRequired[bool]
    """Default: EFA when every instance type is built for it."""
    ami_family: NotRequired[AmiFamily]
    """Default ``al2023``."""
    labels: NotRequired[dict[str, str]]
    """Default none. Extra node labels (the pool's own labels cannot be overridden)."""


class NodePoolArgs(TypedDict):
    """A pool of GPU or Neuron nodes as EKS managed node groups with hardened launch templates."""

    cluster_name: pulumi.Input[str]
    """The cluster the nodes join (the Cluster's ``clusterName``)."""
    name_prefix: str
    """Physical-name prefix of the node groups and launch templates."""
    kubernetes_version: str
    """The cluster's Kubernetes version (the nodes' kubelet)."""
    node_role_arn: pulumi.Input[str]
    """IAM role of the nodes (it needs an EC2_LINUX access entry on the cluster)."""
    pool: NodePoolSpec
    """The pool."""
    cluster_zones: list[str]
    """The cluster's zones, in the Network's order (a pool without ``zones`` uses them)."""
    subnet_ids_by_zone: dict[str, pulumi.Input[str]]
    """Private subnet per zone (the Network's ``privateSubnetIdsByZone``)."""
    security_group_ids: list[pulumi.Input[str]]
    """The cluster security group and the node security group."""
    instance_tags: NotRequired[dict[str, str]]
    """Default none. Tags on instances, volumes and network interfaces."""
    volume_kms_key_arn: NotRequired[pulumi.Input[str]]
    """Default the account's EBS key. Customer-managed key of every EBS volume."""
    autoscaler_cluster_name: NotRequired[str]
    """Default none. The physical cluster name, to tag every Auto Scaling group for the cluster autoscaler."""


class NodePool(pulumi.ComponentResource):
    """GPU or Neuron nodes as EKS managed node groups (components.compute.NodePool): IMDSv2 with hop limit
    1, encrypted gp3 root volumes, EFA interfaces and a placement group per zone for EFA types."""

    node_group_names: pulumi.Output[dict[str, str]]
    """Node group name per shard (the pool, or ``<pool>-<zone suffix>`` for an EFA pool's zones)."""
    node_group_arns: pulumi.Output[dict[str, str]]
    """Node group ARN per shard."""
    labels: pulumi.Output[dict[str, str]]
    """The labels every node of the pool carries (``node-pool``, ``accelerator`` ...): select pods with them."""
    accelerator_resource: pulumi.Output[str]
    """The extended resource a pod requests (``nvidia.com/gpu``, ``aws.amazon.com/neuron``); empty for CPU types."""
    accelerators_per_node: pulumi.Output[int]
    """Accelerators on the pool's largest instance type."""

    def __init__(self, name: str, args: NodePoolArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("inference-platform:index:NodePool", name, {}, opts)
        pool = args["pool"]
        unknown = sorted(set(pool.get("capacity_types") or ()) - set(CAPACITY_TYPES))
        if unknown:
            raise ComponentArgsError(
                "NodePool", [f"pool.capacityTypes: {unknown} not among {', '.join(CAPACITY_TYPES)}"]
            )
        spec = PoolSpec(
            role=ROLE_INFERENCE,
            **supplied(
                pool,
                "name",
                "instance_types",
                "capacity_types",
                "reservation_ids",
                "min_size",
                "max_size",
                "desired_size",
                "disk_size_gib",
                "zones",
                "efa",
                "ami_family",
                "labels",
            ),
        )
        try:
            derived = profile(spec, list(args["cluster_zones"]))
        except ValueError as err:  # CatalogError is a ValueError too: an unknown or mixed instance type
            raise ComponentArgsError("NodePool", [f"pool: {err}"]) from err
        node_pool = _NodePool(
            name,
            _NodePoolArgs(
                pool=derived,
                **supplied(
                    args,
                    "cluster_name",
                    "name_prefix",
                    "kubernetes_version",
                    "node_role_arn",
                    "subnet_ids_by_zone",
                    "security_group_ids",
                    "instance_tags",
                    "volume_kms_key_arn",
                    "autoscaler_cluster_name",
                ),
            ),
            inner_options(self, opts),
        )
        self.node_group_names = pulumi.Output.all(**node_pool.node_group_names)
        self.node_group_arns = pulumi.Output.all(**node_pool.node_group_arns)
        self.labels = pulumi.Output.from_input(derived.labels)
        self.accelerator_resource = pulumi.Output.from_input(derived.resource_name or "")
        self.accelerators_per_node = pulumi.Output.from_input(derived.accelerators_per_node)
        self.register_outputs({})
