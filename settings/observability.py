"""``inference-platform:observability``: the metrics pipeline, its alerts and dashboards.

kube-prometheus-stack (Prometheus, Alertmanager, Grafana, node-exporter, kube-state-metrics) with the
platform's recording rules, alerts and dashboards (inference_platform.components.observability). SLO thresholds come
from serving.slo (TTFT p95) and verification.slo (inter-token p95); the rest are here.
"""

from __future__ import annotations

import re
from typing import ClassVar

from pydantic import Field, field_validator

from inference_platform.catalog.alert_thresholds import AlertThresholds
from inference_platform.settings.base import CheckContext, Problem, Section

_RETENTION = re.compile(r"^[1-9][0-9]*(h|d|w|y)$")
_FOR = re.compile(r"^[1-9][0-9]*(m|h)$")
_DEFAULTS = AlertThresholds()


class AlertSettings(Section):
    utilisation_floor: float = Field(default=_DEFAULTS.utilisation_floor, gt=0, le=1)
    """Default 0.7. Accelerator utilisation below this while above the minimum replicas is waste."""
    waste_for: str = _DEFAULTS.waste_for
    """Default ``30m``. How long the waste must last before the alert."""
    kv_cache_ratio: float = Field(default=_DEFAULTS.kv_cache_ratio, gt=0, le=1)
    """Default 0.95. KV-cache blocks in use per replica that warn."""
    waiting_per_replica: float = Field(default=_DEFAULTS.waiting_per_replica, gt=0)
    """Default 8. Waiting requests per replica (for 10 min) that warn."""
    queue_seconds: float = Field(default=_DEFAULTS.queue_seconds, gt=0)
    """Default 1. Mean seconds in Triton's queue (for 10 min) that warn."""
    edge_5xx_ratio: float = Field(default=_DEFAULTS.edge_5xx_ratio, gt=0, le=1, alias="edge5xxRatio")
    """Default 0.05. Share of edge requests failing with 5xx that pages."""
    edge_429_ratio: float = Field(default=_DEFAULTS.edge_429_ratio, gt=0, le=1)
    """Default 0.2. Share of edge requests rate-limited that warns."""

    @field_validator("waste_for")
    @classmethod
    def _for(cls, value: str) -> str:
        if not _FOR.match(value):
            raise ValueError("expected minutes or hours such as 30m or 1h")
        return value


class ObservabilitySettings(Section):
    key: ClassVar[str] = "observability"

    enabled: bool = True
    """Default ``true``. The metrics pipeline with the platform's rules and dashboards (with a cluster)."""
    retention: str = "15d"
    """Default ``15d``. How long Prometheus keeps samples (``<n>h``, ``d``, ``w`` or ``y``)."""
    prometheus_storage_gib: int = Field(default=100, ge=10, le=16384)
    """Default 100. Prometheus' encrypted gp3 volume; samples beyond 90% of it are dropped first."""
    alertmanager_storage_gib: int = Field(default=10, ge=1, le=1000)
    """Default 10. Alertmanager's encrypted gp3 volume."""
    alerts: AlertSettings = Field(default_factory=AlertSettings)

    @field_validator("retention")
    @classmethod
    def _retention(cls, value: str) -> str:
        if not _RETENTION.match(value):
            raise ValueError("expected a duration such as 15d, 2w or 720h")
        return value

    def problems(self, ctx: CheckContext) -> list[Problem]:
        autoscaling = ctx.sections.get("autoscaling")
        if not self.enabled and getattr(autoscaling, "enabled", False):
            return [
                Problem(
                    "observability.enabled",
                    "false while autoscaling.enabled is true: KEDA scales on this Prometheus' queries",
                )
            ]
        return []
