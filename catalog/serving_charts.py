"""Helm charts the inference rollout installs, each pinned to one chart version: pure data.

Sources
- LeaderWorkerSet v0.10.0 (tagged 2026-08-11): kubernetes-sigs/lws, chart
  ``oci://registry.k8s.io/lws/charts/lws`` version 0.10.0 (site/content/en/docs/installation at
  v0.10.0; charts/lws/Chart.yaml appVersion v0.10.0). The chart's values.yaml defaults the manager
  image to tag ``main`` with ``pullPolicy: Always``, so the release pins the tag itself.
- prometheus-operator-crds 31.0.1 (Prometheus Operator v0.93.1, 2026-08-10):
  prometheus-community/helm-charts charts/prometheus-operator-crds/Chart.yaml, repository
  https://prometheus-community.github.io/helm-charts. CRDs only, no operator: ServiceMonitors apply
  now and are picked up when an observability stack's Prometheus arrives.
"""

from __future__ import annotations

from typing import Final

from inference_platform.catalog.charts import Chart

LEADER_WORKER_SET: Final = Chart("oci://registry.k8s.io/lws/charts/lws", "0.10.0")
LEADER_WORKER_SET_IMAGE_TAG: Final = "v0.10.0"
PROMETHEUS_OPERATOR_CRDS: Final = Chart(
    "prometheus-operator-crds", "31.0.1", "https://prometheus-community.github.io/helm-charts"
)
