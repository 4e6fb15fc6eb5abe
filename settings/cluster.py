"""``inference-platform:cluster``: the EKS control plane, its add-ons and the system node group."""

from __future__ import annotations

import datetime as dt
import ipaddress
import re
from typing import ClassVar, Literal

from pydantic import Field

from inference_platform import catalog
from inference_platform.catalog import eks_versions
from inference_platform.planners.cidr import internet_wide
from inference_platform.settings.base import CheckContext, Problem, Section
from inference_platform.settings.network import LOG_RETENTION_DAYS

MAX_MANAGED_NODES = 450  # EKS quota: nodes per managed node group
SECURITY_GROUP_ID = re.compile(r"^sg-(?:[0-9a-f]{8}|[0-9a-f]{17})$")
IMAGE_DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")


class SystemNodeGroupSettings(Section):
    instance_types: list[str] = Field(default_factory=lambda: ["m7i.xlarge", "m6i.xlarge"], min_length=1)
    """Default ``[m7i.xlarge, m6i.xlarge]``. General-purpose types (catalog vendor ``none``) for
    controllers and add-ons; on-demand only."""
    min_size: int = Field(default=2, ge=1)
    """Default 2: CoreDNS and Karpenter run two replicas on separate nodes."""
    max_size: int = Field(default=4, ge=1)
    """Default 4."""
    desired_size: int | None = None
    """Default ``minSize``."""
    disk_size_gib: int = Field(default=50, ge=20, le=16384)
    """Default 50 GiB encrypted gp3 root volume."""


class PrivateAccessSettings(Section):
    """Who may reach the private API endpoint from outside the cluster (the deployer's path)."""

    cidrs: list[str] = Field(default_factory=list)
    """Default ``[]``. IPv4 CIDRs (a VPN, a peered network, a CI runner subnet) admitted on TCP 443 to the
    cluster security group; the network must also route to the VPC and resolve the endpoint's name."""
    security_group_ids: list[str] = Field(default_factory=list)
    """Default ``[]``. Security groups (``sg-...``; in this VPC or a peered one) whose members are admitted
    on TCP 443 to the cluster security group, e.g. a CI runner's group."""


