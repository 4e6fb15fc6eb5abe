"""What the platform's alerts count as bad: the thresholds of one workload's rules, with their defaults.

Shared by the stack settings (``observability.alerts``, whose defaults these are) and the rule renderer
(``inference_platform.components.observability.rules``), so the two cannot disagree. Plain data, no Pulumi.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True)
class AlertThresholds:
    """What counts as bad; the program derives most of these from the stack's settings."""

    ttft_p95_seconds: float = 2.0
    """Default 2.0 (serving.slo.ttftP95Ms / 1000). p95 time to first token above this, for 10 min, warns."""
    itl_seconds: float = 0.1
    """Default 0.1. Inter-token latency SLO (p95), against the OpenAI server's inter-token histogram."""
    utilisation_floor: float = 0.7
    """Default 0.7. Accelerator utilisation below this for ``waste_for`` while the workload runs
    above its minimum replicas is waste (the reference design asks for >= 70%)."""
    waste_for: str = "30m"
    """Default ``30m``."""
    kv_cache_ratio: float = 0.95
    """Default 0.95. KV-cache blocks in use per replica above this for 5 min warns (evictions follow)."""
    waiting_per_replica: float = 8.0
    """Default 8. Waiting requests per replica above this for 10 min: the autoscaler is not keeping up."""
    queue_seconds: float = 1.0
    """Default 1.0. Mean time a request waits in Triton's queue above this for 10 min warns."""
    not_ready_for: str = "35m"
    """Default ``35m``: longer than the startup probe's budget (inference.probes.startupSeconds), so a
    model load in progress never pages."""
    edge_5xx_ratio: float = 0.05
    """Default 0.05. Share of edge requests answered 5xx above this for 10 min pages."""
    edge_429_ratio: float = 0.2
    """Default 0.2. Share of edge requests rate-limited (429) above this for 15 min warns."""

    def problems(self) -> list[str]:
        out = []
        for name in ("ttft_p95_seconds", "itl_seconds", "waiting_per_replica", "queue_seconds"):
            if getattr(self, name) <= 0:
                out.append(f"{name}={getattr(self, name)} must be > 0")
        for name in ("utilisation_floor", "kv_cache_ratio", "edge_5xx_ratio", "edge_429_ratio"):
            if not 0 < getattr(self, name) <= 1:
                out.append(f"{name}={getattr(self, name)} must be in (0, 1]")
        return out
