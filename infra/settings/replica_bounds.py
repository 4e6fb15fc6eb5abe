"""The replica bounds of the serving rollout that several sections' checks read: what the serving pool holds
at its maxSize and the autoscaled day floor and ceiling. Apart from ``autoscaling`` so that ``cold_start``,
which ``autoscaling``'s ramp check calls, can read them without an import circle."""

from __future__ import annotations

from typing import Any

from inference_platform.components import catalog
from inference_platform.components.serving import placement
from inference_platform.infra.settings.base import CheckContext
from inference_platform.infra.settings.capacity import derived_bounds, planned_replicas
from inference_platform.infra.settings.node_pools import cluster_zones


def serving_slots(ctx: CheckContext) -> int | None:
    """Replicas the serving pool holds at its maxSize; None when nothing rolls out or it cannot tell."""
    serving = ctx.sections.get("serving")
    inference = ctx.sections.get("inference")
    root = getattr(ctx.sections.get("nodePools"), "root", None) or {}
    if serving is None or not getattr(inference, "has_image", False):
        return None
    pool = root.get(serving.node_pool)  # type: ignore[attr-defined]
    if pool is None:
        return None  # serving.nodePool names the missing pool
    try:
        fit = placement.pool_fit(pool.instance_types, serving.ranks_per_node)  # type: ignore[attr-defined]
    except (catalog.CatalogError, ValueError):
        return None
    if fit.pods_per_node < 1:
        return None
    zones = cluster_zones(ctx) or []
    return placement.replica_slots(
        fit,
        max_size=pool.max_size,
        shards=pool.shard_count(zones),
        nodes_per_replica=serving.nodes,  # type: ignore[attr-defined]
    )


def day_bounds(settings: Any) -> tuple[int, int] | None:
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
