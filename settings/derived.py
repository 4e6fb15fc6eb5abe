"""What a validated stack implies across its sections: the capacity plan's bounds, the autoscaled day bounds, the
cold start and the edge policy, each from the whole :class:`Settings`.

These read several sections of a stack that loaded cleanly, so they take the ``Settings`` object itself, typed.
They live apart from the sections because ``Settings`` is built from every section: a section module that named
it would close an import circle. The checks that run while the stack loads (before a ``Settings`` exists) work on
the sections instead (``CheckContext``; ``capacity.plan_for``, ``cold_start.inputs_for``, ``replica_bounds
.serving_slots``).

Used by the program (``infra``), the plan's summary and the PR comment, ``inferctl`` (serve-local, capacity,
verify) and the tests.
"""

from __future__ import annotations

from typing import Any

from inference_platform.catalog.edge_policy import EdgePolicy
from inference_platform.planners import backfill, cold_start, drain, scaling
from inference_platform.planners import capacity as planner
from inference_platform.settings import Settings
from inference_platform.settings.base import CheckContext
from inference_platform.settings.capacity import CapacityBounds, plan_for
from inference_platform.settings.cold_start import inputs_for, replica_hold
from inference_platform.settings.replica_bounds import serving_slots


def cluster_zones(settings: Settings) -> list[str]:
    """The cluster's zones as the settings name them: network.availabilityZones, else the region's first azCount."""
    network = settings.network
    return list(network.availability_zones or sorted(settings.region.zones)[: network.az_count])


def derived_bounds(settings: Settings) -> CapacityBounds | None:
    """The plan's replicas and bounds (None when the stack plans nothing: ``capacity.enabled`` false)."""
    cap = settings.capacity
    if not cap.enabled:
        return None
    sections: dict[str, Any] = {"serving": settings.serving, "nodePools": settings.node_pools}
    return plan_for(cap, sections, settings.region.name, cluster_zones(settings), production=settings.production).bounds


def planned_replicas(settings: Settings) -> int:
    """``inference.replicas`` when the stack sets it, else the capacity plan's day floor, else the default."""
    inference = settings.inference
    if "replicas" in inference.model_fields_set:
        return int(inference.replicas)
    bounds = derived_bounds(settings)
    return bounds.replicas if bounds is not None else int(inference.replicas)


def capacity_summary(settings: Settings) -> dict[str, Any] | None:
    """The planned capacity and cost as a stack output (``capacityPlan``)."""
    bounds = derived_bounds(settings)
    if bounds is None:
        return None
    p = bounds.plan
    return {
        "layout": p.option.label,
        "tokensPerDay": p.demand.tokens_per_day,
        "slo": {"ttftMs": p.demand.slo.ttft_ms, "itlMs": p.demand.slo.itl_ms},
        "replicaTokensPerSecond": round(p.option.tokens_per_s_per_replica, 1),
        "replicas": {"peak": p.peak.replicas, "day": p.day.replicas, "night": p.night.replicas},
        "hpa": {"minReplicas": bounds.hpa_min_replicas, "maxReplicas": bounds.hpa_max_replicas},
        "pool": {"minSize": bounds.pool_min_nodes, "maxSize": bounds.pool_max_nodes},
        "expectedUtilisation": round(p.expected_utilisation, 3),
        "monthlyUsd": {
            "onDemand": round(p.monthly_usd.on_demand, 2),
            "spot": round(p.monthly_usd.spot, 2),
            "reserved": round(p.monthly_usd.reserved, 2),
        },
        "usdPerMillionOutputTokens": round(p.usd_per_million_output.on_demand, 4),
        # Input + output tokens at the stack's isl/osl (what public prices charge). No margin: the stack
        # sets no prices (capacity plan --price-per-m-* gives one).
        "usdPerMillionTotalTokens": round(p.usd_per_million_total.on_demand, 4),
        "isl": p.demand.isl,
        "osl": p.demand.osl,
        **_backfill_summary(settings, p),
        **_day_profile(settings, p),
        # Which planning figures were measured (capacity.factors from inferctl capacity calibrate) or modelled.
        "factors": {
            name: {"value": f["value"], "source": f["source"]}
            for name, f in settings.capacity.planning_factors().to_dict().items()
        },
    }


