"""Helm charts the platform installs, each pinned to one chart version: pure data.

A chart version is pinned (never "latest") so that a preview shows exactly what an update installs.

Sources
- Karpenter 1.14.1: aws/karpenter-provider-aws charts/karpenter/Chart.yaml at v1.14.1 (2026-08-21);
  its compatibility matrix supports Kubernetes 1.30-1.36. CRDs come from the separate karpenter-crd
  chart so that upgrades update them (Helm never upgrades a chart's crds/ directory).
- NVIDIA GPU Operator v26.7.0: NVIDIA's Helm values reference (``helm show values
  nvidia/gpu-operator --version=v26.7.0``), repository https://helm.ngc.nvidia.com/nvidia.
- Neuron Helm chart 1.10.0: aws-neuron/neuron-helm-charts release 1.10.0 (2026-08-19); device plugin
  and scheduler extension images follow the Neuron SDK of that release.
- EFA device plugin v0.5.30: aws/eks-charts stable/aws-efa-k8s-device-plugin/Chart.yaml (2026-08-03).
- Cluster Autoscaler chart 9.59.0 (kubernetes/autoscaler tag cluster-autoscaler-chart-9.59.0,
  2026-07-21; repository https://kubernetes.github.io/autoscaler). Its appVersion is still 1.35.0, and
  the autoscaler must match the cluster's Kubernetes minor (its README: "We strongly recommend using
  Cluster Autoscaler with version for which it was meant"), so the image tag is pinned per minor to the
  newest patch tagged in kubernetes/autoscaler on 2026-08-22: cluster-autoscaler-1.36.1 (2026-07-22),
  1.35.2, 1.34.5, 1.33.6 (all 2026-07-22) and 1.32.7 (2026-02-13).
- neuron-monitor 1.10.0: the image AWS's Neuron operator documentation pins as node metrics exporter;
  rendered here as a typed DaemonSet (AWS ships it as a manifest, aws-neuron-sdk
  src/k8/k8s-neuron-monitor-daemonset.yml, not as a chart).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final


@dataclass(frozen=True)
class Chart:
    """A Helm chart pinned to an exact version, and where ``helm`` fetches it from."""

    chart: str
    """Chart name in ``repository``, or a full ``oci://`` reference (then ``repository`` is None)."""
    version: str
    repository: str | None = None

    def release_source(self) -> dict[str, Any]:
        """Where ``kubernetes.helm.v3.Release`` fetches this chart from, as its keyword arguments."""
        repository = {"repository_opts": {"repo": self.repository}} if self.repository else {}
        return {"chart": self.chart, "version": self.version, **repository}


KARPENTER: Final = Chart("oci://public.ecr.aws/karpenter/karpenter", "1.14.1")
KARPENTER_CRD: Final = Chart("oci://public.ecr.aws/karpenter/karpenter-crd", "1.14.1")
GPU_OPERATOR: Final = Chart("gpu-operator", "v26.7.0", "https://helm.ngc.nvidia.com/nvidia")
NEURON: Final = Chart("oci://public.ecr.aws/neuron/neuron-helm-chart", "1.10.0")
EFA_DEVICE_PLUGIN: Final = Chart("aws-efa-k8s-device-plugin", "v0.5.30", "https://aws.github.io/eks-charts")
CLUSTER_AUTOSCALER: Final = Chart("cluster-autoscaler", "9.59.0", "https://kubernetes.github.io/autoscaler")

CLUSTER_AUTOSCALER_IMAGE: Final = "registry.k8s.io/autoscaling/cluster-autoscaler"
CLUSTER_AUTOSCALER_TAGS: Final[dict[str, str]] = {
    "1.36": "v1.36.1",
    "1.35": "v1.35.2",
    "1.34": "v1.34.5",
    "1.33": "v1.33.6",
    "1.32": "v1.32.7",
}
"""Cluster Autoscaler release per Kubernetes minor version of the cluster."""

NEURON_MONITOR_IMAGE: Final = "public.ecr.aws/neuron/neuron-monitor:1.10.0"

KARPENTER_AMI_ALIAS: Final = "al2023@v20260911"
"""EKS-optimized AL2023 release for Karpenter nodes: the newest for Kubernetes 1.36 on 2026-09-18.
Karpenter's ``al2023`` alias picks the NVIDIA or Neuron variant of that release per instance type."""
