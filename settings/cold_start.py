"""A stack's cold start (inference_platform.planners.cold_start) from its settings, and the ramp check built on it.

Not a section: ``autoscaling`` runs ``ramp_problems`` (its triggers and its ceiling must leave the headroom
a cold start at ``autoscaling.rampPercentPerHour`` needs, against what a replica holds within the SLO).
``inferctl plan``'s summary and ``capacity plan --stack`` print the loaded stack's model
(``inference_platform.settings.derived.cold_start_model``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from inference_platform import catalog
from inference_platform.catalog import models
from inference_platform.planners import cold_start, latency, placement
from inference_platform.planners.planning_factors import DEFAULT_FACTORS

if TYPE_CHECKING:
    from inference_platform.settings.capacity import CapacityBounds
    from inference_platform.settings.serving import ServingSettings

GIB = 2**30


def inputs_for(sections: Mapping[str, Any], ceiling: int | None = None) -> cold_start.StartInputs | None:
    """The stack's scale-up as ``StartInputs``; None when nothing rolls out or a section is missing.
    ``ceiling``: the day ceiling the rollout scales to when autoscaling.maxReplicas is unset (the pool's slots
    or the capacity plan's), which caps the replicas one scale-up starts as an explicit maxReplicas does."""
    serving, inference = sections.get("serving"), sections.get("inference")
    pools = getattr(sections.get("nodePools"), "root", None) or {}
    cluster, fsx, auto = sections.get("cluster"), sections.get("fsx"), sections.get("autoscaling")
    if serving is None or inference is None or not getattr(inference, "has_image", False):
        return None
    pool = pools.get(serving.node_pool)
    if pool is None or not pool.instance_types:
        return None
    try:
        node = catalog.instance(pool.instance_types[0])
        fit = placement.pool_fit(pool.instance_types, serving.ranks_per_node)
        weights = models.weight_bytes(serving.resolved_architecture(), serving.precision)
    except (catalog.CatalogError, ValueError, LookupError, models.SizingError):
        return None
    fsx_enabled = bool(getattr(fsx, "enabled", False))
    source = inference.model_source(fsx_enabled)
    fsx_mb_s = (
        fsx.storage_capacity_gib / 1024 * fsx.per_unit_storage_throughput if fsx is not None and fsx_enabled else None
    )
    starts = 1
    if auto is not None and getattr(auto, "enabled", False):
        # One scale-up period adds at most scaleUp.pods replicas, never beyond an explicit ceiling. (The pods
        # of one multi-node replica each stage their own ranks: counted as one start.)
        high = auto.max_replicas if auto.max_replicas is not None else ceiling
        added = auto.scale_up.pods if high is None else min(auto.scale_up.pods, high)
        starts = max(1, added)
    return cold_start.StartInputs(
        provisioner=getattr(cluster, "provisioning", "managed"),
        instance_type=node.name,
        accelerators_per_node=node.accelerator_count,
        model_gib=weights / GIB,
        source="fsx" if source == "fsx" else "download",
        fsx_mb_s=fsx_mb_s,
        starts_at_once=starts,
        pods_per_node=max(1, fit.pods_per_node),
        local_nvme=pool.local_nvme_raid0(),
        ebs_mib_s=float(pool.disk_throughput()),
        copy_streams=cold_start.PARALLEL_COPY_STREAMS,
    )


def before_fix(inputs: cold_start.StartInputs) -> cold_start.StartInputs:
    """The same stack as it started before issue 21: gp3 at 125 MiB/s, no NVMe, one ``cp -R`` stream."""
    return replace(inputs, local_nvme=False, ebs_mib_s=cold_start.GP3_BASE_MIB_S, copy_streams=1)


@dataclass(frozen=True)
class Hold:
    """In-flight requests one replica holds within the SLO: the least of serving.maxBatchSize, the sequences
    its KV cache holds at the planned shape, and the largest batch the latency model keeps within the TTFT
    and ITL SLO (inference_platform.planners.latency)."""

    requests: int
    limit: str
    """What sets it (a key or "the KV cache")."""
    slo_key: str
    kv_fit: int | None
    """Sequences the KV cache holds at the mean context (None: not modelled for this layout)."""


def replica_hold(sections: Mapping[str, Any], region: str | None = None) -> Hold | None:
    """What one replica holds (``Hold``); None when nothing rolls out. Layouts the latency model cannot
    size fall back to maxBatchSize alone."""
    from inference_platform.settings import capacity as capacity_settings

    serving, cap = sections.get("serving"), sections.get("capacity")
    pools = getattr(sections.get("nodePools"), "root", None) or {}
    if serving is None:
        return None
    pool = pools.get(serving.node_pool)
    if pool is None or not pool.instance_types:
        return None
    batch = serving.max_batch_size
    explicit_slo = getattr(cap, "slo", None)
    slo_key = "capacity.slo" if explicit_slo is not None else "serving.slo.ttftP50Ms"
    ttft = explicit_slo.ttft_ms if explicit_slo is not None else serving.slo.ttft_p50_ms
    itl = explicit_slo.itl_ms if explicit_slo is not None else serving.slo.itl_p50_ms
    isl = getattr(cap, "isl", capacity_settings.DEFAULT_ISL)
    osl = getattr(cap, "osl", capacity_settings.DEFAULT_OSL)
    try:
        instance = (capacity_settings.planned_instance(pool.instance_types, region) if region
                    else pool.instance_types[0])  # fmt: skip
        factors = cap.planning_factors() if cap is not None else DEFAULT_FACTORS
        r = latency.replica(serving.resolved_architecture(), serving.precision, instance, serving.tensor_parallel,
                            serving.kv_cache.resolved_dtype())  # fmt: skip
        workload = latency.Workload(isl=isl, osl=osl)
        kv_fit = math.floor(latency.kv_capacity_tokens(r) / workload.mean_context)
        pred = latency.predict(r, workload, slo=latency.Slo(ttft_ms=ttft, itl_ms=itl), batch_limit=batch,
                               features=capacity_settings.serving_features(serving, factors))  # fmt: skip
    except (catalog.CatalogError, ValueError, LookupError, models.SizingError, AssertionError):
        return Hold(batch, "serving.maxBatchSize", slo_key, None)
    within = max((p.batch for p in pred.sweep if p.meets(pred.slo)), default=0)
    held = min((batch, "serving.maxBatchSize"), (kv_fit, "the KV cache"), (within, slo_key), key=lambda x: x[0])
    return Hold(held[0], held[1], slo_key, kv_fit)


def ramp_problems(
    auto: Any,
    sections: Mapping[str, Any],
    *,
    region: str | None = None,
    slots: int | None = None,
    plan: Any = None,
) -> list[tuple[str, str]]:
    """(key, message) for each autoscaling bound that cannot meet the SLO at ``rampPercentPerHour``.

    Over one cold start (with a new node, inference_platform.planners.cold_start) the load grows by g = ramp x
    seconds / 3600 of itself, and the replicas running must carry it meanwhile within the SLO. A replica
    holds ``replica_hold`` requests within the SLO, so the autoscaler must act at hold / (1 + g) per replica:

    - ``requests``: targetRequestsPerReplica (explicit, or the derived default, which never rises above 1
      silently: if even 1 is too many the ramp or the SLO is refused);
    - ``kvCacheTarget`` (TensorRT-LLM, a second trigger: the HPA follows whichever asks for more replicas):
      it fires at kvCacheTarget x the sequences the KV cache holds, and when that is the first trigger it
      must leave the same headroom;
    - ``queueRatio`` fires only once requests wait for a batch slot, i.e. with a replica already full: it
      leaves no headroom, so it is refused at a ramp unless the KV trigger fires early enough;
    - the day ceiling (maxReplicas, else the capacity plan's or the pool's) must hold the planned peak
      plus the growth of one cold start, at what a replica holds.

    ``slots``: replicas the serving pool holds at its maxSize; ``plan``: the capacity plan's bounds
    (CapacityBounds), None when the stack plans no demand."""
    if not auto.enabled or auto.ramp_percent_per_hour <= 0:
        return []
    serving = sections.get("serving")
    ceiling = auto.max_replicas if auto.max_replicas is not None else (
        plan.hpa_max_replicas if plan is not None else slots)  # fmt: skip
    inputs = inputs_for(sections, ceiling)
    hold = replica_hold(sections, region)
    if inputs is None or serving is None or hold is None:
        return []
    cs = cold_start.model(inputs)
    ramp = auto.ramp_percent_per_hour / 100
    growth = cold_start.headroom(cs.new_node_s, ramp)
    batch = serving.max_batch_size
    allowed = hold.requests / (1 + growth)
    why = (f"a scale-up with a new node takes {cs.new_node_s / 60:.1f} min (modelled, "
           f"planners/cold_start.py) and at autoscaling.rampPercentPerHour {auto.ramp_percent_per_hour:g} "
           f"the load grows {growth:.0%} meanwhile; a replica holds {hold.requests} requests within the SLO "
           f"(set by {hold.limit})")  # fmt: skip
    if hold.requests < 1:
        return [(hold.slo_key, "no batch meets the TTFT/ITL SLO on this layout: a replica holds no request within "
                               "it, so no autoscaling target can leave headroom")]  # fmt: skip
    out: list[tuple[str, str]] = []
    kv_on = getattr(serving, "backend", None) != "neuron" and hold.kv_fit is not None
    kv_trigger = auto.kv_cache_target * hold.kv_fit if kv_on else None
    # Where the HPA starts adding replicas (requests in flight per replica), and which key sets it.
    triggers: list[tuple[float, str]] = []
    if auto.signal == "requests":
        triggers.append((auto.target_requests(batch, allowed / batch), "autoscaling.targetRequestsPerReplica"))
    if kv_trigger is not None and (auto.signal == "requests" or kv_trigger <= allowed + 1e-9):
        triggers.append((kv_trigger, "autoscaling.kvCacheTarget"))
    if not triggers:
        kv = (
            f"; the KV trigger (kvCacheTarget {auto.kv_cache_target:g}) fires only at {kv_trigger:.1f} requests, "
            f"beyond the {allowed:.1f} that leave the headroom"
            if kv_trigger is not None
            else ""
        )
        out.append(("autoscaling.signal", f"queueRatio scales out only once requests wait for a batch slot, i.e. "
                    f"with each replica already full: it leaves no headroom for the ramp, and {why}{kv}; the "
                    "wait it adds to TTFT is not modelled, so this cannot be judged: use signal requests (or "
                    "rampPercentPerHour 0 to take the risk knowingly)"))  # fmt: skip
        trigger = None
    else:
        trigger = min(t for t, _ in triggers)
    if trigger is not None and trigger > allowed + 1e-9:
        # The HPA follows whichever trigger asks for more replicas: too late only when every one is; name each.
        # A KV trigger beyond what the replica holds never fires before it is full: then the target is the one.
        late = [(t, k) for t, k in triggers if k != "autoscaling.kvCacheTarget" or t <= hold.requests] or triggers
        out += [_trigger_problem(auto, inputs, cs, hold, k, t, allowed, growth, ramp, why) for t, k in late]
    if plan is not None:
        out += _ceiling_problems(auto, serving, plan, slots, hold, growth, why)
    return out


def _trigger_problem(
    auto: Any,
    inputs: cold_start.StartInputs,
    cs: cold_start.ColdStart,
    hold: Hold,
    key: str,
    trigger: float,
    allowed: float,
    growth: float,
    ramp: float,
    why: str,
) -> tuple[str, str]:
    slowest = max(cs.phases, key=lambda p: p.seconds)
    shorten = f"shorten the cold start (slowest: {slowest.name}, {slowest.seconds:.0f} s)"
    if key == "autoscaling.kvCacheTarget":
        assert hold.kv_fit is not None  # ramp_problems adds the KV trigger only where it sized the KV cache
        return (key, f"kvCacheTarget {auto.kv_cache_target:g} fires at {trigger:.1f} of the {hold.kv_fit} sequences "
                     f"the KV cache holds, which leaves too little headroom: {why}, so scale-out must start at "
                     f"{allowed:.1f}; lower it to at most {allowed / hold.kv_fit:.3f} or {shorten}")  # fmt: skip
    if auto.target_requests_per_replica is None:
        # The derived default never goes below 1 request: if 1 is already too many, say what to change.
        max_ramp = (hold.requests - 1) * 3600 / cs.new_node_s * 100
        name = hold.slo_key if hold.limit == hold.slo_key else "autoscaling.rampPercentPerHour"
        return (name, f"even the lowest autoscaling target (1 request per replica) leaves too little headroom: {why}, "
                      f"so scale-out would have to start at {allowed:.2f} requests per replica; lower "
                      f"autoscaling.rampPercentPerHour to at most {max_ramp:.0f}, relax the SLO ({hold.slo_key}) or "
                      f"{shorten}")  # fmt: skip
    fix = f"lower it to at most {math.floor(allowed)}, {shorten}"
    alone = cold_start.model(replace(inputs, starts_at_once=1))
    if inputs.source == "fsx" and trigger <= hold.requests / (1 + cold_start.headroom(alone.new_node_s, ramp)) + 1e-9:
        # One pod staging alone would make it: the pods that start together starve on the file system.
        key = "fsx.perUnitStorageThroughput"
        fix = (f"raise the FSx throughput: {inputs.starts_at_once} pods staging at once share "
               f"{inputs.fsx_mb_s:g} MB/s; or lower autoscaling.targetRequestsPerReplica to {math.floor(allowed)}")  # fmt: skip
    return (key, f"targetRequestsPerReplica {trigger:g} leaves too little headroom: {why}, so the SLO holds only at "
                 f"a target of at most {allowed:.1f} ({allowed / hold.requests:.0%} of it); {fix}")  # fmt: skip


def _ceiling_problems(
    auto: Any,
    serving: ServingSettings,
    plan: CapacityBounds,
    slots: int | None,
    hold: Hold,
    growth: float,
    why: str,
) -> list[tuple[str, str]]:
    p = plan.plan
    need = math.ceil(p.peak.output_tps * (1 + growth) / p.option.tokens_per_s_per_replica - 1e-9)
    explicit = auto.max_replicas is not None
    ceiling = auto.max_replicas if explicit else plan.hpa_max_replicas
    if ceiling >= need:
        return []
    pool_key = f"nodePools.{serving.node_pool}.maxSize"
    if not explicit and slots is not None and slots < need:
        key, fix = pool_key, f"raise maxSize so the pool holds {need} replicas (it holds {slots})"
    elif not explicit:
        key, fix = "autoscaling.maxReplicas", f"set it to at least {need} (the plan's ceiling is {ceiling})"
    else:
        key = "autoscaling.maxReplicas"
        fix = f"raise it to at least {need}" + (
            f" (and {pool_key}: the pool holds {slots})" if slots and slots < need else ""
        )
    return [(key, f"day ceiling {ceiling} replica(s) cannot carry the planned peak ({p.peak.output_tps:,.0f} output "
                  f"tokens/s at {p.option.tokens_per_s_per_replica:,.0f} per replica) plus the {growth:.0%} it grows "
                  f"during one cold start: {why}; {fix}")]  # fmt: skip