def _day_profile(settings: Settings, p: planner.Plan) -> dict[str, Any]:
    """The planned day hour by hour on the bounds the ScaledObject enforces (planners.capacity.day_profile): the night's
    load at capacity.nightFraction (the seed's 50 %) and the replicas the night scale-down leaves."""
    bounds = day_bounds(settings) if settings.autoscaling.enabled else None
    if bounds is None:
        return {}
    schedule = settings.autoscaling.schedule(settings.production)
    profile = planner.day_profile(p, schedule=schedule, day_floor=bounds[0], day_ceiling=bounds[1])
    night = [h for h in profile.hours if h.level == "night"]
    return {
        "dayProfile": {
            "utilisation24h": round(profile.utilisation, 3),
            "nightLoadShare": profile.night_load_share,
            "nightReplicaShare": round(profile.night_replica_share, 3),
            "night": {"hours": len(night), "replicas": night[0].replicas, "utilisation": round(night[0].utilisation, 3)}
            if night
            else None,
            "hours": [
                {"hour": h.hour, "level": h.level, "replicas": h.replicas, "utilisation": round(h.utilisation, 3)}
                for h in profile.hours
            ],
        }
    }


def _backfill_summary(settings: Settings, p: planner.Plan) -> dict[str, Any]:
    """With the asynchronous lane (batch.enabled, backfill.holdFloorAtNight): the day with and without it."""
    batch = settings.batch
    if not batch.enabled or not batch.backfill.hold_floor_at_night:
        return {}
    b = backfill.backfill(
        p, target_utilisation=batch.backfill.target_utilisation, batch_tokens_per_day=batch.backfill.tokens_per_day
    )
    cost = b.usd_per_million_batch_tokens
    return {
        "backfill": {
            "utilisation24h": {"without": round(b.utilisation, 3), "with": round(b.utilisation_backfilled, 3)},
            "billedUtilisation24h": {
                "without": round(b.billed_utilisation, 3),
                "with": round(b.billed_utilisation_backfilled, 3),
            },
            "batchTokensPerDay": round(b.batch_tokens_per_day),
            # Marginal: the night's extra node-hours on demand over the batch tokens they serve.
            "usdPerMillionBatchTokens": None if cost is None else round(cost, 4),
            "monthlyExtraUsd": round(b.monthly_extra_usd, 2),
        }
    }


def day_bounds(settings: Settings) -> tuple[int, int] | None:
    """(day floor, day ceiling) of the autoscaled rollout; None without a rollout to scale."""
    ctx = CheckContext(
        stack=settings.stack,
        environment=settings.environment,
        region=settings.region,
        sections={
            "serving": settings.serving,
            "inference": settings.inference,
            "nodePools": settings.node_pools,
            "network": settings.network,
        },
    )
    slots = serving_slots(ctx)
    if slots is None:
        return None
    auto = settings.autoscaling
    plan = derived_bounds(settings)
    low = auto.min_replicas if auto.min_replicas is not None else planned_replicas(settings)
    planned_high = plan.hpa_max_replicas if plan is not None else slots
    high = auto.max_replicas if auto.max_replicas is not None else planned_high
    return low, max(high, low, 1)


def _sections(settings: Settings) -> dict[str, Any]:
    """The sections the cold-start model reads, as the load-time checks see them."""
    return {
        "serving": settings.serving, "inference": settings.inference, "nodePools": settings.node_pools,
        "cluster": settings.cluster, "fsx": settings.fsx, "autoscaling": settings.autoscaling,
        "capacity": settings.capacity, "coldStart": settings.cold_start,
    }  # fmt: skip


def cold_start_model(settings: Settings) -> cold_start.ColdStart | None:
    """The stack's scale-up (``planners.cold_start``); None when nothing rolls out."""
    bounds = day_bounds(settings) if settings.autoscaling.enabled else None
    inputs = inputs_for(_sections(settings), bounds[1] if bounds is not None else None)
    return cold_start.model(inputs) if inputs is not None else None


