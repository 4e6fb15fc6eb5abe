"""EKS managed add-ons at pinned versions, each with its Pod Identity role, and the gp3 StorageClass.

Add-ons come in two groups because of when they can become healthy: the pod identity agent, VPC CNI
and kube-proxy must exist before any node joins (a node without a CNI never gets Ready), while CoreDNS
and the EBS CSI controller are Deployments that stay DEGRADED, and block ``pulumi up``, until nodes
exist. The program instantiates this component once per group, the second depending on the system
node group (terraform-aws-eks's ``before_compute`` split).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from inference_platform.catalog.eks_versions import ADDON_POD_IDENTITY, ADDON_VERSION_PATTERN, ADDONS

# Re-exported by the area (inference_platform.components.cluster): the pinned version of every add-on for a
# Kubernetes version, what an AddonSpec takes.
from inference_platform.catalog.eks_versions import addon_versions as addon_versions
from inference_platform.components.common.errors import raise_if
from inference_platform.components.identity.pod_identity import PodIdentityRole, PodIdentityRoleArgs

DEFAULT_STORAGE_CLASS = "gp3"
VPC_CNI_NETWORK_POLICY: Final[dict[str, str]] = {"enableNetworkPolicy": "true"}
"""vpc-cni configuration that turns on its network policy agent: without it the API accepts
NetworkPolicies and nothing enforces them. Key and string value as the add-on's configuration schema
has them (top-level ``enableNetworkPolicy: "false"`` in amazon-vpc-cni-k8s charts/aws-vpc-cni/values.yaml
at v1.22.4, the version pinned for Kubernetes 1.36)."""


@dataclass(frozen=True, kw_only=True)
class AddonIdentity:
    """The service account an add-on runs as and what its Pod Identity role may do."""

    service_account: str
    """Required. Service account in ``kube-system``."""
    managed_policies: Sequence[str] = field(default_factory=tuple)
    """Default none. AWS managed policy names."""
    inline_policy: pulumi.Input[str] | None = None
    """Default none. An inline policy document (JSON text)."""


@dataclass(frozen=True, kw_only=True)
class AddonSpec:
    """One EKS managed add-on at an exact version, with its Pod Identity and configuration."""

    name: str
    """Required. EKS add-on name (``vpc-cni``, ``coredns``...)."""
    version: str
    """Required. Exact version (``v1.22.4-eksbuild.3``): never "latest", so previews show upgrades."""
    identity: AddonIdentity | None = None
    """Default none. Pod Identity for add-ons that call AWS APIs."""
    configuration_values: pulumi.Input[str] | None = None
    """Default none. The add-on's configuration JSON (schema: ``aws eks describe-addon-configuration``)."""


@dataclass(frozen=True, kw_only=True)
class ClusterAddonsArgs:
    """What a group of add-ons needs: the cluster, the add-ons and, for the storage group, the StorageClass key."""

    cluster_name: pulumi.Input[str]
    """Required."""
    addons: Sequence[AddonSpec]
    """Required. The add-ons of this group."""
    partition: str = "aws"
    """Default ``aws``."""
    storage_class_key_arn: pulumi.Input[str] | None = None
    """Default none. With a key (and the EBS CSI driver in ``addons``), create the default ``gp3``
    StorageClass whose volumes are encrypted with it."""
    provider: k8s.Provider | None = None
    """Required with ``storage_class_key_arn``: the cluster's Kubernetes provider."""
    depends_on: Sequence[pulumi.Resource] = field(default_factory=tuple)
    """Default none. What must exist first (the system node group, for CoreDNS and EBS CSI)."""


class ClusterAddons(pulumi.ComponentResource):
    """A group of EKS managed add-ons at pinned versions with their Pod Identity roles (and the gp3 StorageClass)."""

    addon_arns: dict[str, pulumi.Output[str]]
    role_arns: dict[str, pulumi.Output[str]]
    storage_class_name: str | None

    def __init__(self, name: str, args: ClusterAddonsArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        _validate(args)
        super().__init__("inference:cluster:ClusterAddons", name, None, opts)
        self.addon_arns, self.role_arns = {}, {}
        created: list[pulumi.Resource] = []
        agent: pulumi.Resource | None = None
        for spec in args.addons:
            after = list(args.depends_on)
            if spec.identity is not None:
                # Credentials come from the pod identity agent: it must be running first.
                after += [agent] if agent is not None else []
                identity = PodIdentityRole(
                    f"{name}-{spec.name}",
                    PodIdentityRoleArgs(
                        cluster_name=args.cluster_name,
                        namespace="kube-system",
                        service_account=spec.identity.service_account,
                        partition=args.partition,
                        managed_policies=spec.identity.managed_policies,
                        inline_policy=spec.identity.inline_policy,
                        description=f"EKS add-on {spec.name}",
                    ),
                    opts=pulumi.ResourceOptions(parent=self),
                )
                after.append(identity)
                self.role_arns[spec.name] = identity.role_arn
            addon = aws.eks.Addon(
                f"{name}-{spec.name}",
                cluster_name=args.cluster_name,
                addon_name=spec.name,
                addon_version=spec.version,
                configuration_values=spec.configuration_values,
                # Managed add-ons own their objects; a hand edit is overwritten rather than blocking updates.
                resolve_conflicts_on_create="OVERWRITE",
                resolve_conflicts_on_update="OVERWRITE",
                opts=pulumi.ResourceOptions(parent=self, depends_on=after),
            )
            self.addon_arns[spec.name] = addon.arn
            created.append(addon)
            if spec.name == ADDON_POD_IDENTITY:
                agent = addon
        self.storage_class_name = None
        if args.storage_class_key_arn is not None:
            self.storage_class_name = DEFAULT_STORAGE_CLASS
            k8s.storage.v1.StorageClass(
                f"{name}-gp3",
                metadata={
                    "name": DEFAULT_STORAGE_CLASS,
                    "annotations": {"storageclass.kubernetes.io/is-default-class": "true"},
                },
                provisioner="ebs.csi.aws.com",
                parameters={
                    "type": "gp3",
                    "encrypted": "true",
                    "kmsKeyId": args.storage_class_key_arn,
                    "csi.storage.k8s.io/fstype": "ext4",
                },
                # Bind where the pod lands: an EBS volume is zonal and GPU pools may be pinned to a zone.
                volume_binding_mode="WaitForFirstConsumer",
                allow_volume_expansion=True,
                reclaim_policy="Delete",
                opts=pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=created),
            )
        self.register_outputs({"addon_arns": self.addon_arns, "role_arns": self.role_arns})


def _validate(args: ClusterAddonsArgs) -> None:
    problems = []
    names = [a.name for a in args.addons]
    if len(set(names)) != len(names):
        problems.append(f"addons: {names} repeats an add-on")
    for addon in args.addons:
        if addon.name not in ADDONS:
            problems.append(f"addons: {addon.name!r} is not one of {', '.join(ADDONS)}")
        if not ADDON_VERSION_PATTERN.match(addon.version):
            problems.append(f"addons.{addon.name}: version {addon.version!r} is not vX.Y.Z-eksbuild.N")
    if args.storage_class_key_arn is not None:
        if args.provider is None:
            problems.append("provider: required to create the StorageClass")
        if "aws-ebs-csi-driver" not in names:
            problems.append("storage_class_key_arn: the gp3 StorageClass needs aws-ebs-csi-driver in this group")
    raise_if("ClusterAddons", problems)
