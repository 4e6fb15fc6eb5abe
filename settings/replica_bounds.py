"""The replica bounds of the serving rollout that several sections' checks read: what the serving pool holds
at its maxSize and the autoscaled day floor and ceiling. Apart from ``autoscaling`` so that ``cold_start``,
which ``autoscaling``'s ramp check calls, can read them without an import circle."""

from __future__ import annotations

from inference_platform import catalog
from inference_platform.planners import placement
from inference_platform.settings.base import CheckContext
from inference_platform.settings.node_pools import cluster_zones
from inference_platform.settings.serving import ServingSettings


def serving_slots(ctx: CheckContext) -> int | None:
    """Replicas the serving pool holds at its maxSize; None when nothing rolls out or it cannot tell."""
    serving = ctx.sections.get("serving")
    inference = ctx.sections.get("inference")
    root = getattr(ctx.sections.get("nodePools"), "root", None) or {}
    if not isinstance(serving, ServingSettings) or not getattr(inference, "has_image", False):
        return None
    pool = root.get(serving.node_pool)
    if pool is None:
        return None  # serving.nodePool names the missing pool
    try:
        fit = placement.pool_fit(pool.instance_types, serving.ranks_per_node)
    except (catalog.CatalogError, ValueError):
        return None
    if fit.pods_per_node < 1:
        return None
    zones = cluster_zones(ctx) or []
    return placement.replica_slots(
        fit,
        max_size=pool.max_size,
        shards=pool.shard_count(zones),
        nodes_per_replica=serving.nodes,
    )
