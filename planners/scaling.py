"""How an inference pool scales: the per-replica targets of its triggers, derived from the SLO, the replica's capacity
and the cold start, and the HPA behaviour (how fast up, how slowly down).

Shared by the stack settings (``autoscaling``, whose defaults these are) and the ScaledObject renderer
(``inference_platform.components.autoscaling.scaled_object``). Pure, no Pulumi.

The derivation (``derive``), stated once:

1. **What a replica holds within the SLO** (``hold``): the least of ``serving.maxBatchSize``, the sequences its KV
   cache holds at the planned shape, and the largest batch at which the latency model
   (``planners/latency.py``) keeps the median TTFT within ``serving.slo.ttftP50Ms`` (or ``capacity.slo``), the
   95th-percentile TTFT within ``serving.slo.ttftP95Ms`` (``ttft_p95_ms``) and the time per output token within the
   ITL SLO.
2. **How long one scale-up takes** (``planners/cold_start.py``): on a new node, or on a running one when standby
   replicas cover a scale-up period; detection (scrape, KEDA polling, HPA sync) included.
3. **The headroom**: the demand the stack's ramp (``autoscaling.rampPercentPerHour``) adds during that scale-up,
   ``g = ramp x seconds / 3600`` of itself.
4. **The target**: the replicas running must carry the load plus ``g`` within the SLO until the new one serves, so
   the autoscaler acts at ``hold / (1 + g)`` requests in flight per replica.

Which trigger: requests in flight per replica (active + waiting, ``nv_trt_llm_request_metrics``) is the primary
trigger because it crosses its target first, well before the TTFT SLO is missed (measured on the local stack, ``make
bench BENCH_ARGS=signals``: at the dev stack's derived target 13 it crossed at 13 clients, requests waiting at 17,
the TTFT p95 SLO was missed at 37; the queue/compute ratio never moved past 0.3 and KV use stayed under 0.2 with
short prompts; docs/configuration.md "Which signal"). KV-cache use stays a second trigger (long prompts fill the
cache before the request count rises).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

DEFAULT_TARGET_REQUESTS = 48.0
DEFAULT_KV_TARGET = 0.85
DEFAULT_QUEUE_RATIO_TARGET = 1.0
"""NVIDIA's tutorial: AverageValue 1000m of triton:queue_compute:ratio."""
TAIL_PROBABILITY = 0.05
"""The share of requests beyond a 95th percentile."""


def ttft_p95_ms(prefill_s: float, step_s: float, mean_wait_s: float, ttft_scale: float = 1.0) -> float:
    """The 95th-percentile time to first token of a replica whose mean TTFT is ``prefill + step + mean wait``.

    The latency model queues each prefill for the engine's prefill slot as M/D/1 (service time = ``prefill_s``,
    mean wait ``W = rho S / (2 (1 - rho))``), which gives ``rho = 2W / (S + 2W)``. The tail of the wait is taken
    as M/M/1's at that utilisation, ``P(wait > t) = rho exp(-(1 - rho) t / S)``, which bounds M/D/1's (deterministic
    service has the lighter tail), so the 95th percentile is ``S / (1 - rho) ln(rho / 0.05)`` when ``rho > 0.05``
    and 0 below."""
    service = max(prefill_s, 1e-9)
    wait = max(mean_wait_s, 0.0)
    rho = 2 * wait / (service + 2 * wait)
    tail = service / (1 - rho) * math.log(rho / TAIL_PROBABILITY) if rho > TAIL_PROBABILITY else 0.0
    return (prefill_s + step_s + tail) * 1e3 * ttft_scale


@dataclass(frozen=True)
class Step:
    """One line of a derivation: what, the value, and where it comes from."""

    what: str
    value: str
    source: str


@dataclass(frozen=True, kw_only=True)
class Thresholds:
    """The autoscaler's targets and how they were reached (the plan and the PR comment print ``steps``)."""

    hold: int
    """Requests one replica holds within the SLO."""
    hold_limit: str
    """What sets ``hold`` (a key, or "the KV cache")."""
    scale_up_s: float
    scale_up_path: str
    ramp_per_hour: float
    growth: float
    """The headroom: demand growth during one scale-up, as a fraction of the load."""
    derived_target: float
    """``hold / (1 + growth)``: where the autoscaler must act (requests in flight per replica)."""
    target: float
    """What the ScaledObject renders: the hand-set value when there is one, else the derived one (never below 1)."""
    hand_set: bool
    kv_target: float
    steps: tuple[Step, ...] = field(default=())

    @property
    def flag(self) -> str | None:
        """Why a hand-set target differs from the derivation (None when derived or equal)."""
        if not self.hand_set:
            return None
        if self.target > self.derived_target + 1e-9:
            return (f"hand-set targetRequestsPerReplica {self.target:g} is above the derived {self.derived_target:.1f}: "
                    "the SLO is at risk during a scale-up at the stack's ramp")  # fmt: skip
        if self.target < self.derived_target - 1e-9:
            return (f"hand-set targetRequestsPerReplica {self.target:g} is below the derived {self.derived_target:.1f}: "
                    "more replicas than the SLO needs")  # fmt: skip
        return None

    def to_dict(self) -> dict[str, Any]:
        return {
            "hold": self.hold,
            "holdLimit": self.hold_limit,
            "scaleUpSeconds": round(self.scale_up_s),
            "scaleUpPath": self.scale_up_path,
            "rampPercentPerHour": round(self.ramp_per_hour * 100, 3),
            "headroom": round(self.growth, 4),
            "derivedTargetRequests": round(self.derived_target, 2),
            "targetRequests": round(self.target, 2),
            "handSet": self.hand_set,
            "flag": self.flag,
            "kvCacheTarget": self.kv_target,
            "steps": [{"what": s.what, "value": s.value, "source": s.source} for s in self.steps],
        }


def derive(
    *,
    hold: int,
    hold_limit: str,
    hold_steps: tuple[Step, ...],
    scale_up_s: float,
    scale_up_path: str,
    scale_up_source: str,
    ramp_per_hour: float,
    hand_set: float | None,
    kv_target: float,
) -> Thresholds:
    """The targets from what a replica holds, the scale-up time and the ramp (module docstring)."""
    growth = ramp_per_hour * scale_up_s / 3600.0
    derived = hold / (1 + growth)
    target = hand_set if hand_set is not None else max(1.0, float(math.floor(derived)))
    steps = (
        *hold_steps,
        Step("one scale-up", f"{scale_up_s / 60:.1f} min ({scale_up_path})", scale_up_source),
        Step(
            "headroom",
            f"{growth:.1%} = {ramp_per_hour:.0%}/h x {scale_up_s:.0f} s / 3600 s",
            "autoscaling.rampPercentPerHour",
        ),
        Step(
            "derived target",
            f"{derived:.1f} requests per replica = {hold} / (1 + {growth:.3f})",
            "what a replica holds, less the growth during one scale-up",
        ),
        Step(
            "rendered target",
            f"{target:g}" + (" (hand-set)" if hand_set is not None else " (derived, floored)"),
            "autoscaling.targetRequestsPerReplica" if hand_set is not None else "derivation",
        ),
    )
    return Thresholds(hold=hold, hold_limit=hold_limit, scale_up_s=scale_up_s, scale_up_path=scale_up_path,
                      ramp_per_hour=ramp_per_hour, growth=growth, derived_target=derived, target=target,
                      hand_set=hand_set is not None, kv_target=kv_target, steps=steps)  # fmt: skip


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