class ClusterSettings(Section):
    key: ClassVar[str] = "cluster"

    kubernetes_version: str = eks_versions.DEFAULT_KUBERNETES_VERSION
    """Default the newest version EKS offers (inference_platform.catalog.eks_versions). Must be offered on the day of
    the plan; versions without pinned add-ons need ``addonVersions``."""
    public_access_cidrs: list[str] = Field(default_factory=list)
    """Default ``[]``: private API endpoint only (deploy from inside the VPC). IPv4 CIDRs that may
    reach the public endpoint; ``0.0.0.0/0`` is refused in production."""
    private_access: PrivateAccessSettings = Field(default_factory=PrivateAccessSettings)
    """Default none. How the deployer reaches the private endpoint: ``pulumi up`` installs Helm charts
    and Kubernetes objects through it, so a stack with a private-only endpoint needs ``cidrs`` or
    ``securityGroupIds`` here (or ``publicAccessCidrs``); production refuses a stack with neither."""
    log_retention_days: int = 90
    """Default 90. Control-plane log retention; one of CloudWatch Logs' fixed periods."""
    provisioning: Literal["managed", "karpenter"] = "managed"
    """Default ``managed``: one EKS managed node group per pool (per zone for an EFA pool), sized by the
    Kubernetes Cluster Autoscaler, which the stack installs on the system nodes when it has pools.
    ``karpenter`` installs Karpenter instead and gives each pool (each zone of an EFA pool) a NodePool
    + EC2NodeClass."""
    creator_admin: bool = True
    """Default ``true``. Grant the identity running ``pulumi up`` cluster-admin through an access entry,
    so the same update can install add-ons. Set false once ``access.adminRoleArns`` lists the deployer."""
    support_type: Literal["STANDARD", "EXTENDED"] = "STANDARD"
    """Default ``STANDARD``: upgrade at the end of standard support rather than pay for extended support."""
    addon_versions: dict[str, str] = Field(default_factory=dict)
    """Default ``{}``. Per add-on version overrides (``vpc-cni: v1.22.4-eksbuild.3``)."""
    system_node_group: SystemNodeGroupSettings = Field(default_factory=SystemNodeGroupSettings)
    neuron_monitor_digest: str | None = None
    """Default unset (the image by tag); required in production with Neuron pools. ``sha256:<64 hex>`` of
    AWS's neuron-monitor image at the pinned tag (catalog/charts.py NEURON_MONITOR_IMAGE), as
    the registry reports it (``crane digest <image>`` or ``docker buildx imagetools inspect <image>``).
    AWS publishes a tag only; no digest is built in, since one not read from the registry would be made up."""

    def problems(self, ctx: CheckContext) -> list[Problem]:
        out = [*self.version_problems(dt.date.today()), *self._endpoint_problems(ctx), *self._system_problems()]
        out += _neuron_monitor_problems(self.neuron_monitor_digest, ctx)
        if self.log_retention_days not in LOG_RETENTION_DAYS:
            allowed = ", ".join(map(str, LOG_RETENTION_DAYS))
            out.append(Problem("cluster.logRetentionDays", f"got {self.log_retention_days}; allowed: {allowed}"))
        return out

    def version_problems(self, today: dt.date) -> list[Problem]:
        """The version checks against EKS's calendar as of ``today``."""
        out = []
        offered = eks_versions.offered_versions(today)
        if self.kubernetes_version not in offered:
            out.append(
                Problem(
                    "cluster.kubernetesVersion",
                    f"got {self.kubernetes_version!r}; EKS offers {', '.join(offered)} on {today.isoformat()}",
                )
            )
        for name, version in self.addon_versions.items():
            path = f"cluster.addonVersions.{name}"
            if name not in eks_versions.ADDONS:
                out.append(Problem(path, f"unknown add-on; known: {', '.join(eks_versions.ADDONS)}"))
            elif not eks_versions.ADDON_VERSION_PATTERN.match(version):
                out.append(Problem(path, f"got {version!r}; expected an EKS add-on version such as v1.22.4-eksbuild.3"))
        if not out:
            try:
                eks_versions.addon_versions(self.kubernetes_version, self.addon_versions)
            except KeyError as err:
                pinned = ", ".join(eks_versions.PINNED_ADDON_VERSIONS)
                out.append(Problem("cluster.addonVersions", f"{err.args[0]}; pinned versions exist for {pinned}"))
        return out

    def _endpoint_problems(self, ctx: CheckContext) -> list[Problem]:
        out = []
        for i, cidr in enumerate(self.public_access_cidrs):
            path = f"cluster.publicAccessCidrs[{i}]"
            try:
                network = ipaddress.IPv4Network(cidr, strict=True)
            except ValueError as err:
                out.append(Problem(path, f"got {cidr!r}; expected an IPv4 CIDR ({err})"))
                continue
            if network.prefixlen == 0 and ctx.production:
                out.append(
                    Problem(path, "0.0.0.0/0 opens the Kubernetes API to the world; production allows named CIDRs only")
                )
        if len(set(self.public_access_cidrs)) != len(self.public_access_cidrs):
            out.append(Problem("cluster.publicAccessCidrs", "lists a CIDR twice"))
        wide = internet_wide(self.public_access_cidrs)
        if ctx.production and "0.0.0.0/0" not in self.public_access_cidrs and wide:
            out.append(
                Problem(
                    "cluster.publicAccessCidrs",
                    f"got {self.public_access_cidrs}; together they cover {wide[0]} and open the Kubernetes API to "
                    "the internet; production allows named CIDRs only",
                )
            )
        return out + self._private_access_problems(ctx)

    def _private_access_problems(self, ctx: CheckContext) -> list[Problem]:
        access, out = self.private_access, []
        for i, cidr in enumerate(access.cidrs):
            path = f"cluster.privateAccess.cidrs[{i}]"
            try:
                network = ipaddress.IPv4Network(cidr, strict=True)
            except ValueError as err:
                out.append(Problem(path, f"got {cidr!r}; expected an IPv4 CIDR ({err})"))
                continue
            if network.prefixlen == 0:
                out.append(Problem(path, "0.0.0.0/0 admits everyone to the API; name the VPN, peer or runner CIDRs"))
        wide = internet_wide(access.cidrs)
        if "0.0.0.0/0" not in access.cidrs and wide:
            out.append(
                Problem(
                    "cluster.privateAccess.cidrs",
                    f"got {access.cidrs}; together they cover {wide[0]} and admit the internet to the API; name the "
                    "VPN, peer or runner CIDRs",
                )
            )
        for i, group in enumerate(access.security_group_ids):
            if not SECURITY_GROUP_ID.match(group):
                out.append(
                    Problem(f"cluster.privateAccess.securityGroupIds[{i}]", f"got {group!r}; expected sg-<8 or 17 hex>")
                )
        for key, values in (("cidrs", access.cidrs), ("securityGroupIds", access.security_group_ids)):
            if len(set(values)) != len(values):
                out.append(Problem(f"cluster.privateAccess.{key}", "lists an entry twice"))
        if ctx.production and not self.public_access_cidrs and not access.cidrs and not access.security_group_ids:
            out.append(
                Problem(
                    "cluster.privateAccess",
                    "the API endpoint is private (no publicAccessCidrs) and nothing outside the cluster may reach "
                    "it, yet `pulumi up` installs Helm charts and Kubernetes objects through it: set "
                    "cluster.privateAccess.cidrs (VPN, peered network or CI runner CIDRs) or "
                    "cluster.privateAccess.securityGroupIds (a runner's security group), or "
                    "cluster.publicAccessCidrs (named runner CIDRs)",
                )
            )
        return out

    def _system_problems(self) -> list[Problem]:
        group, out = self.system_node_group, []
        prefix = "cluster.systemNodeGroup"
        for i, name in enumerate(group.instance_types):
            try:
                found = catalog.instance(name)
            except catalog.CatalogError as err:
                out.append(Problem(f"{prefix}.instanceTypes[{i}]", str(err)))
                continue
            if found.is_accelerated:
                out.append(
                    Problem(
                        f"{prefix}.instanceTypes[{i}]", f"{name} has accelerators; system nodes are general purpose"
                    )
                )
        desired = group.min_size if group.desired_size is None else group.desired_size
        if group.min_size > group.max_size:
            out.append(Problem(f"{prefix}.minSize", f"{group.min_size} is larger than maxSize {group.max_size}"))
        elif not group.min_size <= desired <= group.max_size:
            out.append(Problem(f"{prefix}.desiredSize", f"{desired} is outside [{group.min_size}, {group.max_size}]"))
        if group.max_size > MAX_MANAGED_NODES:
            out.append(Problem(f"{prefix}.maxSize", f"{group.max_size} exceeds EKS's {MAX_MANAGED_NODES} per group"))
        return out


