"""KEDA ScaledObject of one inference workload, as plain typed data, and the replica arithmetic it implies.

Pure (no Pulumi): :func:`scaled_object_spec` is the ``spec`` of a ``keda.sh/v1alpha1`` ScaledObject;
:func:`desired_replicas` is what the HPA KEDA creates will ask for at an instant, from the trigger
values, so tests and the live Prometheus check can evaluate the exact same queries and formula.

Signals (never accelerator utilisation: a GPU is "100% busy" at any batch size, NVIDIA's autoscaling
tutorial and Google's GKE guidance both scale LLM servers on queue or batch size instead):
- ``requests`` (default): requests the LLM step holds, active in the batch + waiting for a slot,
  summed over replicas, against a per-replica target (TensorRT-LLM's ``nv_trt_llm_request_metrics``;
  ``neuron_llm_request_metrics`` on Neuron).
- ``queueRatio``: NVIDIA's ``triton:queue_compute:ratio`` summed over replicas, target 1 per replica.
- ``kv`` (second trigger, TensorRT-LLM only): KV-cache blocks in use over one replica's blocks, i.e.
  how many replicas' worth of KV cache is busy, against a utilisation target (0.85).
Every trigger is an ``AverageValue`` of "replica-equivalents", so desired = ceil(total / target) =
ceil(current x per-replica value / target), the HPA formula.

Scaling survives a failing signal (KEDA v2.20.2, inference_platform.planners.keda): every Prometheus trigger sets
``ignoreNullValues: "false"``, so series that vanish are a failure, never "zero demand"; ``fallback`` with
``behavior: scalingModifiers`` turns a trigger that failed more than ``failureThreshold`` reads in a row into ``nil``
in the formula (any other behaviour would bypass the formula, and with it the night ceiling), and the formula is
nil-safe: one failed demand trigger gives way to the other, both failed leave the rollout at ``blind_replicas``
within the bounds in force, the queue trigger failing means "no backfill" (never "no scaling"), and the day cron
failing counts as day. Until a failure passes the threshold the composite metric errors and the HPA holds.

The night schedule: ``minReplicaCount`` is the NIGHT floor; a cron trigger named ``day`` marks the day
window, and ``advanced.scalingModifiers`` folds the triggers into one metric that is clamped to the day
bounds in the day and to the night bounds at night. The cron trigger alone could only raise the floor
(the HPA takes the max over metrics), never lower the ceiling; the formula does both. The cron
trigger's ``desiredReplicas`` is only a day flag there (2, above the 0 or 1 an inactive cron reports).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from inference_platform.components.batch.scaling import TRIGGER_NAME as BACKFILL_TRIGGER
from inference_platform.components.batch.scaling import QueueSignal, queue_trigger
from inference_platform.components.observability import promql as q
from inference_platform.components.observability.promql import Scope
from inference_platform.planners.keda import HPA_TOLERANCE as HPA_TOLERANCE
from inference_platform.planners.keda import hpa_desired as hpa_desired
from inference_platform.planners.night_schedule import NightSchedule, ReplicaBounds, replica_bounds
from inference_platform.planners.scaling import (
    DEFAULT_KV_TARGET,
    DEFAULT_QUEUE_RATIO_TARGET,
    DEFAULT_TARGET_REQUESTS,
    Behaviour,
)

Signal = Literal["requests", "queueRatio"]
DAY_FLAG = 2
"""desiredReplicas of the ``day`` cron trigger: KEDA reports it in the window, 1 (or 0) outside."""
FORMULA_TARGET = 1.0
"""``scalingModifiers.target``: the formula's value is already a replica count (AverageValue of 1 each). It renders
as ``"1"``: KEDA v2.20.2 takes a fallback as valid only when this parses as an integer > 0 (fallback.go)."""
DEFAULT_FAILURE_THRESHOLD = 3
FALLBACK_BEHAVIOR = "scalingModifiers"
"""The only behaviour that keeps the formula (and its night ceiling) running while a trigger is missing."""
NO_FORMULA_FALLBACK_BEHAVIOR = "currentReplicasIfHigher"
"""Without a formula each trigger is its own metric: a missing one reports max(current, blind) replicas, never fewer."""


@dataclass(frozen=True, kw_only=True)
class ScaleTarget:
    """The workload a ScaledObject scales: its name and kind (Deployment or LeaderWorkerSet)."""

    name: str
    """Required. The Deployment or LeaderWorkerSet."""
    kind: Literal["Deployment", "LeaderWorkerSet"] = "Deployment"
    """Default ``Deployment``. A LeaderWorkerSet scales whole groups through its scale subresource."""

    @property
    def api_version(self) -> str:
        return "apps/v1" if self.kind == "Deployment" else "leaderworkerset.x-k8s.io/v1"


@dataclass(frozen=True, kw_only=True)
class ScalingPolicy:
    """What one workload scales on: its triggers and their targets, replica bounds, night schedule and whose series
    the triggers read."""

    scope: Scope
    """Required. Whose series the triggers read."""
    prometheus_url: str
    """Required. Prometheus KEDA queries (the in-cluster service URL)."""
    min_replicas: int = 1
    """Default 1. The DAY floor (the night floor is ceil(min x fraction))."""
    max_replicas: int = 2
    """Default 2. The DAY ceiling."""
    signal: Signal = "requests"
    """Default ``requests``; ``queueRatio`` for NVIDIA's queue/compute ratio."""
    target_requests_per_replica: float = DEFAULT_TARGET_REQUESTS
    """Default 48 (0.75 x the default max batch of 64): in-flight requests one replica should hold."""
    kv_cache_target: float | None = DEFAULT_KV_TARGET
    """Default 0.85. KV-cache utilisation per replica to aim at; ``None`` drops the trigger (Neuron)."""
    queue_ratio_target: float = DEFAULT_QUEUE_RATIO_TARGET
    polling_interval_seconds: int = 15
    """Default 15. How often KEDA evaluates the queries."""
    behaviour: Behaviour = field(default_factory=Behaviour)
    night: NightSchedule | None = field(default_factory=NightSchedule)
    """Default: 22:00-06:00 UTC at half the day bounds. ``None``: the same bounds all day."""
    failure_threshold: int = DEFAULT_FAILURE_THRESHOLD
    """Default 3. Consecutive failed reads after which KEDA treats a trigger as missing (``fallback``)."""
    blind_replicas: int | None = None
    """Default ``min_replicas``. Replicas the rollout runs, within the bounds in force, while every demand trigger is
    missing (the planned replicas)."""
    backfill: QueueSignal | None = None
    """Default none. The asynchronous lane's work queue: while it holds messages the night floor is the DAY
    floor (batch work fills the replicas interactive demand leaves idle); at night the rollout falls to the
    night floor only when the queue is empty. Needs ``night`` (without one the floor never drops)."""

    def problems(self) -> list[str]:
        out = []
        if self.min_replicas < 0 or self.max_replicas < 1 or self.min_replicas > self.max_replicas:
            out.append(
                f"min_replicas={self.min_replicas}, max_replicas={self.max_replicas}: need 0 <= min <= max, max >= 1"
            )
        for name in ("target_requests_per_replica", "queue_ratio_target"):
            if getattr(self, name) <= 0:
                out.append(f"{name}={getattr(self, name)} must be > 0")
        if self.kv_cache_target is not None and not 0 < self.kv_cache_target <= 1:
            out.append(f"kv_cache_target={self.kv_cache_target} must be in (0, 1]")
        if self.kv_cache_target is not None and not self.scope.has_kv_cache_metrics:
            out.append(f"kv_cache_target: the {self.scope.backend} backend publishes no KV-cache metrics")
        if self.night is not None:
            out += [f"night.{f}: {m}" for f, m in self.night.problems()]
        if self.backfill is not None and self.night is None:
            out.append("backfill: needs a night schedule (without one the floor never drops, nothing to hold)")
        if self.failure_threshold < 0:
            out.append(f"failure_threshold={self.failure_threshold} must be >= 0")
        if self.blind_replicas is not None and not 1 <= self.blind_replicas <= self.max_replicas:
            out.append(f"blind_replicas={self.blind_replicas} must be in [1, max_replicas={self.max_replicas}]")
        return out

    @property
    def blind(self) -> int:
        """What the rollout runs while every demand trigger is missing (before the bounds in force)."""
        return self.blind_replicas if self.blind_replicas is not None else max(1, self.min_replicas)


