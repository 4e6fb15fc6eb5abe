"""The EKS control plane, its access entries and the one Kubernetes provider every object uses.

Built from ``pulumi_aws`` primitives (not the ``pulumi_eks`` multi-language component, whose children
tests and policies cannot see). Secure defaults that ai-on-eks leaves open: the API endpoint is
private unless a stack names the CIDRs allowed to reach it; secrets are envelope-encrypted with the
stack's cluster key; every control-plane log type goes to a KMS-encrypted group with a retention;
authentication is access entries only (mode ``API``: no ``aws-auth`` ConfigMap to drift or be edited
by hand).
"""

from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from inference_platform.components.common.errors import raise_if
from inference_platform.components.identity.iam_documents import (
    EKS_CLUSTER_POLICY,
    managed_policy_arn,
    service_trust_policy,
)

LOG_TYPES: tuple[str, ...] = ("api", "audit", "authenticator", "controllerManager", "scheduler")
DEFAULT_LOG_RETENTION_DAYS = 90
ADMIN_POLICY = "AmazonEKSClusterAdminPolicy"
VIEW_POLICY = "AmazonEKSViewPolicy"
_ROLE_ARN = re.compile(r"^arn:[\w-]+:iam::\d{12}:(role|user)/(?:[\w+=,.@-]+/)*([\w+=,.@-]+)$")


@dataclass(frozen=True, kw_only=True)
class ClusterArgs:
    """What the EKS control plane needs: name, version, subnets, keys, endpoint access and who administers it."""

    cluster_name: str
    """Required. Physical EKS cluster name (1-100 characters); subnets and SGs are tagged with it."""
    kubernetes_version: str
    """Required. A version EKS offers (settings check it against inference_platform.catalog.eks_versions)."""
    subnet_ids: Sequence[pulumi.Input[str]]
    """Required. Control-plane ENI subnets in at least two zones (intra subnets when the VPC has them)."""
    secrets_key_arn: pulumi.Input[str]
    """Required. KMS key that envelope-encrypts Kubernetes secrets."""
    logs_key_arn: pulumi.Input[str]
    """Required. KMS key of the control-plane log group (its policy must admit CloudWatch Logs)."""
    region: str
    """Required. Region, for ``aws eks get-token`` in the kubeconfig."""
    partition: str = "aws"
    """Default ``aws``."""
    log_retention_days: int = DEFAULT_LOG_RETENTION_DAYS
    """Default 90. One of CloudWatch Logs' fixed retention periods."""
    public_access_cidrs: Sequence[str] = field(default_factory=tuple)
    """Default none: the API endpoint is private only. Non-empty turns the public endpoint on for exactly
    these CIDRs (never 0.0.0.0/0 in production: settings refuse it)."""
    private_access_cidrs: Sequence[str] = field(default_factory=tuple)
    """Default none. IPv4 CIDRs (VPN, peered network, CI runners) admitted on TCP 443 to the cluster
    security group, so a deployer outside the VPC can reach the private endpoint."""
    private_access_security_group_ids: Sequence[str] = field(default_factory=tuple)
    """Default none. Security groups whose members are admitted on TCP 443 to the cluster security group."""
    admin_principal_arns: Sequence[str] = field(default_factory=tuple)
    """Default none. IAM roles/users granted cluster-admin (``AmazonEKSClusterAdminPolicy``)."""
    read_only_principal_arns: Sequence[str] = field(default_factory=tuple)
    """Default none. IAM roles/users granted ``AmazonEKSViewPolicy`` (no Secrets)."""
    support_type: str = "STANDARD"
    """Default ``STANDARD``: EKS upgrades the control plane at the end of standard support instead of
    silently billing extended support. ``EXTENDED`` keeps the version (at extra cost)."""
    deletion_protection: bool = False
    """Default ``False``. EKS refuses DeleteCluster while on; production turns it on."""
    protect: bool = False
    """Default ``False``. Pulumi ``protect`` on the cluster resource (production)."""


