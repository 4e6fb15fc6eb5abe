"""KEDA, from its pinned chart, on the system nodes: the operator that turns ScaledObjects into HPAs.

Its metrics server serves ``external.metrics.k8s.io`` to the HPA controller; the operator queries
Prometheus for every trigger each polling interval.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from inference_platform.catalog import observability_charts
from inference_platform.catalog.charts import Chart
from inference_platform.components.common.errors import raise_if

DEFAULT_NAMESPACE = "keda"


@dataclass(frozen=True, kw_only=True)
class KedaArgs:
    """What KEDA's install needs: the cluster's provider, its namespace, the system nodes' selector and the pinned
    chart."""

    k8s_provider: pulumi.ProviderResource
    """Required. The cluster's Kubernetes provider."""
    namespace: str = DEFAULT_NAMESPACE
    """Default ``keda``."""
    system_node_selector: Mapping[str, str] = field(default_factory=lambda: {"node-role": "system"})
    """Default ``node-role=system``: KEDA never takes accelerator capacity."""
    chart: Chart = observability_charts.KEDA
    """Default: keda 2.20.2 (catalog/observability_charts.py)."""


class Keda(pulumi.ComponentResource):
    """KEDA from its pinned chart on the system nodes: the operator that turns ScaledObjects into HPAs."""

    release: k8s.helm.v3.Release
    namespace: str

    def __init__(self, name: str, args: KedaArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        raise_if("Keda", [] if args.system_node_selector else ["system_node_selector is empty"])
        super().__init__("inference:autoscaling:Keda", name, None, opts)
        self.namespace = args.namespace
        self.release = k8s.helm.v3.Release(
            f"{name}-release",
            name="keda",
            **args.chart.release_source(),
            namespace=args.namespace,
            create_namespace=True,
            values=keda_values(args.system_node_selector),
            opts=pulumi.ResourceOptions(parent=self, provider=args.k8s_provider),
        )
        self.register_outputs({"release": self.release.name, "namespace": self.namespace})


def keda_values(system: Mapping[str, str]) -> dict[str, Any]:
    selector = dict(system)
    return {
        "nodeSelector": selector,
        # The operator's Prometheus metrics, for its own ServiceMonitor (scaler errors, latency).
        "prometheus": {
            "operator": {"enabled": True, "serviceMonitor": {"enabled": False}},
            "metricServer": {"enabled": True, "serviceMonitor": {"enabled": False}},
        },
        "resources": {
            "operator": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"memory": "512Mi"}},
            "metricServer": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"memory": "512Mi"}},
            "webhooks": {"requests": {"cpu": "50m", "memory": "64Mi"}, "limits": {"memory": "256Mi"}},
        },
    }
