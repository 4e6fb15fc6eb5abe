"""Observability (``inference:observability``): the metrics pipeline (kube-prometheus-stack from its
pinned chart), the platform's recording rules and alerts as code, and Grafana dashboards as code.

Rules, dashboards and PromQL are pure (``rules``, ``dashboards``, ``promql``) and tested with the real
promtool and a real Prometheus; ``MonitoringStack`` installs them. This module is the area's public
surface; the modules beside it hold the pieces.
"""

from components.observability.monitoring_stack import Monitor, MonitoringStack, MonitoringStackArgs
from components.observability.promql import Scope
from components.observability.rules import AlertThresholds, RuleSet, rule_groups

__all__ = ["AlertThresholds", "Monitor", "MonitoringStack", "MonitoringStackArgs", "RuleSet", "Scope", "rule_groups"]
