"""The IAM role nodes of the cluster run as: one for managed node groups, one for Karpenter's nodes (EKS
allows one access entry per principal and makes its own for a managed node group's role).

Only what a kubelet needs: join the cluster, pull images, be reachable through SSM Session Manager
instead of SSH. No CNI permissions (the VPC CNI gets them through Pod Identity) and nothing for
workloads: pods use their own Pod Identity roles, and IMDS hop limit 1 keeps them off this one.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import pulumi
import pulumi_aws as aws

from inference_platform.components.identity.iam_documents import NODE_POLICIES, managed_policy_arn, service_trust_policy


@dataclass(frozen=True, kw_only=True)
class NodeRoleArgs:
    """What a node role needs: the cluster, the partition and what the role is for."""

    cluster_name: str
    """Required. Used in the role's description."""
    partition: str = "aws"
    """Default ``aws``."""
    purpose: str = "EKS nodes"
    """Default ``EKS nodes``. What the role's description says the role is for (a Karpenter stack has two:
    one per access entry, since EKS allows one entry per principal)."""


class NodeRole(pulumi.ComponentResource):
    """The IAM role the nodes of a cluster run as, with the managed policies nodes need."""

    role_arn: pulumi.Output[str]
    role_name: pulumi.Output[str]

    def __init__(self, name: str, args: NodeRoleArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("inference:identity:NodeRole", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        role = aws.iam.Role(
            f"{name}-role",
            description=f"{args.purpose} of {args.cluster_name}",
            assume_role_policy=json.dumps(service_trust_policy("ec2.amazonaws.com")),
            opts=child,
        )
        attachments = [
            aws.iam.RolePolicyAttachment(
                f"{name}-{policy}", role=role.name, policy_arn=managed_policy_arn(args.partition, policy), opts=child
            )
            for policy in NODE_POLICIES
        ]
        # Consumers must wait for the attachments too: a node that boots without them never joins.
        self.role_arn = pulumi.Output.all(role.arn, *[a.id for a in attachments]).apply(lambda values: values[0])
        self.role_name = role.name
        self.register_outputs({"role_arn": self.role_arn, "role_name": self.role_name})
