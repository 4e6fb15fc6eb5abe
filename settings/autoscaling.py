"""``inference-platform:autoscaling``: how the serving replicas follow the load, day and night.

KEDA scales the rollout (inference_platform.components.autoscaling) on the LLM's own signals, never on accelerator
utilisation. Checks that need other sections run here: the ceiling must fit the serving pool at its
maxSize, and scale-down must wait longer than a model load (inference.probes.startupSeconds).
"""

from __future__ import annotations

import math
import re
from dataclasses import replace
from datetime import time
from typing import ClassVar, Literal

from pydantic import Field, field_validator

from inference_platform.catalog import downstream_limits as limits
from inference_platform.planners.night_schedule import DEFAULT_NIGHT_FRACTION, DEFAULT_TIMEZONE, NightSchedule
from inference_platform.planners.scaling import (
    DEFAULT_KV_TARGET,
    DEFAULT_QUEUE_RATIO_TARGET,
    Behaviour,
)
from inference_platform.settings import cold_start as cold_start_settings
from inference_platform.settings.base import CheckContext, Problem, Section
from inference_platform.settings.capacity import CapacitySettings, plan_for
from inference_platform.settings.node_pools import cluster_zones
from inference_platform.settings.replica_bounds import serving_slots
from inference_platform.settings.serving import ServingSettings

DEFAULT_TARGET_BATCH_SHARE = 0.75
"""targetRequestsPerReplica defaults to this share of serving.maxBatchSize: scale out before the
in-flight batch is full and requests start waiting."""
MAX_HPA_WINDOW_SECONDS = limits.HPA_WINDOW_SECONDS_MAX
"""The HPA API's limit on stabilizationWindowSeconds."""
MAX_HPA_PERIOD_SECONDS = limits.HPA_PERIOD_SECONDS_MAX
"""The HPA API's limit on a scaling policy's periodSeconds."""
PRODUCTION_MIN_REPLICAS = 2
DEFAULT_RAMP_PERCENT_PER_HOUR = 100.0
"""An assumption, not a measurement: the load may double within an hour (e.g. the night floor at 50 % back
to the day in an hour). Set the stack's own from its traffic."""
_CLOCK = re.compile(r"^([01][0-9]|2[0-3]):([0-5][0-9])$")
_DEFAULT_BEHAVIOUR = Behaviour()


class ScaleUpSettings(Section):
    stabilization_seconds: int = Field(
        default=_DEFAULT_BEHAVIOUR.scale_up_stabilization_seconds, ge=0, le=MAX_HPA_WINDOW_SECONDS
    )
    """Default 0: act on the first high reading."""
    percent: int = Field(default=_DEFAULT_BEHAVIOUR.scale_up_percent, ge=1, le=1000)
    """Default 100: at most double the replicas per period..."""
    pods: int = Field(default=_DEFAULT_BEHAVIOUR.scale_up_pods, ge=1, le=1000)
    """Default 4: ...or add this many, whichever is more."""
    period_seconds: int = Field(default=_DEFAULT_BEHAVIOUR.scale_up_period_seconds, ge=1, le=MAX_HPA_PERIOD_SECONDS)
    """Default 60."""


class ScaleDownSettings(Section):
    stabilization_seconds: int = Field(
        default=_DEFAULT_BEHAVIOUR.scale_down_stabilization_seconds, ge=0, le=MAX_HPA_WINDOW_SECONDS
    )
    """Default 3600 (the HPA's maximum). The highest recommendation of this window wins; at least
    inference.probes.startupSeconds, or a short dip drops a replica that takes a model load to return."""
    pods: int = Field(default=_DEFAULT_BEHAVIOUR.scale_down_pods, ge=1, le=1000)
    """Default 1 replica..."""
    period_seconds: int = Field(default=_DEFAULT_BEHAVIOUR.scale_down_period_seconds, ge=1, le=MAX_HPA_PERIOD_SECONDS)
    """Default 600: ...per 10 minutes."""