class Cluster(pulumi.ComponentResource):
    """An EKS cluster with private-by-default endpoint, encrypted secrets and full control-plane logs."""

    cluster_name: pulumi.Output[str]
    cluster_arn: pulumi.Output[str]
    endpoint: pulumi.Output[str]
    certificate_authority: pulumi.Output[str]
    cluster_security_group_id: pulumi.Output[str]
    kubeconfig: pulumi.Output[str]
    provider: k8s.Provider
    """The Kubernetes provider every Kubernetes resource of the stack must use."""

    def __init__(self, name: str, args: ClusterArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        _validate(args)
        super().__init__("inference:cluster:Cluster", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        role = aws.iam.Role(
            f"{name}-control-plane-role",
            description=f"EKS control plane of {args.cluster_name}",
            # sts:TagSession: EKS tags its sessions (required since EKS Auto Mode; harmless otherwise).
            assume_role_policy=json.dumps(service_trust_policy("eks.amazonaws.com", tag_session=True)),
            opts=child,
        )
        cluster_policy = aws.iam.RolePolicyAttachment(
            f"{name}-control-plane-policy",
            role=role.name,
            policy_arn=managed_policy_arn(args.partition, EKS_CLUSTER_POLICY),
            opts=child,
        )
        # EKS writes to exactly this group name; creating it first gives it our key and retention
        # (otherwise EKS creates it unencrypted and kept forever).
        log_group = aws.cloudwatch.LogGroup(
            f"{name}-control-plane-logs",
            name=f"/aws/eks/{args.cluster_name}/cluster",
            retention_in_days=args.log_retention_days,
            kms_key_id=args.logs_key_arn,
            opts=child,
        )
        public = bool(args.public_access_cidrs)
        cluster = aws.eks.Cluster(
            f"{name}-eks",
            name=args.cluster_name,
            version=args.kubernetes_version,
            role_arn=role.arn,
            vpc_config={
                "subnet_ids": list(args.subnet_ids),
                "endpoint_private_access": True,
                "endpoint_public_access": public,
                **({"public_access_cidrs": list(args.public_access_cidrs)} if public else {}),
            },
            encryption_config={"provider": {"key_arn": args.secrets_key_arn}, "resources": ["secrets"]},
            enabled_cluster_log_types=list(LOG_TYPES),
            access_config={"authentication_mode": "API", "bootstrap_cluster_creator_admin_permissions": False},
            # Every add-on is a pinned managed add-on (ClusterAddons); EKS must not pre-install its own.
            bootstrap_self_managed_addons=False,
            upgrade_policy={"support_type": args.support_type},
            deletion_protection=args.deletion_protection,
            opts=pulumi.ResourceOptions(parent=self, depends_on=[cluster_policy, log_group], protect=args.protect),
        )
        entries = self._access_entries(name, args, cluster)

        self.cluster_name = cluster.name
        self.cluster_arn = cluster.arn
        self.endpoint = cluster.endpoint
        self.certificate_authority = cluster.certificate_authority.apply(lambda ca: ca.data)
        self.cluster_security_group_id = cluster.vpc_config.apply(lambda vpc: vpc.cluster_security_group_id)
        api_access = self._api_access(name, args)
        self.kubeconfig = pulumi.Output.secret(
            pulumi.Output.json_dumps(
                kubeconfig_document(cluster.name, cluster.endpoint, self.certificate_authority, args.region)
            )
        )
        # Access entries and the deployer's network path first: the provider's identity must be authorised
        # and able to reach the endpoint before the first object.
        self.provider = k8s.Provider(
            f"{name}-k8s",
            kubeconfig=self.kubeconfig,
            enable_server_side_apply=True,
            opts=pulumi.ResourceOptions(parent=self, depends_on=[*entries, *api_access]),
        )
        self.register_outputs(
            {
                "cluster_name": self.cluster_name,
                "cluster_arn": self.cluster_arn,
                "endpoint": self.endpoint,
                "cluster_security_group_id": self.cluster_security_group_id,
                "kubeconfig": self.kubeconfig,
            }
        )

    def _api_access(self, name: str, args: ClusterArgs) -> list[pulumi.Resource]:
        """One HTTPS rule on the cluster security group per source that may reach the private endpoint."""
        sources: list[tuple[str, str, dict[str, str]]] = [
            (_cidr_key(cidr), f"Kubernetes API (HTTPS) from {cidr}", {"cidr_ipv4": cidr})
            for cidr in args.private_access_cidrs
        ]
        sources += [
            (group, f"Kubernetes API (HTTPS) from members of {group}", {"referenced_security_group_id": group})
            for group in args.private_access_security_group_ids
        ]
        return [
            aws.vpc.SecurityGroupIngressRule(
                f"{name}-api-from-{key}",
                security_group_id=self.cluster_security_group_id,
                description=description,
                ip_protocol="tcp",
                from_port=443,
                to_port=443,
                **source,
                opts=pulumi.ResourceOptions(parent=self),
            )
            for key, description, source in sources
        ]

    def _access_entries(self, name: str, args: ClusterArgs, cluster: aws.eks.Cluster) -> list[pulumi.Resource]:
        grants = [(arn, ADMIN_POLICY, "admin") for arn in args.admin_principal_arns]
        grants += [(arn, VIEW_POLICY, "view") for arn in args.read_only_principal_arns]
        created: list[pulumi.Resource] = []
        for arn, policy, kind in grants:
            key = f"{name}-{kind}-{principal_key(arn)}"
            entry = aws.eks.AccessEntry(
                key,
                cluster_name=cluster.name,
                principal_arn=arn,
                type="STANDARD",
                opts=pulumi.ResourceOptions(parent=self),
            )
            created.append(
                aws.eks.AccessPolicyAssociation(
                    f"{key}-policy",
                    cluster_name=cluster.name,
                    principal_arn=entry.principal_arn,
                    policy_arn=f"arn:{args.partition}:eks::aws:cluster-access-policy/{policy}",
                    access_scope={"type": "cluster"},
                    opts=pulumi.ResourceOptions(parent=self),
                )
            )
        return created


def principal_key(arn: str) -> str:
    """A stable resource-name fragment for a principal: its kind and name (``role-deployer``)."""
    match = _ROLE_ARN.match(arn)
    if not match:
        raise ValueError(f"{arn!r} is not an IAM role or user ARN")
    return f"{match.group(1)}-{match.group(2)}".lower()


def _cidr_key(cidr: str) -> str:
    """A stable resource-name fragment for a CIDR (``10.0.0.0/8`` -> ``10-0-0-0-8``)."""
    return cidr.replace(".", "-").replace("/", "-")


def kubeconfig_document(
    cluster_name: pulumi.Input[str], endpoint: pulumi.Input[str], ca_data: pulumi.Input[str], region: str
) -> dict[str, Any]:
    """A kubeconfig that authenticates with ``aws eks get-token`` (short-lived tokens, no static secret)."""
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "eks", "cluster": {"server": endpoint, "certificate-authority-data": ca_data}}],
        "contexts": [{"name": "eks", "context": {"cluster": "eks", "user": "eks"}}],
        "current-context": "eks",
        "preferences": {},
        "users": [
            {
                "name": "eks",
                "user": {
                    "exec": {
                        "apiVersion": "client.authentication.k8s.io/v1beta1",
                        "command": "aws",
                        "args": [
                            "eks",
                            "get-token",
                            "--cluster-name",
                            cluster_name,
                            "--region",
                            region,
                            "--output",
                            "json",
                        ],
                        "interactiveMode": "Never",
                    }
                },
            }
        ],
    }