def thresholds(settings: Settings) -> scaling.Thresholds | None:
    """The autoscaler's targets and their derivation (planners/scaling.py ``derive``): what a replica holds within the
    SLO, one scale-up at the stack's ramp, the headroom; None without an autoscaled rollout to model."""
    auto = settings.autoscaling
    if not auto.enabled:
        return None
    cs = cold_start_model(settings)
    hold = replica_hold(_sections(settings), settings.region.name)
    if cs is None or hold is None:
        return None
    ramp = auto.ramp_percent_per_hour / 100
    source = (f"planners/cold_start.py: {cs.detection.seconds:.0f} s detection + "
              + (f"{cs.running_node_s:.0f} s on a running node ({cs.inputs.standby_replicas} standby replicas cover a "
                 f"scale-up period's {cs.inputs.starts_at_once})" if cs.standby_covers else
                 f"{cs.new_node_s:.0f} s with a new node (launch {cs.launch_s:.0f} s)"))  # fmt: skip
    return scaling.derive(
        hold=hold.requests,
        hold_limit=hold.limit,
        hold_steps=hold.steps,
        scale_up_s=cs.scale_up_s,
        scale_up_path=cs.scale_up_path,
        scale_up_source=source,
        ramp_per_hour=ramp,
        hand_set=auto.target_requests_per_replica,
        kv_target=auto.kv_cache_target,
    )


def target_requests(settings: Settings) -> float:
    """What the ScaledObject renders as targetRequestsPerReplica: hand-set, else derived (``thresholds``)."""
    derived = thresholds(settings)
    return settings.autoscaling.target_requests(
        settings.serving.max_batch_size, derived.derived_target if derived is not None else None
    )


def max_share(settings: Settings) -> float | None:
    """The derived target as a share of serving.maxBatchSize (None when nothing is derived): kept for the old
    ``infra.settings.cold_start.max_share`` path (inference_platform/moved.py)."""
    derived = thresholds(settings)
    return derived.derived_target / settings.serving.max_batch_size if derived is not None else None


def cold_start_summary(settings: Settings) -> dict[str, Any] | None:
    """The cold start and the thresholds derived from it, as plain data (plan summary, PR comment)."""
    cs = cold_start_model(settings)
    if cs is None:
        return None
    out = cs.to_dict()
    derived = thresholds(settings)
    if derived is not None:
        out["thresholds"] = derived.to_dict()
        bounds = day_bounds(settings)
        blind = settings.autoscaling.fallback.replicas or planned_replicas(settings)
        out["fallback"] = {
            "failureThreshold": settings.autoscaling.fallback.failure_threshold,
            "pollingSeconds": settings.autoscaling.polling_interval_seconds,
            "replicas": min(max(blind, bounds[0]), bounds[1]) if bounds else blind,
        }
    return out


def drain_budget(settings: Settings) -> drain.DrainBudget:
    """How long a removed replica drains and the longest stream it must let finish (planners/drain.py): the
    ``drain`` output the plan summary and the PR comment print."""
    serving, termination = settings.serving, settings.inference.termination
    return drain.budget(
        longest_stream_s=serving.longest_stream_seconds,
        exit_timeout_s=serving.server.exit_timeout_seconds,
        pre_stop_s=termination.pre_stop_seconds,
        grace_period_s=termination.grace_period_seconds,
    )


def stack_edge_policy(settings: Settings) -> EdgePolicy:
    """The edge policy of a whole stack: its edge settings, the body limit from ``serving.maxInputLen`` and the
    served model's ``GET /v1/models/<id>``. One definition for the cluster (infra/edge.py) and the local edge
    (serve-local), so the two admit the same requests."""
    serving = settings.serving
    return settings.edge.policy(
        max_input_tokens=serving.max_input_len,
        served_models=(serving.served_model_name,),
        environment=settings.environment,
    )
