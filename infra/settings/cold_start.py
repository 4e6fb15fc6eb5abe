"""A stack's cold start (components.catalog.cold_start) from its settings, and the ramp check built on it.

Not a section: ``autoscaling`` runs ``ramp_problems`` (its target must leave the headroom a cold start at
``autoscaling.rampPercentPerHour`` needs), and ``inferctl plan``'s summary and ``capacity plan --stack``
print ``for_settings``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from components import catalog
from components.catalog import cold_start, models
from components.serving import placement

GIB = 2**30


def inputs_for(sections: Mapping[str, Any]) -> cold_start.StartInputs | None:
    """The stack's scale-up as ``StartInputs``; None when nothing rolls out or a section is missing."""
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
    fsx_mb_s = fsx.storage_capacity_gib / 1024 * fsx.per_unit_storage_throughput if fsx_enabled else None
    starts = 1
    if auto is not None and getattr(auto, "enabled", False):
        # One scale-up period adds at most scaleUp.pods replicas, never beyond an explicit ceiling. (The pods
        # of one multi-node replica each stage their own ranks: counted as one start.)
        added = auto.scale_up.pods if auto.max_replicas is None else min(auto.scale_up.pods, auto.max_replicas)
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


def for_settings(settings: Any) -> cold_start.ColdStart | None:
    sections = {
        "serving": settings.serving, "inference": settings.inference, "nodePools": settings.node_pools,
        "cluster": settings.cluster, "fsx": settings.fsx, "autoscaling": settings.autoscaling,
    }  # fmt: skip
    inputs = inputs_for(sections)
    return cold_start.model(inputs) if inputs is not None else None


def max_share(settings: Any) -> float | None:
    """The highest share of a replica's batch the autoscaler may target at the stack's ramp (None: no ramp or
    no rollout); the default target is lowered to it (AutoscalingSettings.target_requests)."""
    auto = settings.autoscaling
    if not auto.enabled or auto.ramp_percent_per_hour <= 0:
        return None
    cs = for_settings(settings)
    return cold_start.max_target_share(cs.new_node_s, auto.ramp_percent_per_hour / 100) if cs is not None else None


def summary(settings: Any) -> dict[str, Any] | None:
    """The cold start and the headroom it asks of the autoscaler, as plain data (plan summary, PR comment)."""
    cs = for_settings(settings)
    if cs is None:
        return None
    out = cs.to_dict()
    auto = settings.autoscaling
    if getattr(auto, "enabled", False):
        ramp = auto.ramp_percent_per_hour / 100
        out["rampPercentPerHour"] = auto.ramp_percent_per_hour
        out["maxTargetShare"] = round(cold_start.max_target_share(cs.new_node_s, ramp), 3)
        batch = settings.serving.max_batch_size
        out["targetShare"] = round(auto.target_requests(batch, max_share(settings)) / batch, 3)
    return out


def ramp_problems(auto: Any, sections: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(key, message) when the autoscaler's target leaves less headroom than a cold start at the ramp needs.

    Over one cold start (with a new node) the load grows by ramp x seconds / 3600 of itself; the replicas
    running must carry it meanwhile, so the target share of a replica's batch must be at most
    1 / (1 + that growth). Checked for an explicit targetRequestsPerReplica with the ``requests`` signal (the
    default is set from the same figure)."""
    if not auto.enabled or auto.signal != "requests" or auto.ramp_percent_per_hour <= 0:
        return []
    if auto.target_requests_per_replica is None:
        return []  # the default target is lowered to what the ramp allows (max_share)
    inputs = inputs_for(sections)
    serving = sections.get("serving")
    if inputs is None or serving is None:
        return []
    cs = cold_start.model(inputs)
    ramp = auto.ramp_percent_per_hour / 100
    allowed = cold_start.max_target_share(cs.new_node_s, ramp)
    batch = serving.max_batch_size
    target = auto.target_requests(batch)
    if target / batch <= allowed + 1e-9:
        return []
    slowest = max(cs.phases, key=lambda p: p.seconds)
    fix = f"lower it to at most {int(allowed * batch)}, shorten the cold start (slowest: {slowest.name}, {slowest.seconds:.0f} s)"
    key = "autoscaling.targetRequestsPerReplica"
    alone = cold_start.model(replace(inputs, starts_at_once=1))
    if inputs.source == "fsx" and target / batch <= cold_start.max_target_share(alone.new_node_s, ramp) + 1e-9:
        # One pod staging alone would make it: the pods that start together starve on the file system.
        key = "fsx.perUnitStorageThroughput"
        fix = (f"raise the FSx throughput: {inputs.starts_at_once} pods staging at once share "
               f"{inputs.fsx_mb_s:g} MB/s; or lower autoscaling.targetRequestsPerReplica to {int(allowed * batch)}")  # fmt: skip
    return [
        (
            key,
            f"targetRequestsPerReplica {target:g} of maxBatchSize {batch} ({target / batch:.0%}) leaves too little "
            f"headroom: a scale-up with a new node takes {cs.new_node_s / 60:.1f} min (modelled, "
            f"components/catalog/cold_start.py) and at autoscaling.rampPercentPerHour {auto.ramp_percent_per_hour:g} "
            f"the load grows {cold_start.headroom(cs.new_node_s, ramp):.0%} meanwhile, so the SLO holds only at a "
            f"target of at most {allowed:.0%}; {fix}",
        )
    ]