def _validate(args: ClusterArgs) -> None:
    problems = []
    if not 1 <= len(args.cluster_name) <= 100 or not re.match(r"^[0-9A-Za-z][A-Za-z0-9\-_]*$", args.cluster_name):
        problems.append(f"cluster_name: {args.cluster_name!r} is not a valid EKS cluster name")
    if len(args.subnet_ids) < 2:
        problems.append("subnet_ids: EKS needs control-plane subnets in at least two zones")
    if args.support_type not in ("STANDARD", "EXTENDED"):
        problems.append(f"support_type: {args.support_type!r} is not STANDARD or EXTENDED")
    principals = [*args.admin_principal_arns, *args.read_only_principal_arns]
    for arn in principals:
        if not _ROLE_ARN.match(arn):
            problems.append(f"principal {arn!r} is not an IAM role or user ARN")
    for cidr in args.private_access_cidrs:
        try:
            if ipaddress.IPv4Network(cidr, strict=True).prefixlen == 0:
                problems.append(f"private_access_cidrs: {cidr} would admit everyone to the API")
        except ValueError as err:
            problems.append(f"private_access_cidrs: {cidr!r} is not an IPv4 CIDR ({err})")
    for group in args.private_access_security_group_ids:
        if not re.match(r"^sg-(?:[0-9a-f]{8}|[0-9a-f]{17})$", group):
            problems.append(f"private_access_security_group_ids: {group!r} is not a security group id")
    if len(set(principals)) != len(principals):
        problems.append("admin_principal_arns/read_only_principal_arns: a principal is listed twice")
    raise_if("Cluster", problems)
