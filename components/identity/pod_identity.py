"""An IAM role for one Kubernetes service account, delivered by EKS Pod Identity.

Why Pod Identity rather than IRSA (an OIDC provider per cluster):
- No per-cluster IAM OIDC provider and no trust policy naming a cluster's issuer URL: the trust is the
  service principal ``pods.eks.amazonaws.com``, so one role can serve the same workload on several
  clusters, and replacing a cluster never rewrites IAM trust.
- Session tags (``eks-cluster-arn``, ``kubernetes-namespace``, ``kubernetes-service-account`` ...) come
  with every credential; the trust conditions on them (hence ``sts:TagSession`` in the trust).
- Every component this platform installs supports it: the VPC CNI, the EBS CSI driver, Karpenter v1,
  the FSx CSI driver and the Secrets Store CSI AWS provider (AWS EKS user guide, "Pod Identity").
The binding (cluster, namespace, service account) lives in the ``PodIdentityAssociation``; the
``eks-pod-identity-agent`` add-on must run on the nodes.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_aws as aws

from inference_platform.components.common.errors import raise_if
from inference_platform.components.identity.iam_documents import managed_policy_arn

POD_IDENTITY_SERVICE = "pods.eks.amazonaws.com"


def pod_identity_trust_policy(
    account_id: str, cluster_arn: str, *, namespace: str | None = None, service_account: str | None = None
) -> dict[str, Any]:
    """Trust for EKS Pod Identity: the service assumes the role and tags the session, for this account's
    cluster (and, where given, one namespace and service account) only.

    The service principal alone admits every Pod Identity association in the account (confused deputy). The
    conditions use what EKS documents it sends: ``aws:SourceAccount`` and the session tags Pod Identity adds to
    every AssumeRole (``eks-cluster-arn``, ``kubernetes-namespace``, ``kubernetes-service-account``; Amazon EKS
    user guide, "Create IAM role with trust policy required by EKS Pod Identity", awsdocs/amazon-eks-user-guide
    PR #1047, validated by AWS). Not ``aws:SourceArn``: EKS documents no value for it on Pod Identity, and a
    trust conditioned on it left pods without credentials (awslabs/mountpoint-s3-csi-driver #781), i.e. every
    pod of the stack would lose AWS access. ``cluster_arn`` may end in ``cluster/*`` (any cluster of the account
    and region). Policy ``pod-identity-trust-scoped`` refuses a Pod Identity trust without both scopes."""
    equals: dict[str, str] = {"aws:SourceAccount": account_id}
    like: dict[str, str] = {}
    (like if "*" in cluster_arn else equals)["aws:RequestTag/eks-cluster-arn"] = cluster_arn
    if namespace is not None:
        equals["aws:RequestTag/kubernetes-namespace"] = namespace
    if service_account is not None:
        equals["aws:RequestTag/kubernetes-service-account"] = service_account
    condition: dict[str, dict[str, str]] = {"StringEquals": equals}
    if like:
        condition["StringLike"] = like
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "AllowEksPodIdentity",
                "Effect": "Allow",
                "Principal": {"Service": POD_IDENTITY_SERVICE},
                "Action": ["sts:AssumeRole", "sts:TagSession"],
                "Condition": condition,
            }
        ],
    }


def pod_identity_trust(
    cluster_name: pulumi.Input[str] | None, *, namespace: str | None = None, service_account: str | None = None
) -> pulumi.Output[str]:
    """The trust policy as JSON for ``cluster_name`` (any cluster of the account and region when None), with
    the account, region and partition of the provider the program runs with."""
    identity = aws.get_caller_identity_output()
    region = aws.get_region_output()
    partition = aws.get_partition_output()
    return pulumi.Output.all(identity.account_id, region.region, partition.partition, cluster_name or "*").apply(
        lambda v: json.dumps(
            pod_identity_trust_policy(
                v[0],
                f"arn:{v[2]}:eks:{v[1]}:{v[0]}:cluster/{v[3]}",
                namespace=namespace,
                service_account=service_account,
            )
        )
    )


@dataclass(frozen=True, kw_only=True)
class PodIdentityRoleArgs:
    """What one service account's role needs: the cluster, the service account and what it may do."""

    cluster_name: pulumi.Input[str]
    """Required. The cluster whose pods receive the role."""
    namespace: str
    """Required. Namespace of the service account."""
    service_account: str
    """Required. Service account name; it need not exist yet (the association is by name)."""
    partition: str = "aws"
    """Default ``aws``. Partition of the AWS managed policy ARNs."""
    managed_policies: Sequence[str] = field(default_factory=tuple)
    """Default none. AWS managed policy names (``AmazonEKS_CNI_Policy``) to attach."""
    inline_policy: pulumi.Input[str] | None = None
    """Default none. One inline policy document (JSON text) with this role's own permissions."""
    description: str = ""
    """Default empty. Shown in IAM; say what the role is for."""


class PodIdentityRole(pulumi.ComponentResource):
    """An IAM role trusted by EKS Pod Identity and associated with one service account."""

    role_arn: pulumi.Output[str]
    role_name: pulumi.Output[str]
    association_id: pulumi.Output[str]

    def __init__(self, name: str, args: PodIdentityRoleArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        _validate(args)
        super().__init__("inference:identity:PodIdentityRole", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        role = aws.iam.Role(
            f"{name}-role",
            description=args.description or f"Pod Identity role for {args.namespace}/{args.service_account}",
            assume_role_policy=pod_identity_trust(
                args.cluster_name, namespace=args.namespace, service_account=args.service_account
            ),
            opts=child,
        )
        attachments = [
            aws.iam.RolePolicyAttachment(
                f"{name}-{policy}",
                role=role.name,
                policy_arn=managed_policy_arn(args.partition, policy),
                opts=child,
            )
            for policy in args.managed_policies
        ]
        if args.inline_policy is not None:
            attachments.append(
                aws.iam.RolePolicy(f"{name}-policy", role=role.id, policy=args.inline_policy, opts=child)
            )
        # The association last: pods must never get a role whose permissions are still being attached.
        association = aws.eks.PodIdentityAssociation(
            f"{name}-association",
            cluster_name=args.cluster_name,
            namespace=args.namespace,
            service_account=args.service_account,
            role_arn=role.arn,
            opts=pulumi.ResourceOptions(parent=self, depends_on=attachments),
        )
        self.role_arn = role.arn
        self.role_name = role.name
        self.association_id = association.association_id
        self.register_outputs(
            {"role_arn": self.role_arn, "role_name": self.role_name, "association_id": self.association_id}
        )


def _validate(args: PodIdentityRoleArgs) -> None:
    problems = []
    for field_name in ("namespace", "service_account"):
        value = getattr(args, field_name)
        if not value or len(value) > 253 or not value.replace("-", "").replace(".", "").isalnum():
            problems.append(f"{field_name}: {value!r} is not a Kubernetes object name")
    if len(set(args.managed_policies)) != len(args.managed_policies):
        problems.append(f"managed_policies: {list(args.managed_policies)} repeats a policy")
    raise_if("PodIdentityRole", problems)