@dataclass(frozen=True)
class Trigger:
    name: str
    query: str
    target: float
    """Per-replica AverageValue target of the query."""


class ScalingError(ValueError):
    pass


def triggers(policy: ScalingPolicy) -> list[Trigger]:
    """The Prometheus triggers, in the order KEDA lists them."""
    scope = policy.scope
    if policy.signal == "queueRatio":
        out = [Trigger("queue", q.queue_compute_ratio(scope), policy.queue_ratio_target)]
    else:
        out = [Trigger("requests", q.requests_in_flight(scope), policy.target_requests_per_replica)]
    if policy.kv_cache_target is not None:
        out.append(Trigger("kv", kv_replica_equivalents(scope), policy.kv_cache_target))
    return out


def kv_replica_equivalents(scope: Scope) -> str:
    """KV-cache blocks in use over one replica's blocks: replicas' worth of busy KV cache."""
    used = f"sum({q.TRT_LLM_KV_CACHE}{scope.selector(model=scope.llm_model, kv_cache_block_type='used')})"
    per_replica = f"avg({q.TRT_LLM_KV_CACHE}{scope.selector(model=scope.llm_model, kv_cache_block_type='max')})"
    return f"{used} / clamp_min({per_replica}, 1)"


def formula(policy: ScalingPolicy) -> str | None:
    """``advanced.scalingModifiers.formula`` (expr-lang), or None without a night schedule.

    The demand in replicas, raised to the floor in force; capped only by a night ceiling below
    ``maxReplicaCount``. A cap the HPA can apply itself stays out of the formula: the HPA's 10% tolerance
    is judged on the formula's value, so a demand capped at 24 with 22 replicas running (ratio 1.09)
    would never scale past 22, while ``maxReplicaCount`` caps after the tolerance.

    Nil-safe (a trigger past ``fallback.failureThreshold`` is ``nil``): each trigger is read as ``(name ?? ...)``;
    with every demand trigger nil the demand is ``blind``; the queue trigger nil is an empty queue; the day cron nil
    is day. expr-lang refuses ``??`` mixed with another operator without parentheses, hence the parentheses."""
    if policy.night is None:
        return None
    wanted = _demand(policy)
    day, night = bounds_by_day_and_night(policy, policy.night)
    top = policy.max_replicas
    at_night = _clamp(wanted, night, top)
    if policy.backfill is not None:
        held = backfill_bounds(policy, policy.night)
        at_night = f"(({BACKFILL_TRIGGER} ?? 0) > 0 ? {_clamp(wanted, held, top)} : {at_night})"
    return f"(day ?? {DAY_FLAG}) >= {DAY_FLAG} ? {_clamp(wanted, day, top)} : {at_night}"


