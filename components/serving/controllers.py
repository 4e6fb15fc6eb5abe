"""Cluster-wide pieces the inference rollout needs, installed only when it needs them.

- The LeaderWorkerSet controller (CRD, webhook, manager) for multi-node replicas, on system nodes.
- The Prometheus Operator CRDs, so the rollout's ServiceMonitor is a known kind before an
  observability stack (and its Prometheus) exists; that stack must then skip its own CRD install.
Custom resources of these kinds depend on ``releases``: the CRDs exist before they apply.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from inference_platform.catalog import serving_charts
from inference_platform.catalog.charts import Chart
from inference_platform.components.common.errors import raise_if

LWS_NAMESPACE = "lws-system"
CRDS_NAMESPACE = "kube-system"


@dataclass(frozen=True, kw_only=True)
class ServingControllersArgs:
    """What the serving controllers need: the cluster's provider, which controllers and their pinned charts."""

    k8s_provider: pulumi.ProviderResource
    """Required. The cluster's Kubernetes provider."""
    leader_worker_set: bool = False
    """Default ``False``. Install the LeaderWorkerSet controller (multi-node replicas)."""
    prometheus_crds: bool = False
    """Default ``False``. Install the Prometheus Operator CRDs (ServiceMonitor and friends)."""
    system_node_selector: Mapping[str, str] = field(default_factory=lambda: {"node-role": "system"})
    """Default ``node-role=system``: where the LeaderWorkerSet manager runs."""
    leader_worker_set_chart: Chart = serving_charts.LEADER_WORKER_SET
    """Default: lws 0.10.0 (catalog/serving_charts.py)."""
    prometheus_crds_chart: Chart = serving_charts.PROMETHEUS_OPERATOR_CRDS
    """Default: prometheus-operator-crds 31.0.1."""


class ServingControllers(pulumi.ComponentResource):
    """Cluster-wide pieces the inference rollout needs, installed only when it needs them (LeaderWorkerSet,
    Prometheus CRDs)."""

    releases: dict[str, k8s.helm.v3.Release]

    def __init__(self, name: str, args: ServingControllersArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        raise_if(
            "ServingControllers",
            [] if args.leader_worker_set or args.prometheus_crds else ["nothing to install"],
        )
        super().__init__("inference:serving:ServingControllers", name, None, opts)
        child = pulumi.ResourceOptions(parent=self, provider=args.k8s_provider)
        self.releases = {}
        if args.leader_worker_set:
            self.releases["leader_worker_set"] = _release(
                f"{name}-lws",
                "lws",
                args.leader_worker_set_chart,
                LWS_NAMESPACE,
                leader_worker_set_values(args.system_node_selector),
                child,
            )
        if args.prometheus_crds:
            self.releases["prometheus_crds"] = _release(
                f"{name}-prometheus-crds",
                "prometheus-operator-crds",
                args.prometheus_crds_chart,
                CRDS_NAMESPACE,
                {},
                child,
            )
        self.register_outputs({"releases": {key: release.name for key, release in self.releases.items()}})


def leader_worker_set_values(system: Mapping[str, str]) -> dict[str, Any]:
    return {
        "image": {"manager": {"tag": serving_charts.LEADER_WORKER_SET_IMAGE_TAG, "pullPolicy": "IfNotPresent"}},
        "nodeSelector": dict(system),
        # The chart asks for a whole core; the manager reconciles a handful of groups here.
        "resources": {"requests": {"cpu": "250m", "memory": "512Mi"}, "limits": {"memory": "1Gi"}},
    }


def _release(
    name: str, release_name: str, chart: Chart, namespace: str, values: dict[str, Any], opts: pulumi.ResourceOptions
) -> k8s.helm.v3.Release:
    return k8s.helm.v3.Release(
        name,
        name=release_name,
        **chart.release_source(),
        namespace=namespace,
        create_namespace=namespace != CRDS_NAMESPACE,
        values=values,
        opts=opts,
    )
