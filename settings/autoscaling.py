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
from inference_platform.settings.capacity import CapacityBounds, CapacitySettings, plan_for
from inference_platform.settings.node_pools import cluster_zones
from inference_platform.settings.replica_bounds import serving_slots
from inference_platform.settings.serving import ServingSettings

DEFAULT_TARGET_BATCH_SHARE = 0.75
"""targetRequestsPerReplica where nothing can be derived (no rollout to model): this share of serving.maxBatchSize.
Otherwise it is derived from the SLO, the replica's capacity and the scale-up time (planners/scaling.py)."""
QUEUE_RATIO_MEASURED = (
    "got queueRatio; Triton's queue/compute ratio does not follow the load of the LLM-API model (decoupled: "
    "execute() hands every request to the LLM API at once, which queues it itself): measured on the local stack it "
    "stayed at 0.2-0.3 with 40 requests waiting and the TTFT p95 SLO missed (make bench BENCH_ARGS=signals; "
    'docs/configuration.md "Which signal"): use requests'
)
DEFAULT_FAILURE_THRESHOLD = 3
"""fallback.failureThreshold: KEDA counts consecutive failed reads of one trigger and routes around it on the next
(failures > threshold, kedacore/keda v2.20.2 pkg/fallback/fallback.go); 3 at a 15 s polling interval is under a
minute of a frozen composite metric."""
MAX_FAILURE_THRESHOLD = 20
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


class FallbackSettings(Section):
    failure_threshold: int = Field(default=DEFAULT_FAILURE_THRESHOLD, ge=0, le=MAX_FAILURE_THRESHOLD)
    """Default 3, in [0, 20]. Consecutive failed reads after which KEDA treats a trigger as missing (its value nil
    in the formula) instead of failing the whole composite metric: the queue trigger then means "no backfill", a
    demand trigger gives way to the other, and with every demand trigger missing the rollout holds
    ``replicas``. Until then the HPA gets no metric and holds the replica count."""
    replicas: int | None = Field(default=None, ge=1, le=1000)
    """Default the planned replicas (inference.replicas, else the capacity plan's day floor). What the rollout runs
    while every demand trigger is missing, within the bounds in force (the night's at night)."""


class AutoscalingSettings(Section):
    key: ClassVar[str] = "autoscaling"

    enabled: bool = True
    """Default ``true``: a KEDA ScaledObject owns the replica count once the rollout exists
    (inference.replicas is then only the first count)."""
    signal: Literal["requests", "queueRatio"] = "requests"
    """Default ``requests``: requests the LLM step holds (active + waiting) per replica, the signal that crosses its
    target first before the TTFT SLO is missed (make bench BENCH_ARGS=signals). ``queueRatio``: NVIDIA's
    queue/compute ratio, refused on TensorRT-LLM (it does not follow the LLM API's own queue, measured); Neuron only.
    KV-cache use is a second trigger on TensorRT-LLM either way."""
    min_replicas: int | None = Field(default=None, ge=0, le=1000)
    """Default inference.replicas; production at least 2. The day floor."""
    max_replicas: int | None = Field(default=None, ge=1, le=1000)
    """Default: the replicas the serving pool holds at its maxSize. The day ceiling; x the accelerators
    per replica it must fit the pool at maxSize."""
    target_requests_per_replica: float | None = Field(
        default=None, ge=limits.KEDA_THRESHOLD_MIN, le=limits.KEDA_THRESHOLD_MAX
    )
    """Default derived: floor(what a replica holds within the SLO / (1 + the load's growth during one scale-up at
    rampPercentPerHour)) (planners/scaling.py). In-flight requests one replica should carry. A hand-set value is
    validated against the same derivation and flagged in the plan when it differs."""
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
    fallback: FallbackSettings = Field(default_factory=FallbackSettings)
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

    def target_requests(self, max_batch_size: int, derived: float | None = None) -> float:
        """The explicit target, else the derived one: floor(what a replica holds within the SLO / (1 + the growth
        during one scale-up at rampPercentPerHour)), never below 1 (planners/scaling.py ``derive``). Where nothing
        can be derived (no rollout to model), DEFAULT_TARGET_BATCH_SHARE x maxBatchSize, and the plan says so."""
        if self.target_requests_per_replica is not None:
            return self.target_requests_per_replica
        if derived is None:
            return max(1, math.floor(DEFAULT_TARGET_BATCH_SHARE * max_batch_size))
        return max(1, math.floor(derived + 1e-9))

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
        region = ctx.region.name if ctx.region else None
        out = [
            Problem(key, message)
            for key, message in cold_start_settings.slo_problems(ctx.sections, region, autoscaled=self.enabled)
        ]
        if not self.enabled:
            return out
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
        serving = ctx.sections.get("serving")
        if self.signal == "queueRatio" and getattr(serving, "backend", None) == "tensorrtllm":
            out.append(Problem("autoscaling.signal", QUEUE_RATIO_MEASURED))
        out += self._ramp_problems(ctx)
        blind = self.fallback.replicas
        if blind is not None and high is not None and blind > high:
            out.append(Problem("autoscaling.fallback.replicas", f"got {blind}; above maxReplicas ({high}): the rollout "
                               "runs it within the day bounds, so it can never be reached"))  # fmt: skip
        if blind is not None and low is not None and blind < low:
            out.append(Problem("autoscaling.fallback.replicas", f"got {blind}; below minReplicas ({low}): the day "
                               "floor holds anyway"))  # fmt: skip
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
        return [Problem(key, message) for key, message in found] + self._night_capacity_problems(plan)

    def _night_capacity_problems(self, plan: CapacityBounds | None) -> list[Problem]:
        """A night ceiling below the night's planned load contradicts capacity.nightFraction: every night would miss
        the SLO. The night ceiling is ceil(day ceiling x night.fraction) (planners/night_schedule.py)."""
        night = self.night.schedule()
        if night is None or not night.lower_ceiling or plan is None:
            return []
        p = plan.plan
        ceiling = self.max_replicas if self.max_replicas is not None else plan.hpa_max_replicas
        at_night = night.night_value(ceiling)
        rate = p.option.tokens_per_s_per_replica
        need = math.ceil(round(p.demand.night_output_tps / rate, 9))
        if at_night >= need:
            return []
        return [
            Problem(
                "autoscaling.night.fraction",
                f"got {night.fraction:g}; the night ceiling ceil({ceiling} x {night.fraction:g}) = {at_night} replica(s) "
                f"carries {at_night * rate:,.0f} output tokens/s within the SLO, below the night's planned "
                f"{p.demand.night_output_tps:,.0f} (capacity.nightFraction {p.demand.night_fraction:g} of the day): raise "
                f"it to at least {need / ceiling:.2f}, set lowerCeiling false, or lower capacity.nightFraction",
            )
        ]

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