def _demand(policy: ScalingPolicy) -> str:
    """Replicas the demand triggers ask for, nil-safe: the largest of the triggers that read, ``blind`` when none
    does."""
    ts = triggers(policy)
    missing = " && ".join(f"{t.name} == nil" for t in ts)
    each = [f"({t.name} ?? 0) / {_number(t.target)}" for t in ts]
    demand = f"max({', '.join(each)})" if len(each) > 1 else each[0]
    return f"(({missing}) ? {policy.blind} : {demand})"


def backfill_bounds(policy: ScalingPolicy, night: NightSchedule) -> ReplicaBounds:
    """The night bounds while batch work waits: the day floor held, the night ceiling (never below it)."""
    _, lowered = bounds_by_day_and_night(policy, night)
    return ReplicaBounds(policy.min_replicas, max(policy.min_replicas, lowered.ceiling))


def bounds_by_day_and_night(policy: ScalingPolicy, night: NightSchedule) -> tuple[ReplicaBounds, ReplicaBounds]:
    """The (day, night) replica bounds of ``policy`` under its ``night`` schedule."""
    night_floor = night.night_value(policy.min_replicas)
    night_ceiling = night.night_value(policy.max_replicas) if night.lower_ceiling else policy.max_replicas
    return (
        ReplicaBounds(policy.min_replicas, policy.max_replicas),
        ReplicaBounds(night_floor, max(night_floor, night_ceiling)),
    )


def _clamp(wanted: str, limit: ReplicaBounds, max_replicas: int) -> str:
    raised = f"max({wanted}, {limit.floor})"
    return f"min({raised}, {limit.ceiling})" if limit.ceiling < max_replicas else raised


