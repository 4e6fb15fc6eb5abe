"""Auto Scaling group tags the Kubernetes Cluster Autoscaler reads: pure data.

- Auto-discovery: the autoscaler manages the ASGs carrying both ``k8s.io/cluster-autoscaler/enabled``
  and ``k8s.io/cluster-autoscaler/<cluster>``; its IAM policy lets it write only to ASGs whose second
  tag is ``owned`` (inference_platform.components.compute.iam_policies.cluster_autoscaler_policy).
- Scale from zero: with no node to copy, the autoscaler builds a template node from the instance type
  plus ``k8s.io/cluster-autoscaler/node-template/{label,taint,resources}/...`` tags. Without them it
  would not know that a node of the group carries ``node-pool=inference``, tolerates nothing but GPU
  pods, or offers ``vpc.amazonaws.com/efa`` and disk for the pod's volumes, and would never scale a
  pool at zero up for a pod that needs those.

Source: kubernetes/autoscaler cluster-autoscaler/cloudprovider/aws/README.md ("Auto-Discovery Setup")
and aws_manager.go ``buildNodeFromTemplate`` at cluster-autoscaler-1.36.1, which read exactly these
keys from the ASG (taint values ``<value>:<effect>``, resources as Kubernetes quantities).
"""

from __future__ import annotations

import math
from typing import Final

from inference_platform.catalog.pool_profile import PoolProfile

PREFIX: Final = "k8s.io/cluster-autoscaler"
ENABLED: Final = f"{PREFIX}/enabled"
TEMPLATE: Final = f"{PREFIX}/node-template"
EFA_RESOURCE: Final = "vpc.amazonaws.com/efa"
EPHEMERAL_STORAGE: Final = "ephemeral-storage"
NODEFS_EVICTION_FRACTION: Final = 0.10
"""The kubelet's default hard eviction threshold ``nodefs.available<10%``: taken off allocatable disk."""


def ownership_key(cluster_name: str) -> str:
    """The per-cluster discovery tag; its value ``owned`` is what the autoscaler's IAM policy checks."""
    return f"{PREFIX}/{cluster_name}"


def discovery_tags(cluster_name: str) -> dict[str, str]:
    """The two tags that make an ASG this cluster's autoscaler's to scale (EKS sets the same on managed
    node groups; declaring them keeps the IAM scoping visible in the plan and independent of that)."""
    return {ENABLED: "true", ownership_key(cluster_name): "owned"}


def node_template_tags(pool: PoolProfile) -> dict[str, str]:
    """Labels, taints and extended resources of a new node of ``pool``, as the autoscaler reads them.

    Accelerators and EFA interfaces are those of the pool's smallest type (the autoscaler must never
    expect more than a node brings); ephemeral storage is the node disk less the kubelet's eviction
    reserve, so a pod whose volumes need more does not trigger a useless scale-up."""
    tags = {f"{TEMPLATE}/label/{key}": value for key, value in sorted(pool.labels.items())}
    tags.update({f"{TEMPLATE}/taint/{t.key}": f"{t.value}:{t.effect}" for t in pool.taints})
    if pool.resource_name:
        tags[f"{TEMPLATE}/resources/{pool.resource_name}"] = str(pool.template_accelerators)
    if pool.efa_interfaces:
        tags[f"{TEMPLATE}/resources/{EFA_RESOURCE}"] = str(pool.efa_interfaces)
    disk = math.floor(pool.spec.disk_size_gib * (1 - NODEFS_EVICTION_FRACTION))
    tags[f"{TEMPLATE}/resources/{EPHEMERAL_STORAGE}"] = f"{disk}Gi"
    return tags


def tag_slug(key: str) -> str:
    """A resource-name fragment for a tag key (``label-node-pool``, ``resources-vpc.amazonaws.com-efa``)."""
    if key == ENABLED:
        return "discovery-enabled"
    if key.startswith(f"{TEMPLATE}/"):
        return key.removeprefix(f"{TEMPLATE}/").replace("/", "-")
    if key.startswith(f"{PREFIX}/") and "/" not in key.removeprefix(f"{PREFIX}/"):
        return "discovery-cluster"
    raise ValueError(f"{key!r} is not a cluster-autoscaler tag")
