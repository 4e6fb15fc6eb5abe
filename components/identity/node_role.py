"""The IAM role every node of the cluster runs as (managed node groups and Karpenter nodes alike).

Only what a kubelet needs: join the cluster, pull images, be reachable through SSM Session Manager
instead of SSH. No CNI permissions (the VPC CNI gets them through Pod Identity) and nothing for
workloads: pods use their own Pod Identity roles, and IMDS hop limit 1 keeps them off this one.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import pulumi
import pulumi_aws as aws

from components.identity.iam_documents import NODE_POLICIES, managed_policy_arn, service_trust_policy


@dataclass(frozen=True, kw_only=True)
class NodeRoleArgs:
    cluster_name: str
    """Required. Used in the role's description."""
    partition: str = "aws"
    """Default ``aws``."""


class NodeRole(pulumi.ComponentResource):
    role_arn: pulumi.Output[str]
    role_name: pulumi.Output[str]

    def __init__(self, name: str, args: NodeRoleArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("inference:identity:NodeRole", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        role = aws.iam.Role(
            f"{name}-role",
            description=f"EKS nodes of {args.cluster_name}",
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