def scaled_object_spec(policy: ScalingPolicy, target: ScaleTarget) -> dict[str, Any]:
    """The ScaledObject ``spec`` (KEDA creates ``keda-hpa-<name>`` from it)."""
    problems = policy.problems()
    if problems:
        raise ScalingError("invalid scaling policy: " + "; ".join(problems))
    trigger_specs: list[dict[str, Any]] = [
        {
            "type": "prometheus",
            "name": t.name,
            "metricType": "AverageValue",
            "metadata": {
                "serverAddress": policy.prometheus_url,
                "query": t.query,
                "threshold": _number(t.target),
                "activationThreshold": "0",
                # An empty result is a failure (counted toward the fallback), not 0 demand (KEDA's default true
                # would drop the pool to its floor when the series vanish: prometheus_scaler.go ExecutePromQuery).
                "ignoreNullValues": "false",
            },
        }
        for t in triggers(policy)
    ]
    bounds_floor = policy.min_replicas
    advanced: dict[str, Any] = {"horizontalPodAutoscalerConfig": {"behavior": policy.behaviour.spec()}}
    night = policy.night
    if night is not None:
        start, end = night.day_cron
        trigger_specs.append(
            {
                "type": "cron",
                "name": "day",
                "metadata": {"timezone": night.timezone, "start": start, "end": end, "desiredReplicas": str(DAY_FLAG)},
            }
        )
        advanced["scalingModifiers"] = {
            "formula": formula(policy),
            "target": _number(FORMULA_TARGET),
            "activationTarget": "0",
            "metricType": "AverageValue",
        }
        bounds_floor = night.night_value(policy.min_replicas)
        if policy.backfill is not None:
            # Read by the formula only (scalingModifiers composes every trigger into its one metric): the
            # queue's depth never adds replicas by itself, it only keeps the day floor while it is above 0.
            trigger_specs.append(queue_trigger(policy.backfill))
    return {
        "scaleTargetRef": {"apiVersion": target.api_version, "kind": target.kind, "name": target.name},
        "pollingInterval": policy.polling_interval_seconds,
        "minReplicaCount": bounds_floor,
        "maxReplicaCount": policy.max_replicas,
        "fallback": {
            "failureThreshold": policy.failure_threshold,
            "replicas": policy.blind,
            "behavior": FALLBACK_BEHAVIOR if night is not None else NO_FORMULA_FALLBACK_BEHAVIOR,
        },
        "advanced": advanced,
        "triggers": trigger_specs,
    }


def bounds(policy: ScalingPolicy, instant: datetime) -> ReplicaBounds:
    return replica_bounds(policy.min_replicas, policy.max_replicas, policy.night, instant)


def desired_replicas(
    policy: ScalingPolicy,
    values: Mapping[str, float],
    current: int,
    instant: datetime,
    missing: frozenset[str] = frozenset(),
) -> int:
    """What the HPA recommends at ``instant`` for trigger totals ``values`` (by trigger name), before its
    behaviour's rate limits and stabilisation, as the ScaledObject makes it compute: without a night
    schedule each trigger is a metric (the largest recommendation wins); with one, :func:`formula`'s value
    is the only metric (target 1), so the tolerance is judged on it. Then ``minReplicaCount`` and
    ``maxReplicaCount`` (the night floor and the day ceiling). ``missing``: triggers past the fallback's
    failureThreshold (nil in the formula): the other demand trigger decides, ``blind`` when none reads, no
    backfill when the queue is missing."""
    ts = triggers(policy)
    read = [t for t in ts if t.name not in missing]
    if policy.night is None:
        wanted = max(hpa_desired(current, values[t.name] / max(current, 1), t.target) for t in read) if read else 0
        if len(read) < len(ts):
            wanted = max(wanted, current, policy.blind)  # currentReplicasIfHigher on the missing metric
        return min(max(wanted, policy.min_replicas), policy.max_replicas)
    day, night = bounds_by_day_and_night(policy, policy.night)
    is_day = "day" in missing or not policy.night.is_night(instant)
    limit = day if is_day else night
    queued = BACKFILL_TRIGGER not in missing and values.get(BACKFILL_TRIGGER, 0) > 0
    if limit is night and policy.backfill is not None and queued:
        limit = backfill_bounds(policy, policy.night)
    demand = max(values[t.name] / t.target for t in read) if read else float(policy.blind)
    composite = max(demand, limit.floor)
    if limit.ceiling < policy.max_replicas:
        composite = min(composite, limit.ceiling)
    wanted = hpa_desired(current, composite / max(current, 1), FORMULA_TARGET)
    return min(max(wanted, night.floor), policy.max_replicas)


def _number(value: float) -> str:
    return f"{value:g}"