def _neuron_monitor_problems(digest: str | None, ctx: CheckContext) -> list[Problem]:
    key = "cluster.neuronMonitorDigest"
    if digest is not None:
        return [] if IMAGE_DIGEST.match(digest) else [Problem(key, f"got {digest!r}; expected sha256:<64 hex digits>")]
    pools = _neuron_pools(ctx)
    if not ctx.production or not pools:
        return []
    named = ", ".join(f"nodePools.{p}.instanceTypes" for p in pools)
    return [
        Problem(
            key,
            f"missing; production runs neuron-monitor on its Neuron pools ({named}) by digest, not by tag: set the digest "
            "the registry reports for the pinned image (crane digest public.ecr.aws/neuron/neuron-monitor:<tag>)",
        )
    ]


def _neuron_pools(ctx: CheckContext) -> list[str]:
    """The pools with a Neuron instance type, by name."""
    pools = getattr(ctx.sections.get("nodePools"), "root", None) or {}
    return [pool_name for pool_name, pool in pools.items() if any(_is_neuron(t) for t in pool.instance_types)]


def _is_neuron(instance_type: str) -> bool:
    try:
        return catalog.instance(instance_type).vendor == catalog.VENDOR_NEURON
    except catalog.CatalogError:
        return False  # the nodePools section names unknown types
