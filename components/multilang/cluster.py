"""Cluster for other Pulumi languages, mapped onto components.cluster.Cluster."""

# Annotations stay real types (no ``from __future__ import annotations``): the provider's analyzer reads them.
from enum import Enum
from typing import NotRequired, TypedDict

import pulumi

from inference_platform.components.cluster import Cluster as _Cluster
from inference_platform.components.cluster import ClusterArgs as _ClusterArgs
from inference_platform.components.multilang.options import inner_options, supplied


class SupportType(Enum):
    """What EKS does at the end of a Kubernetes version's standard support."""

    STANDARD = "STANDARD"
    """EKS upgrades the control plane (no extended-support charge)."""
    EXTENDED = "EXTENDED"
    """EKS keeps the version, at extra cost."""


class ClusterArgs(TypedDict):
    """The EKS control plane: private endpoint unless CIDRs are named, envelope-encrypted secrets, every
    control-plane log type in a KMS-encrypted group, access entries only."""

    cluster_name: str
    """Physical EKS cluster name (1-100 characters)."""
    kubernetes_version: str
    """A Kubernetes version EKS offers, e.g. ``1.33``."""
    subnet_ids: list[pulumi.Input[str]]
    """Control-plane ENI subnets in at least two zones (the Network's intra or private subnets)."""
    secrets_key_arn: pulumi.Input[str]
    """KMS key that envelope-encrypts Kubernetes secrets."""
    logs_key_arn: pulumi.Input[str]
    """KMS key of the control-plane log group (its key policy must admit CloudWatch Logs)."""
    region: str
    """The cluster's region (used by ``aws eks get-token`` in the kubeconfig)."""
    partition: NotRequired[str]
    """Default ``aws``."""
    log_retention_days: NotRequired[int]
    """Default 90. One of CloudWatch Logs' retention periods."""
    public_access_cidrs: NotRequired[list[str]]
    """Default none: the API endpoint is private only. Non-empty opens the public endpoint to exactly these CIDRs."""
    private_access_cidrs: NotRequired[list[str]]
    """Default none. IPv4 CIDRs admitted on TCP 443 to the cluster security group (VPN, CI runners)."""
    private_access_security_group_ids: NotRequired[list[str]]
    """Default none. Security groups whose members are admitted on TCP 443 to the cluster security group."""
    admin_principal_arns: NotRequired[list[str]]
    """Default none. IAM roles or users granted cluster-admin (AmazonEKSClusterAdminPolicy)."""
    read_only_principal_arns: NotRequired[list[str]]
    """Default none. IAM roles or users granted AmazonEKSViewPolicy."""
    support_type: NotRequired[SupportType]
    """Default ``STANDARD``."""
    deletion_protection: NotRequired[bool]
    """Default false. EKS refuses DeleteCluster while it is on (production)."""
    protect: NotRequired[bool]
    """Default false. Pulumi ``protect`` on the EKS cluster resource (production)."""


class Cluster(pulumi.ComponentResource):
    """An EKS cluster with a private-by-default endpoint, encrypted secrets and full control-plane logs
    (components.cluster.Cluster)."""

    cluster_name: pulumi.Output[str]
    """The EKS cluster's name."""
    cluster_arn: pulumi.Output[str]
    """The EKS cluster's ARN."""
    endpoint: pulumi.Output[str]
    """The API server endpoint."""
    certificate_authority: pulumi.Output[str]
    """The cluster CA certificate (base64)."""
    cluster_security_group_id: pulumi.Output[str]
    """The security group EKS created for the control plane and nodes."""
    kubeconfig: pulumi.Output[str]
    """A kubeconfig (secret) using ``aws eks get-token``: build the kubernetes provider other components take from it."""

    def __init__(self, name: str, args: ClusterArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("inference-platform:index:Cluster", name, {}, opts)
        cluster = _Cluster(
            name,
            _ClusterArgs(
                **supplied(
                    args,
                    "cluster_name",
                    "kubernetes_version",
                    "subnet_ids",
                    "secrets_key_arn",
                    "logs_key_arn",
                    "region",
                    "partition",
                    "log_retention_days",
                    "public_access_cidrs",
                    "private_access_cidrs",
                    "private_access_security_group_ids",
                    "admin_principal_arns",
                    "read_only_principal_arns",
                    "support_type",
                    "deletion_protection",
                    "protect",
                )
            ),
            inner_options(self, opts),
        )
        self.cluster_name = cluster.cluster_name
        self.cluster_arn = cluster.cluster_arn
        self.endpoint = cluster.endpoint
        self.certificate_authority = cluster.certificate_authority
        self.cluster_security_group_id = cluster.cluster_security_group_id
        self.kubeconfig = cluster.kubeconfig
        self.register_outputs({})
