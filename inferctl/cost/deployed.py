"""The serving pool as the stack deploys it, beside what the capacity plan says the demand needs.

Two figures answer different questions, and the plan prints both, each named: the capacity plan
(``capacityPlan``, planners/capacity.py) gives the replicas and node-hours the *demand* needs (peak, day, night)
and what those node-hours would cost; the cost line (planners/costing.py) prices what the stack *runs*: the
Deployment's replicas bounded by its KEDA ScaledObject by day and by night, on the node groups of the pool with
their minimum sizes. A stack may run more than its demand needs (a pinned replica count, production's night
minimum, the batch lane holding the night at the day floor, a minimum node per zone): this line says by how much
and which setting asks for each difference, with the cost line's own numbers (issue 28: prod printed $45,188 and
$82,305, and night replicas 1 and 3, without saying which is which).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from inference_platform.planners.costing_inputs import POOL_LABEL
from inference_platform.planners.node_hours import Bounds, Schedule, read_schedules

NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"


@dataclass(frozen=True)
class Deployed:
    pool: str
    planned_replicas: int
    """The workload's ``spec.replicas`` (inference.replicas, else the plan's day floor)."""
    schedule: Schedule | None
    groups: int
    min_nodes: int
    max_nodes: int
    monthly_expected: float | None
    """The cost line's expected month for the pool's node groups; None when it priced none."""


def deployed_pool(resources: Iterable[Mapping[str, Any]], outputs: Mapping[str, Any], estimate: Any) -> Deployed | None:
    """The serving pool of a planned stack (its ``inference`` output names the pool and the workload); None without
    one."""
    inference = outputs.get("inference")
    if not isinstance(inference, Mapping) or not inference.get("nodePool"):
        return None
    resources = list(resources)
    pool = str(inference["nodePool"])
    kind, _, name = str(inference.get("workload", "")).partition("/")
    schedule = read_schedules(resources).get((str(inference.get("namespace", "default")), kind, name))
    groups = [r for r in resources if r.get("type") == NODE_GROUP and _pool_of(r) == pool]
    urns = {r.get("urn") for r in groups}
    lines = [line for line in estimate.lines if line.urn in urns and line.monthly_expected is not None]
    sizes = [(r.get("inputs") or {}).get("scalingConfig") or {} for r in groups]
    return Deployed(
        pool=pool,
        planned_replicas=int(float(inference.get("replicas", 0) or 0)),
        schedule=schedule,
        groups=len(groups),
        min_nodes=sum(int(float(s.get("minSize", 0) or 0)) for s in sizes),
        max_nodes=sum(int(float(s.get("maxSize", 0) or 0)) for s in sizes),
        monthly_expected=sum(line.monthly_expected for line in lines) if lines else None,
    )


def _pool_of(resource: Mapping[str, Any]) -> str:
    labels = (resource.get("inputs") or {}).get("labels") or {}
    return str(labels.get(POOL_LABEL, ""))


def deployed_line(plan: Mapping[str, Any], deployed: Deployed) -> str:
    """The deployed pool beside the plan: its replicas by day and night, its nodes, its expected month, and why
    each differs from what the demand needs."""
    from inference_platform.inferctl.cost.render import money

    needed = plan["replicas"]
    day, night, held = _bounds(deployed)
    parts = [f"replicas {_range(day)} by day", f"{_range(night)} at night"]
    if held is not None:
        parts.append(f"{_range(held)} at night while the batch queue has work")
    parts.append(f"{deployed.min_nodes}-{deployed.max_nodes} nodes in {deployed.groups} node group(s)")
    head = f"Deployed serving pool {deployed.pool!r} (what the cost line prices): {', '.join(parts)}"
    needed_usd = float(plan["monthlyUsd"]["onDemand"])
    if deployed.monthly_expected is None:
        return head + "; not priced"
    head += f"; expected {money(deployed.monthly_expected)}/month"
    reasons = _reasons(plan, deployed, day, night, held)
    extra = deployed.monthly_expected - needed_usd
    if not reasons:
        return head + f", as planned (the demand needs {money(needed_usd)})"
    verb = "more" if extra >= 0 else "less"
    return (
        f"{head}, {money(abs(extra))} {verb} than the {money(needed_usd)} the demand needs (peak "
        f"{needed['peak']:.0f} / day {needed['day']:.0f} / night {needed['night']:.0f} replicas) because: "
        + "; ".join(reasons)
    )


def _bounds(deployed: Deployed) -> tuple[Bounds, Bounds, Bounds | None]:
    """(day, night, night while the batch queue has work) as the cost line reads them; without a schedule the
    planned replicas around the clock."""
    schedule = deployed.schedule
    if schedule is None:
        fixed = Bounds(deployed.planned_replicas, deployed.planned_replicas)
        return fixed, fixed, None
    if schedule.backfill:
        # The cost line prices the held night (the lane exists to fill every night): its night bounds are the held
        # ones; without batch work the night falls to the schedule's own night branch.
        return schedule.day, schedule.night_without_backfill or schedule.night, schedule.night
    return schedule.day, schedule.night, None


def _range(bounds: Bounds) -> str:
    return f"{bounds.floor}-{bounds.ceiling}"


def _reasons(plan: Mapping[str, Any], deployed: Deployed, day: Bounds, night: Bounds, held: Bounds | None) -> list[str]:
    needed = plan["replicas"]
    out = []
    if day.floor > needed["day"]:
        key = "inference.replicas" if day.floor == deployed.planned_replicas else "autoscaling.minReplicas"
        out.append(f"a day floor of {day.floor} replicas ({key}) where the day needs {needed['day']:.0f}")
    if night.floor > needed["night"]:
        out.append(
            f"a night floor of {night.floor} (autoscaling.night: a fraction of the day floor, at least 2 in "
            f"production) where the night needs {needed['night']:.0f}"
        )
    if held is not None and held.floor > night.floor:
        out.append(f"the night held at {held.floor} while batch work waits (batch.backfill.holdFloorAtNight)")
    pool = plan.get("pool") or {}
    if deployed.min_nodes > float(pool.get("minSize", 0)):
        per = f"minSize {deployed.min_nodes // max(1, deployed.groups)} in each of {deployed.groups} zonal groups"
        out.append(
            f"at least {deployed.min_nodes} nodes (nodePools.{deployed.pool}: {per}) where the plan needs "
            f"{float(pool['minSize']):.0f}"
        )
    return out
