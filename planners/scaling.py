"""How an inference pool scales: the default per-replica targets of its triggers and the HPA behaviour (how fast
up, how slowly down).

Shared by the stack settings (``autoscaling``, whose defaults these are) and the ScaledObject renderer
(``inference_platform.components.autoscaling.scaled_object``). Pure, no Pulumi.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

DEFAULT_TARGET_REQUESTS = 48.0
DEFAULT_KV_TARGET = 0.85
DEFAULT_QUEUE_RATIO_TARGET = 1.0
"""NVIDIA's tutorial: AverageValue 1000m of triton:queue_compute:ratio."""


@dataclass(frozen=True, kw_only=True)
class Behaviour:
    """HPA ``behavior``: up fast, down slowly."""

    scale_up_stabilization_seconds: int = 0
    """Default 0: act on the first high reading."""
    scale_up_percent: int = 100
    """Default 100: at most double per period..."""
    scale_up_pods: int = 4
    """Default 4: ...or add 4 pods, whichever is more."""
    scale_up_period_seconds: int = 60
    scale_down_stabilization_seconds: int = 3600
    """Default 3600: the highest recommendation of the last hour wins. Must exceed a model load
    (inference.probes.startupSeconds), or a dip would drop a replica that takes minutes to come back."""
    scale_down_pods: int = 1
    """Default 1 pod..."""
    scale_down_period_seconds: int = 600
    """Default 600: ...per 10 minutes."""

    def spec(self) -> dict[str, Any]:
        return {
            "scaleUp": {
                "stabilizationWindowSeconds": self.scale_up_stabilization_seconds,
                "selectPolicy": "Max",
                "policies": [
                    {"type": "Percent", "value": self.scale_up_percent, "periodSeconds": self.scale_up_period_seconds},
                    {"type": "Pods", "value": self.scale_up_pods, "periodSeconds": self.scale_up_period_seconds},
                ],
            },
            "scaleDown": {
                "stabilizationWindowSeconds": self.scale_down_stabilization_seconds,
                "selectPolicy": "Min",
                "policies": [
                    {"type": "Pods", "value": self.scale_down_pods, "periodSeconds": self.scale_down_period_seconds}
                ],
            },
        }
