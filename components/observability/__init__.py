"""Observability (``inference:observability``): the metrics pipeline (kube-prometheus-stack from its
pinned chart), the platform's recording rules and alerts as code, and Grafana dashboards as code.

Rules, dashboards and PromQL are pure (``rules``, ``dashboards``, ``promql``) and tested with the real
promtool and a real Prometheus; ``MonitoringStack`` installs them. This module is the area's public
surface; the modules beside it hold the pieces.
"""

from typing import TYPE_CHECKING

from inference_platform.components.common.exports import lazy_exports

if TYPE_CHECKING:
    from inference_platform.catalog.alert_thresholds import AlertThresholds
    from inference_platform.components.observability.monitoring_stack import (
        Monitor,
        MonitoringStack,
        MonitoringStackArgs,
    )
    from inference_platform.components.observability.promql import Scope
    from inference_platform.components.observability.rules import RuleSet, rule_groups
    from inference_platform.components.observability.token_rules import TokenMeter

__all__ = [
    "AlertThresholds",
    "Monitor",
    "MonitoringStack",
    "MonitoringStackArgs",
    "RuleSet",
    "Scope",
    "TokenMeter",
    "rule_groups",
]

# Imported on first use (components/common/exports.py): importing this package loads no Pulumi module.
_EXPORTS = {
    "token_rules": ("TokenMeter",),
    "monitoring_stack": ("Monitor", "MonitoringStack", "MonitoringStackArgs"),
    "promql": ("Scope",),
    "rules": ("RuleSet", "rule_groups"),
    "inference_platform.catalog.alert_thresholds": ("AlertThresholds",),
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
