"""Helm charts of the metrics pipeline and the autoscaler, each pinned to one chart version: pure data.

Sources
- kube-prometheus-stack 88.5.3 (Prometheus Operator v0.93.1; its Grafana subchart now comes from the
  grafana-community charts): prometheus-community/helm-charts, repository
  https://prometheus-community.github.io/helm-charts. Its operator matches the CRDs of
  prometheus-operator-crds 31.0.1 (serving_charts), which the rollout installs first, so this release
  skips its own CRDs.
- KEDA 2.20.2: kedacore/charts, repository https://kedacore.github.io/charts. Creates the
  autoscaling/v2 HPA of every ScaledObject (``keda-hpa-<name>``).
"""

from __future__ import annotations

from typing import Final

from inference_platform.catalog.charts import Chart

KUBE_PROMETHEUS_STACK: Final = Chart(
    "kube-prometheus-stack", "88.5.3", "https://prometheus-community.github.io/helm-charts"
)
KEDA: Final = Chart("keda", "2.20.2", "https://kedacore.github.io/charts")
