"""The AWS Load Balancer Controller: its Pod Identity role (the published policy scoped to this cluster,
inference_platform.components.edge.iam_documents) and its pinned Helm release.

It turns the edge's Ingress into the internet-facing ALB. Chart values, and why:
- ``createIngressClassResource: false`` and ``ingressClassParams.create: false``: the edge creates its
  own IngressClass and IngressClassParams (inference_platform.components.edge.public_endpoint) once the controller's CRDs
  and webhook exist, so the settings that matter (scheme, TLS policy, WAF) are pinned there, not in
  Ingress annotations anyone with Ingress access could edit.
- ``defaultTargetType: ip``: pods behind an ALB are addressed directly (VPC CNI), no NodePort.
- ``enableWafv2: true``, ``enableShield: false``, ``enableWaf: false``: WAFv2 is the only WAF in use.
- ``enableServiceMutatorWebhook: false``: chart 3.5.0 otherwise registers ``mservice.elbv2.k8s.aws``,
  failurePolicy Fail on every Service CREATE cluster-wide (``templates/webhook.yaml``; values.yaml
  defaults true), and until a controller pod is Ready no Service can be created anywhere: CoreDNS's
  kube-dns, Triton's, every chart's (aws-load-balancer-controller #4140). It only makes this controller
  the default for ``type: LoadBalancer`` Services; the edge uses Ingresses only.
- The release is ordered after the system node group (``depends_on``): its pods select the system
  nodes, Helm waits for them, and its remaining Fail webhooks (Ingress, IngressClassParams,
  TargetGroupBinding) refuse those objects until they are Ready (policies/rules/ordering.py).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from inference_platform.catalog import edge_charts as charts
from inference_platform.components.common.errors import raise_if
from inference_platform.components.common.security_context import (
    NOBODY_UID,
    container_security_context,
    pod_security_context,
)
from inference_platform.components.edge.iam_documents import load_balancer_controller_policy
from inference_platform.components.identity.pod_identity import PodIdentityRole, PodIdentityRoleArgs

NAMESPACE = "kube-system"
SERVICE_ACCOUNT = "aws-load-balancer-controller"


@dataclass(frozen=True, kw_only=True)
class LoadBalancerControllerArgs:
    """What the AWS Load Balancer Controller needs: the cluster, VPC, region, account and provider."""

    cluster_name: str
    """Required. Physical cluster name: the tag scope of every write permission."""
    cluster: pulumi.Input[str]
    """Required. The same name as the cluster resource's output, so the role is associated after it."""
    region: str
    """Required."""
    account_id: str
    """Required. The account the write permissions are scoped to."""
    vpc_id: pulumi.Input[str]
    """Required. The controller is told its VPC instead of asking the instance metadata service."""
    provider: k8s.Provider
    """Required. The cluster's Kubernetes provider."""
    partition: str = "aws"
    """Default ``aws``."""
    default_tags: Mapping[str, str] = field(default_factory=dict)
    """Default none. Tags on every AWS resource the controller creates (the stack's default tags)."""
    node_selector: Mapping[str, str] = field(default_factory=lambda: {"node-role": "system"})
    """Default ``node-role=system``."""
    replicas: int = 2
    """Default 2 (its webhook admits every Service and Ingress: one replica down must not block them)."""
    depends_on: Sequence[pulumi.Resource] = field(default_factory=tuple)
    """Default none. What must run first (the system nodes and the pod identity agent)."""


class LoadBalancerController(pulumi.ComponentResource):
    """The AWS Load Balancer Controller: its Pod Identity role, scoped to this cluster, and its Helm release."""

    role_arn: pulumi.Output[str]
    release: k8s.helm.v3.Release

    def __init__(self, name: str, args: LoadBalancerControllerArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        _validate(args)
        super().__init__("inference:edge:LoadBalancerController", name, None, opts)
        identity = PodIdentityRole(
            f"{name}-controller",
            PodIdentityRoleArgs(
                cluster_name=args.cluster,
                namespace=NAMESPACE,
                service_account=SERVICE_ACCOUNT,
                partition=args.partition,
                inline_policy=json.dumps(
                    load_balancer_controller_policy(
                        cluster_name=args.cluster_name,
                        account_id=args.account_id,
                        region=args.region,
                        partition=args.partition,
                    )
                ),
                description=f"AWS Load Balancer Controller of {args.cluster_name}",
            ),
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.release = k8s.helm.v3.Release(
            f"{name}-chart",
            name="aws-load-balancer-controller",
            **charts.LOAD_BALANCER_CONTROLLER.release_source(),
            namespace=NAMESPACE,
            values=pulumi.Output.from_input(args.vpc_id).apply(lambda vpc: release_values(args, vpc)),
            # Credentials come through the association: it must exist before the first pod starts.
            opts=pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=[identity, *args.depends_on]),
        )
        self.role_arn = identity.role_arn
        self.register_outputs({"role_arn": self.role_arn})


def release_values(args: LoadBalancerControllerArgs, vpc_id: str) -> dict[str, Any]:
    """The chart values (chart 3.5.0's values.yaml keys)."""
    return {
        "clusterName": args.cluster_name,
        "region": args.region,
        "vpcId": vpc_id,
        "replicaCount": args.replicas,
        "serviceAccount": {"create": True, "name": SERVICE_ACCOUNT},
        "createIngressClassResource": False,
        "ingressClassParams": {"create": False},
        "defaultTargetType": "ip",
        "enableWafv2": True,
        "enableWaf": False,
        "enableShield": False,
        "enableServiceMutatorWebhook": False,
        "defaultTags": dict(args.default_tags),
        "nodeSelector": dict(args.node_selector),
        "priorityClassName": "system-cluster-critical",
        "resources": {"requests": {"cpu": "100m", "memory": "256Mi"}, "limits": {"memory": "256Mi"}},
        "podSecurityContext": pod_security_context(NOBODY_UID, fs_group=True),
        "securityContext": container_security_context(),
    }


def _validate(args: LoadBalancerControllerArgs) -> None:
    problems = []
    if not args.cluster_name:
        problems.append("cluster_name: required (the tag scope)")
    if args.replicas < 1:
        problems.append(f"replicas: {args.replicas} is not >= 1")
    raise_if("LoadBalancerController", problems)