class NightSettings(Section):
    enabled: bool = True
    """Default ``true``. Lower the bounds at night (the reference design: to about 50%)."""
    timezone: str = DEFAULT_TIMEZONE
    """Default ``UTC``. IANA timezone of the window (``Europe/Paris``, ``America/New_York``)."""
    start: str = "22:00"
    """Default ``22:00`` (HH:MM). The night floor applies from here."""
    end: str = "06:00"
    """Default ``06:00`` (HH:MM). The day floor returns here: put it a model load ahead of the morning ramp."""
    fraction: float = Field(default=DEFAULT_NIGHT_FRACTION, gt=0, le=1)
    """Default 0.5, in (0, 1]. Night floor (and ceiling) = ceil(day value x fraction)."""
    lower_ceiling: bool = True
    """Default ``true``: the ceiling drops at night too. ``false`` lowers the floor only."""

    @field_validator("start", "end")
    @classmethod
    def _clock(cls, value: str) -> str:
        if not _CLOCK.match(value):
            raise ValueError("expected a time of day HH:MM such as 22:00")
        return value

    def schedule(self) -> NightSchedule | None:
        if not self.enabled:
            return None
        return NightSchedule(
            timezone=self.timezone,
            start=_time(self.start),
            end=_time(self.end),
            fraction=self.fraction,
            lower_ceiling=self.lower_ceiling,
        )


