"""The Kubernetes Cluster Autoscaler for managed node groups: its Pod Identity role and Helm release.

Managed node groups leave their desired size to an autoscaler (inference_platform.components.node_pool ignores changes
to it); this is that autoscaler. It runs on the system nodes in ``kube-system``, finds the groups by
the ASG tags inference_platform.components.compute.autoscaler_tags defines (both discovery tags, the cluster's with value
``owned``), builds scale-from-zero templates from the same tags, and may resize only ASGs tagged as
this cluster's (inference_platform.components.compute.iam_policies.cluster_autoscaler_policy). Karpenter stacks do not install
it: Karpenter provisions their pools, and their system group is sized by settings.

Flags, and why:
- ``balance-similar-node-groups``: an EFA pool is one node group per zone with identical labels, so a
  scale-up is split across its zones instead of filling one; the per-group labels EKS adds (launch
  template id and version, AMI) differ between the zonal groups and are ignored for that comparison
  (the autoscaler ignores ``eks.amazonaws.com/nodegroup`` itself, processors/nodegroupset).
- ``expander=least-waste``: between pools a pending pod fits, grow the one that leaves the fewest
  accelerators, CPU and memory idle (a 1-GPU pod on g6e rather than on a p5).
- ``skip-nodes-with-local-storage`` stays true (the default): serving pods keep their model on an
  emptyDir, so nodes running them are never drained to consolidate; only nodes without serving pods
  scale down, the same "consolidate when empty" policy the Karpenter pools follow.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from inference_platform.catalog import charts
from inference_platform.components.common.errors import raise_if
from inference_platform.components.common.security_context import (
    NOBODY_UID,
    container_security_context,
    pod_security_context,
)
from inference_platform.components.compute import autoscaler_tags
from inference_platform.components.compute.iam_policies import cluster_autoscaler_policy
from inference_platform.components.identity.pod_identity import PodIdentityRole, PodIdentityRoleArgs

NAMESPACE = "kube-system"
SERVICE_ACCOUNT = "cluster-autoscaler"
EXPANDERS = ("least-waste", "priority", "most-pods", "price", "random")
DEFAULT_EXPANDER = "least-waste"
# Labels EKS puts on managed-node-group nodes that differ between otherwise identical zonal groups.
BALANCING_IGNORED_LABELS = (
    "eks.amazonaws.com/sourceLaunchTemplateId",
    "eks.amazonaws.com/sourceLaunchTemplateVersion",
    "eks.amazonaws.com/nodegroup-image",
)


@dataclass(frozen=True, kw_only=True)
class ClusterAutoscalerArgs:
    """What the Cluster Autoscaler needs: the cluster, its version (the image tag), region, account and provider."""

    cluster_name: str
    """Required. Physical cluster name: the tag scope of discovery and of every write permission."""
    cluster: pulumi.Input[str]
    """Required. The same name as the cluster resource's output, so the role is associated after it."""
    kubernetes_version: str
    """Required. The cluster's minor version (``1.36``); picks the autoscaler release built for it."""
    region: str
    """Required."""
    account_id: str
    """Required."""
    provider: k8s.Provider
    """Required. The cluster's Kubernetes provider."""
    partition: str = "aws"
    """Default ``aws``."""
    node_selector: Mapping[str, str] = field(default_factory=lambda: {"node-role": "system"})
    """Default ``node-role=system``: the autoscaler never runs on nodes it may remove."""
    expander: str = DEFAULT_EXPANDER
    """Default ``least-waste``. One of least-waste, priority, most-pods, price, random."""
    depends_on: Sequence[pulumi.Resource] = field(default_factory=tuple)
    """Default none. What must run first (the system nodes and the pod identity agent)."""


class ClusterAutoscaler(pulumi.ComponentResource):
    """The Kubernetes Cluster Autoscaler for managed node groups: its Pod Identity role and Helm release."""

    role_arn: pulumi.Output[str]
    release: k8s.helm.v3.Release

    def __init__(self, name: str, args: ClusterAutoscalerArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        _validate(args)
        super().__init__("inference:compute:ClusterAutoscaler", name, None, opts)
        policy = cluster_autoscaler_policy(
            cluster_name=args.cluster_name, partition=args.partition, region=args.region, account_id=args.account_id
        )
        identity = PodIdentityRole(
            f"{name}-controller",
            PodIdentityRoleArgs(
                cluster_name=args.cluster,
                namespace=NAMESPACE,
                service_account=SERVICE_ACCOUNT,
                partition=args.partition,
                inline_policy=json.dumps(policy),
                description=f"Cluster Autoscaler of {args.cluster_name}",
            ),
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.release = k8s.helm.v3.Release(
            f"{name}-chart",
            name="cluster-autoscaler",
            **charts.CLUSTER_AUTOSCALER.release_source(),
            namespace=NAMESPACE,
            values=release_values(args),
            # Credentials come through the association: it must exist before the first pod starts.
            opts=pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=[identity, *args.depends_on]),
        )
        self.role_arn = identity.role_arn
        self.register_outputs({"role_arn": self.role_arn})


def release_values(args: ClusterAutoscalerArgs) -> dict[str, Any]:
    """The chart values (chart 9.59.0's values.yaml keys)."""
    discovery = [f"{key}={value}" for key, value in autoscaler_tags.discovery_tags(args.cluster_name).items()]
    extra_args: dict[str, object] = {
        "balance-similar-node-groups": True,
        "expander": args.expander,
        "skip-nodes-with-local-storage": True,
    }
    # The chart renders each key as one flag and drops what follows '_': a repeatable flag needs suffixes.
    extra_args.update({f"balancing-ignore-label_{i}": label for i, label in enumerate(BALANCING_IGNORED_LABELS)})
    return {
        "cloudProvider": "aws",
        "awsRegion": args.region,
        "autoDiscovery": {"clusterName": args.cluster_name, "tags": discovery},
        "image": {
            "repository": charts.CLUSTER_AUTOSCALER_IMAGE,
            "tag": charts.CLUSTER_AUTOSCALER_TAGS[args.kubernetes_version],
        },
        "rbac": {"serviceAccount": {"create": True, "name": SERVICE_ACCOUNT}},
        "extraArgs": extra_args,
        "nodeSelector": dict(args.node_selector),
        "replicaCount": 1,
        "priorityClassName": "system-cluster-critical",
        "resources": {"requests": {"cpu": "100m", "memory": "600Mi"}, "limits": {"memory": "600Mi"}},
        "securityContext": pod_security_context(NOBODY_UID, group=True),
        "containerSecurityContext": container_security_context(),
    }


def _validate(args: ClusterAutoscalerArgs) -> None:
    problems = []
    if args.kubernetes_version not in charts.CLUSTER_AUTOSCALER_TAGS:
        pinned = ", ".join(charts.CLUSTER_AUTOSCALER_TAGS)
        problems.append(f"kubernetes_version: no autoscaler release pinned for {args.kubernetes_version} ({pinned})")
    if args.expander not in EXPANDERS:
        problems.append(f"expander: {args.expander!r} is not one of {', '.join(EXPANDERS)}")
    if not args.cluster_name:
        problems.append("cluster_name: required (the tag scope)")
    raise_if("ClusterAutoscaler", problems)
