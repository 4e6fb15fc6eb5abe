"""Pods Helm waits for in pinned charts that place them nowhere in particular: pure data.

A release waits (Helm's default 300 s) for its Deployments and its hook Jobs. When the chart's values give
those pods no ``nodeSelector``, they run on any node without a taint; on this platform accelerator pools are
tainted (inference_platform.catalog.pool_profile), so on a fresh cluster such pods wait for the system node group.
The plan orders each such release after an untainted node group (policies/rules/ordering.py); a release that
sets one of the selectors falls under the system-node check instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from inference_platform.catalog import edge_charts
from inference_platform.catalog.charts import Chart


@dataclass(frozen=True)
class WaitedPods:
    chart: Chart
    node_selectors: tuple[str, ...]
    """Values paths of the ``nodeSelector`` of each pod template Helm waits for (chart default: empty)."""
    source: str


WAITED_PODS: Final[tuple[WaitedPods, ...]] = (
    WaitedPods(
        edge_charts.ENVOY_GATEWAY,
        ("deployment.pod.nodeSelector", "certgen.job.nodeSelector"),
        "envoyproxy/gateway charts/gateway-helm/templates/envoy-gateway-deployment.yaml "
        "(``with .Values.deployment.pod.nodeSelector``), templates/certgen.yaml (a pre-install hook Job, "
        "``with .Values.certgen.job.nodeSelector``), values.tmpl.yaml (both ``{}``) at v1.9.0",
    ),
)
