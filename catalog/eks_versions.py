"""Kubernetes versions Amazon EKS offers and the managed add-on versions pinned for them: pure data.

Settings refuse a version EKS does not offer on the day of the plan, so a stack never reaches the
CreateCluster call with a version AWS would reject. Dates are EKS's own release calendar: a minor
version gets 14 months of standard support, then 12 months of extended support, after which EKS no
longer creates clusters on it.

Sources
- Calendar: EKS user guide "Understand the Kubernetes version lifecycle on EKS" (release and
  end-of-support dates as mirrored by endoflife.date/amazon-eks, Feb 2026) and, for 1.36, the EKS
  end of standard support 2027-08-02 quoted in aws-samples/sample-aws-genai-ops-demos#86 (Aug 2026).
  Kubernetes 1.37 (upstream 2026-08-26) is not listed: EKS had not announced it in our sources
  (aws/containers-roadmap#2864 still open), and a version that might not exist must not validate.
- Add-on versions for 1.36: what a working 1.36 cluster resolved to on 2026-09-18 (vpc-cni,
  kube-proxy, coredns, eks-pod-identity-agent) and the EBS CSI release pinned with 1.36 in the same
  period. For 1.35: the versions pinned with 1.35 clusters in early 2026. Add-on versions are
  accepted by EKS for a range of Kubernetes versions; kube-proxy and CoreDNS follow the minor version.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from typing import Final

ADDON_VPC_CNI: Final = "vpc-cni"
ADDON_COREDNS: Final = "coredns"
ADDON_KUBE_PROXY: Final = "kube-proxy"
ADDON_EBS_CSI: Final = "aws-ebs-csi-driver"
ADDON_POD_IDENTITY: Final = "eks-pod-identity-agent"
ADDONS: Final[tuple[str, ...]] = (ADDON_POD_IDENTITY, ADDON_VPC_CNI, ADDON_KUBE_PROXY, ADDON_COREDNS, ADDON_EBS_CSI)

ADDON_VERSION_PATTERN: Final = re.compile(r"^v\d+\.\d+\.\d+-eksbuild\.\d+$")

DEFAULT_KUBERNETES_VERSION: Final = "1.36"
"""The newest version EKS offers in our sources; standard support until 2027-08-02."""


@dataclass(frozen=True)
class KubernetesVersion:
    version: str
    released: dt.date
    end_of_standard_support: dt.date
    end_of_extended_support: dt.date

    def offered_on(self, day: dt.date) -> bool:
        """EKS creates clusters on a version from its release until extended support ends."""
        return self.released <= day < self.end_of_extended_support

    def standard_on(self, day: dt.date) -> bool:
        return self.released <= day < self.end_of_standard_support


def _v(version: str, released: str, standard: str, extended: str) -> KubernetesVersion:
    return KubernetesVersion(
        version, dt.date.fromisoformat(released), dt.date.fromisoformat(standard), dt.date.fromisoformat(extended)
    )


CALENDAR: Final[tuple[KubernetesVersion, ...]] = (
    _v("1.29", "2024-01-23", "2025-03-23", "2026-03-23"),
    _v("1.30", "2024-05-23", "2025-07-23", "2026-07-23"),
    _v("1.31", "2024-09-26", "2025-11-26", "2026-11-26"),
    _v("1.32", "2025-01-23", "2026-03-23", "2027-03-23"),
    _v("1.33", "2025-05-29", "2026-07-29", "2027-07-29"),
    _v("1.34", "2025-10-02", "2026-12-02", "2027-12-02"),
    _v("1.35", "2026-01-27", "2027-03-27", "2028-03-27"),
    _v("1.36", "2026-06-02", "2027-08-02", "2028-08-02"),
)

# Versions outside this table are still usable with `cluster.addonVersions` naming every add-on.
PINNED_ADDON_VERSIONS: Final[dict[str, dict[str, str]]] = {
    "1.36": {
        ADDON_POD_IDENTITY: "v1.3.10-eksbuild.3",
        ADDON_VPC_CNI: "v1.22.4-eksbuild.3",
        ADDON_KUBE_PROXY: "v1.36.0-eksbuild.21",
        ADDON_COREDNS: "v1.14.3-eksbuild.16",
        ADDON_EBS_CSI: "v1.63.1-eksbuild.1",
    },
    "1.35": {
        ADDON_POD_IDENTITY: "v1.3.10-eksbuild.3",
        ADDON_VPC_CNI: "v1.21.1-eksbuild.3",
        ADDON_KUBE_PROXY: "v1.35.0-eksbuild.2",
        ADDON_COREDNS: "v1.13.2-eksbuild.1",
        ADDON_EBS_CSI: "v1.63.1-eksbuild.1",
    },
}


def version(name: str) -> KubernetesVersion | None:
    return next((v for v in CALENDAR if v.version == name), None)


def offered_versions(day: dt.date) -> tuple[str, ...]:
    """Versions EKS creates clusters on, on ``day``, oldest first."""
    return tuple(v.version for v in CALENDAR if v.offered_on(day))


def addon_versions(kubernetes_version: str, overrides: dict[str, str] | None = None) -> dict[str, str]:
    """The add-on versions for a cluster: the pins for its version, then the stack's overrides.

    Raises KeyError naming the add-ons left without a version."""
    merged = {**PINNED_ADDON_VERSIONS.get(kubernetes_version, {}), **(overrides or {})}
    missing = [a for a in ADDONS if a not in merged]
    if missing:
        raise KeyError(f"no add-on version for {', '.join(missing)} on Kubernetes {kubernetes_version}")
    return {a: merged[a] for a in ADDONS}