class AutoscalingSettings(Section):
    key: ClassVar[str] = "autoscaling"

    enabled: bool = True
    """Default ``true``: a KEDA ScaledObject owns the replica count once the rollout exists
    (inference.replicas is then only the first count)."""
    signal: Literal["requests", "queueRatio"] = "requests"
    """Default ``requests``: requests the LLM step holds (active + waiting) per replica. ``queueRatio``:
    NVIDIA's queue/compute ratio. KV-cache use is a second trigger on TensorRT-LLM either way."""
    min_replicas: int | None = Field(default=None, ge=0, le=1000)
    """Default inference.replicas; production at least 2. The day floor."""
    max_replicas: int | None = Field(default=None, ge=1, le=1000)
    """Default: the replicas the serving pool holds at its maxSize. The day ceiling; x the accelerators
    per replica it must fit the pool at maxSize."""
    target_requests_per_replica: float | None = Field(
        default=None, ge=limits.KEDA_THRESHOLD_MIN, le=limits.KEDA_THRESHOLD_MAX
    )
    """Default 0.75 x serving.maxBatchSize, lower when the stack's cold start at rampPercentPerHour needs more
    headroom (planners/cold_start.py). In-flight requests one replica should carry."""
    kv_cache_target: float = Field(default=DEFAULT_KV_TARGET, ge=limits.KEDA_THRESHOLD_MIN, le=1)
    """Default 0.85. KV-cache utilisation per replica to scale at (TensorRT-LLM only)."""
    queue_ratio_target: float = Field(
        default=DEFAULT_QUEUE_RATIO_TARGET, ge=limits.KEDA_THRESHOLD_MIN, le=limits.KEDA_THRESHOLD_MAX
    )
    """Default 1.0 (NVIDIA's tutorial: 1000m) of triton:queue_compute:ratio per replica."""
    polling_interval_seconds: int = Field(default=15, ge=5, le=300)
    """Default 15. How often KEDA evaluates the queries."""
    scale_up: ScaleUpSettings = Field(default_factory=ScaleUpSettings)
    scale_down: ScaleDownSettings = Field(default_factory=ScaleDownSettings)
    night: NightSettings = Field(default_factory=NightSettings)
    ramp_percent_per_hour: float = Field(default=DEFAULT_RAMP_PERCENT_PER_HOUR, ge=0, le=10000)
    """Default 100, in [0, 10000] (0: no check). The fastest planned rise of the load, in % of itself per
    hour (100: the load may double within an hour, e.g. the morning ramp from the night floor). During one
    cold start (planners/cold_start.py) the running replicas must carry that rise within the SLO
    (a replica holds the least of maxBatchSize, its KV cache and the largest batch within the TTFT/ITL SLO):
    the target (explicit or derived), the KV trigger and the day ceiling (against the capacity plan's peak)
    must leave the headroom it needs, and the queueRatio signal (which fires with replicas full) is refused
    unless the KV trigger fires early enough; each refused naming its key
    (inference_platform.settings.cold_start.ramp_problems)."""

    def bounds(self, replicas: int, slots: int) -> tuple[int, int]:
        """(day floor, day ceiling): the explicit values, else inference.replicas and the pool's slots."""
        low = self.min_replicas if self.min_replicas is not None else replicas
        high = self.max_replicas if self.max_replicas is not None else max(slots, low, 1)
        return low, high

    def schedule(self, production: bool) -> NightSchedule | None:
        night = self.night.schedule()
        if night is None:
            return None
        # Production keeps two replicas at night too: one zone or node may fail at any hour.
        return replace(night, keep_at_least=PRODUCTION_MIN_REPLICAS if production else 0)

    def target_requests(self, max_batch_size: int, max_share: float | None = None) -> float:
        """The explicit target, else 0.75 x maxBatchSize, lowered to ``max_share`` of it when the stack's cold
        start at rampPercentPerHour needs more headroom (inference_platform.settings.cold_start.max_share)."""
        if self.target_requests_per_replica is not None:
            return self.target_requests_per_replica
        share = DEFAULT_TARGET_BATCH_SHARE if max_share is None else min(DEFAULT_TARGET_BATCH_SHARE, max_share)
        return max(1, math.floor(share * max_batch_size))

    def behaviour(self) -> Behaviour:
        return Behaviour(
            scale_up_stabilization_seconds=self.scale_up.stabilization_seconds,
            scale_up_percent=self.scale_up.percent,
            scale_up_pods=self.scale_up.pods,
            scale_up_period_seconds=self.scale_up.period_seconds,
            scale_down_stabilization_seconds=self.scale_down.stabilization_seconds,
            scale_down_pods=self.scale_down.pods,
            scale_down_period_seconds=self.scale_down.period_seconds,
        )

    def problems(self, ctx: CheckContext) -> list[Problem]:
        if not self.enabled:
            return []
        out = []
        low, high = self.min_replicas, self.max_replicas
        if low is not None and high is not None and low > high:
            out.append(Problem("autoscaling.minReplicas", f"got {low}; above maxReplicas ({high})"))
        if ctx.production and low is not None and low < PRODUCTION_MIN_REPLICAS:
            out.append(
                Problem(
                    "autoscaling.minReplicas", f"got {low}; production serves from at least {PRODUCTION_MIN_REPLICAS}"
                )
            )
        out += self._night_problems()
        out += self._ramp_problems(ctx)
        inference = ctx.sections.get("inference")
        startup = getattr(getattr(inference, "probes", None), "startup_seconds", None)
        if startup is not None and self.scale_down.stabilization_seconds < startup:
            out.append(
                Problem(
                    "autoscaling.scaleDown.stabilizationSeconds",
                    f"got {self.scale_down.stabilization_seconds}; shorter than a model load "
                    f"(inference.probes.startupSeconds {startup}): a dip would drop a replica that takes that long "
                    "to come back",
                )
            )
        slots = serving_slots(ctx)
        serving = ctx.sections.get("serving")
        if slots is not None and high is not None and high > slots and isinstance(serving, ServingSettings):
            out.append(
                Problem(
                    "autoscaling.maxReplicas",
                    f"got {high}; x {serving.world_size} accelerator(s) per replica it does not fit "
                    f"serving.nodePool {serving.node_pool!r} at nodePools.{serving.node_pool}.maxSize, which holds "
                    f"{slots} replica(s)",
                )
            )
        elif (
            high is None
            and slots is not None
            and low is not None
            and low > slots
            and isinstance(serving, ServingSettings)
        ):
            # Without its own maxReplicas the ceiling is the pool's (or the plan's): a floor above what the pool
            # holds keeps replicas Pending for ever, and the HPA refuses minReplicas above maxReplicas.
            out.append(
                Problem(
                    "autoscaling.minReplicas",
                    f"got {low}; x {serving.world_size} accelerator(s) per replica the serving pool holds only "
                    f"{slots} replica(s) (serving.nodePool {serving.node_pool!r} at nodePools.{serving.node_pool}"
                    ".maxSize): the rest would stay Pending; lower it or raise the pool's maxSize",
                )
            )
        return out

    def _ramp_problems(self, ctx: CheckContext) -> list[Problem]:
        """The bounds against the cold start at rampPercentPerHour (inference_platform.settings.cold_start.ramp_problems),
        with the ceiling the rollout gets when maxReplicas is unset: the capacity plan's, else the pool's."""
        if self.ramp_percent_per_hour <= 0:
            return []
        region = ctx.region.name if ctx.region else None
        cap = ctx.sections.get("capacity")
        plan = None
        if isinstance(cap, CapacitySettings) and cap.enabled and region is not None:
            plan = plan_for(cap, ctx.sections, region, cluster_zones(ctx), production=ctx.production).bounds
        found = cold_start_settings.ramp_problems(
            self, ctx.sections, region=region, slots=serving_slots(ctx), plan=plan
        )
        return [Problem(key, message) for key, message in found]

    def _night_problems(self) -> list[Problem]:
        night = self.night
        if not night.enabled:
            return []
        out = []
        if night.start == night.end:
            out.append(
                Problem(
                    "autoscaling.night.end",
                    f"got {night.end!r}, the same as start: the night would be empty or the whole day",
                )
            )
        schedule = NightSchedule(timezone=night.timezone, fraction=night.fraction)
        out += [Problem(f"autoscaling.night.{field}", message) for field, message in schedule.problems()]
        return out


def _time(value: str) -> time:
    hours, minutes = value.split(":")
    return time(int(hours), int(minutes))
