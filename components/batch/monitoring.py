"""The lane's rules and dashboard in the stack's Prometheus and Grafana: one PrometheusRule (recording rules and
alerts of ``components.batch.signals``) and the ``inference-batch`` dashboard ConfigMap the Grafana sidecar loads.

The scrapes themselves are PodMonitors of the monitoring stack (``Monitor`` entries the program adds for the
API's and the workers' metrics ports): Prometheus selects every monitor and rule of the cluster.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from inference_platform.components.batch.signals import LaneWatch, rule_groups
from inference_platform.components.observability.dashboards import batch as batch_dashboard
from inference_platform.components.observability.dashboards.panels import to_json

DASHBOARD_LABEL = "grafana_dashboard"
LABELS = {"app.kubernetes.io/part-of": "inference-platform"}
RULE_NAME = "batch-lane-rules"


@dataclass(frozen=True, kw_only=True)
class BatchMonitoringArgs:
    """What the lane's monitoring needs: the cluster's provider, what to watch and the monitoring namespace."""

    k8s_provider: pulumi.ProviderResource
    """Required."""
    watch: LaneWatch
    """Required. The lane's namespace, completion window and alert thresholds."""
    monitoring_namespace: str = "monitoring"
    """Default ``monitoring``: where Grafana's sidecar looks for dashboards."""
    depends_on: Sequence[pulumi.Resource] = ()
    """Default none. The monitoring stack's release (the PrometheusRule CRD) and the lane's namespace."""


class BatchMonitoring(pulumi.ComponentResource):
    """The lane's PrometheusRule (recording rules and alerts) and Grafana dashboard."""

    rule_name: str
    dashboard_name: str

    def __init__(self, name: str, args: BatchMonitoringArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        groups = rule_groups(args.watch)
        super().__init__("inference:batch:BatchMonitoring", name, None, opts)
        k8s_opts = pulumi.ResourceOptions(parent=self, provider=args.k8s_provider, depends_on=list(args.depends_on))
        k8s.apiextensions.CustomResource(
            f"{name}-rules",
            api_version="monitoring.coreos.com/v1",
            kind="PrometheusRule",
            metadata={"name": RULE_NAME, "namespace": args.watch.namespace, "labels": LABELS},
            spec={"groups": groups},
            opts=k8s_opts,
        )
        model = to_json(batch_dashboard.build(args.watch.namespace, args.watch.completion_window_hours))
        stem = batch_dashboard.FILE_NAME.removesuffix(".json")
        k8s.core.v1.ConfigMap(
            f"{name}-dashboard",
            metadata={
                "name": f"dashboard-{stem}",
                "namespace": args.monitoring_namespace,
                "labels": {**LABELS, DASHBOARD_LABEL: "1"},
            },
            data={batch_dashboard.FILE_NAME: json.dumps(model, sort_keys=True)},
            opts=k8s_opts,
        )
        self.rule_name = RULE_NAME
        self.dashboard_name = f"dashboard-{stem}"
        self.register_outputs({"rule_name": self.rule_name, "dashboard_name": self.dashboard_name})
