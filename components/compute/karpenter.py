"""The Karpenter v1 controller: its interruption queue and rules, Pod Identity role, node access entry
and Helm releases (CRDs separately, so upgrades update them).

Karpenter runs on the system node group (never on nodes it manages), in ``kube-system`` as Karpenter's
own guide installs it. Its controller policy is scoped by this cluster's tags (inference_platform.components.compute.iam_policies),
and the interruption queue receives spot interruptions, rebalance recommendations, instance state
changes, scheduled AWS Health events and capacity-reservation interruptions, so nodes are drained
before EC2 takes them away.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from inference_platform.catalog import charts
from inference_platform.components.common.errors import raise_if
from inference_platform.components.compute.iam_policies import interruption_queue_policy, karpenter_controller_policy
from inference_platform.components.identity.pod_identity import PodIdentityRole, PodIdentityRoleArgs

NAMESPACE = "kube-system"
SERVICE_ACCOUNT = "karpenter"
QUEUE_RETENTION_SECONDS = 300  # an interruption notice older than five minutes is useless
# EventBridge patterns of Karpenter's getting-started CloudFormation (v1.14).
INTERRUPTION_EVENTS: Mapping[str, dict[str, Any]] = {
    "scheduled-change": {"source": ["aws.health"], "detail-type": ["AWS Health Event"]},
    "spot-interruption": {"source": ["aws.ec2"], "detail-type": ["EC2 Spot Instance Interruption Warning"]},
    "rebalance": {"source": ["aws.ec2"], "detail-type": ["EC2 Instance Rebalance Recommendation"]},
    "state-change": {"source": ["aws.ec2"], "detail-type": ["EC2 Instance State-change Notification"]},
    "reservation-interruption": {
        "source": ["aws.ec2"],
        "detail-type": ["EC2 Capacity Reservation Instance Interruption Warning"],
    },
}


@dataclass(frozen=True, kw_only=True)
class KarpenterArgs:
    """What Karpenter's controller needs: the cluster, its node role, region, account and provider."""

    cluster_name: str
    """Required. Physical cluster name: the tag scope of every permission."""
    cluster: pulumi.Input[str]
    """Required. The same name as the cluster resource's output, so that what refers to the cluster
    (queue name aside) is created after it."""
    cluster_endpoint: pulumi.Input[str]
    """Required. API server endpoint (saves Karpenter a DescribeCluster at start)."""
    node_role_arn: pulumi.Input[str]
    """Required. Role of the nodes Karpenter launches (it creates their instance profiles); a role of their
    own, never a managed node group's: EKS creates that role's access entry itself and refuses a second
    (409 ResourceInUseException; policy ``eks-one-access-entry-per-principal``)."""
    region: str
    """Required."""
    account_id: str
    """Required."""
    provider: k8s.Provider
    """Required. The cluster's Kubernetes provider."""
    partition: str = "aws"
    """Default ``aws``."""
    node_selector: Mapping[str, str] = field(default_factory=lambda: {"node-role": "system"})
    """Default ``node-role=system``: the controller never runs on capacity it manages."""
    replicas: int = 2
    """Default 2 (leader election; one per system node)."""
    volume_kms_key_arn: pulumi.Input[str] | None = None
    """Default none. The customer-managed key of node volumes (the EC2NodeClasses' ``kmsKeyID``): the
    controller launches through EC2 Fleet with its own role, so it gets the grants EBS needs on it."""


class Karpenter(pulumi.ComponentResource):
    """The Karpenter v1 controller: its interruption queue and rules, Pod Identity role, node access entry and
    release."""

    queue_name: pulumi.Output[str]
    queue_arn: pulumi.Output[str]
    controller_role_arn: pulumi.Output[str]
    release: k8s.helm.v3.Release
    """The controller release; NodePools and EC2NodeClasses depend on it (its CRDs and webhook)."""

    def __init__(self, name: str, args: KarpenterArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        raise_if("Karpenter", [] if args.replicas >= 1 else [f"replicas: {args.replicas} must be at least 1"])
        super().__init__("inference:compute:Karpenter", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        queue = aws.sqs.Queue(
            f"{name}-interruptions",
            name=args.cluster_name,
            message_retention_seconds=QUEUE_RETENTION_SECONDS,
            sqs_managed_sse_enabled=True,
            opts=child,
        )
        aws.sqs.QueuePolicy(
            f"{name}-interruptions-policy",
            queue_url=queue.url,
            policy=queue.arn.apply(lambda arn: json.dumps(interruption_queue_policy(arn))),
            opts=child,
        )
        for event, pattern in INTERRUPTION_EVENTS.items():
            rule = aws.cloudwatch.EventRule(
                f"{name}-{event}",
                description=f"Karpenter interruption handling for {args.cluster_name}: {event}",
                event_pattern=json.dumps(pattern),
                opts=child,
            )
            aws.cloudwatch.EventTarget(
                f"{name}-{event}-target",
                rule=rule.name,
                arn=queue.arn,
                target_id="KarpenterInterruptionQueue",
                opts=child,
            )
        policy = pulumi.Output.all(args.node_role_arn, queue.arn, args.volume_kms_key_arn).apply(
            lambda values: json.dumps(
                karpenter_controller_policy(
                    cluster_name=args.cluster_name,
                    partition=args.partition,
                    region=args.region,
                    account_id=args.account_id,
                    node_role_arn=values[0],
                    queue_arn=values[1],
                    volume_key_arn=values[2],
                )
            )
        )
        identity = PodIdentityRole(
            f"{name}-controller",
            PodIdentityRoleArgs(
                cluster_name=args.cluster,
                namespace=NAMESPACE,
                service_account=SERVICE_ACCOUNT,
                partition=args.partition,
                inline_policy=policy,
                description=f"Karpenter controller of {args.cluster_name}",
            ),
            opts=child,
        )
        # Karpenter's nodes are not a managed node group, so EKS makes no access entry for them.
        node_entry = aws.eks.AccessEntry(
            f"{name}-node-access",
            cluster_name=args.cluster,
            principal_arn=args.node_role_arn,
            type="EC2_LINUX",
            opts=child,
        )
        k8s_child = pulumi.ResourceOptions(parent=self, provider=args.provider)
        crds = k8s.helm.v3.Release(
            f"{name}-crd",
            name="karpenter-crd",
            **charts.KARPENTER_CRD.release_source(),
            namespace=NAMESPACE,
            opts=k8s_child,
        )
        self.release = k8s.helm.v3.Release(
            f"{name}-chart",
            name="karpenter",
            **charts.KARPENTER.release_source(),
            namespace=NAMESPACE,
            skip_crds=True,
            values={
                "settings": {
                    "clusterName": args.cluster_name,
                    "clusterEndpoint": args.cluster_endpoint,
                    "interruptionQueue": queue.name,
                    "featureGates": {"reservedCapacity": True},
                },
                "serviceAccount": {"name": SERVICE_ACCOUNT},
                "replicas": args.replicas,
                "nodeSelector": dict(args.node_selector),
                "controller": {
                    "resources": {
                        "requests": {"cpu": "500m", "memory": "1Gi"},
                        "limits": {"cpu": "1", "memory": "1Gi"},
                    }
                },
            },
            opts=pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=[crds, identity, node_entry]),
        )
        self.queue_name = queue.name
        self.queue_arn = queue.arn
        self.controller_role_arn = identity.role_arn
        self.register_outputs(
            {
                "queue_name": self.queue_name,
                "queue_arn": self.queue_arn,
                "controller_role_arn": self.controller_role_arn,
            }
        )
