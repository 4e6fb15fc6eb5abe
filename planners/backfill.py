"""What the asynchronous lane does to a capacity plan: utilisation over 24 hours with and without backfill, the
batch tokens the night's held floor can serve, and what a million of them costs.

Pure Python, no Pulumi. It reads a :class:`planners.capacity.Plan` (its day/night/peak levels, the replica's
SLO-meeting rate and the node price) and models what the serving rollout's ScaledObject does with the lane
(components.autoscaling.scaled_object, ``backfill``):

- **Without backfill** the fleet follows the plan: day floor for the day hours, the peak's extra replicas for the
  peak's share of the day, the night floor at night.
- **With backfill** the night floor is the day floor while the lane's queue holds work: the replicas that would
  have stopped keep running, and the capacity interactive traffic leaves free at night (day-floor replicas x
  their SLO-meeting rate x ``target_utilisation``, less the night's interactive load) serves batch work. The day
  is not filled: its replicas already run at the autoscaler's target, and the workers back off when the servers'
  queues rise (interactive first).
- **Batch tokens** count input + output at the plan's isl/osl (as ``tokens_per_day`` does); a stack may plan fewer
  than fit (``tokens_per_day``), never more.
- **Cost per million batch tokens** is the marginal cost: the extra node-hours the held floor runs at night, on
  demand, over the batch tokens they serve (the interactive plan pays for everything else). ``full`` spreads the
  whole fleet's cost over all tokens, interactive and batch, for comparison.
- Utilisation is load over SLO capacity of the replicas running (the plan's convention), hour by hour.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from inference_platform.planners.capacity import DAYS_PER_MONTH, SECONDS_PER_DAY, Plan, PlanningError, nodes_for

DEFAULT_TARGET_UTILISATION: Final = 0.8


@dataclass(frozen=True)
class Hour:
    """One hour of the day: which level runs, replicas, and load over SLO capacity."""

    hour: int
    level: str
    """``night``, ``day`` or ``peak``."""
    replicas: int
    replicas_backfilled: int
    interactive_output_tps: float
    batch_output_tps: float
    utilisation: float
    utilisation_backfilled: float


@dataclass(frozen=True)
class Backfill:
    hours: tuple[Hour, ...]
    utilisation: float
    """24-hour utilisation without the lane (interactive load over the capacity running)."""
    utilisation_backfilled: float
    """24-hour utilisation with the lane filling the night."""
    billed_utilisation: float
    """Load over the SLO capacity of every accelerator billed (whole nodes), without the lane..."""
    billed_utilisation_backfilled: float
    """...and with it: the held replicas often sit on nodes the night already pays for."""
    batch_tokens_per_day: float
    """Input + output tokens of batch work a day (what the held floor serves, or the stack's smaller figure)."""
    batch_capacity_tokens_per_day: float
    """What the held floor could serve at ``target_utilisation`` (input + output)."""
    extra_node_hours_per_day: float
    usd_per_million_batch_tokens: float | None
    """Marginal, on demand; None when no batch token fits."""
    usd_per_million_tokens_full: float
    """The whole fleet (with backfill) over every token, interactive and batch."""
    monthly_extra_usd: float
    target_utilisation: float


def backfill(plan: Plan, *, target_utilisation: float = DEFAULT_TARGET_UTILISATION,
             batch_tokens_per_day: float | None = None) -> Backfill:  # fmt: skip
    """The plan's day with and without backfill (see the module docstring)."""
    if not 0 < target_utilisation <= 1:
        raise PlanningError("target_utilisation", f"must be in (0, 1], got {target_utilisation:g}")
    if batch_tokens_per_day is not None and batch_tokens_per_day < 0:
        raise PlanningError("batch_tokens_per_day", f"must be >= 0, got {batch_tokens_per_day:g}")
    demand, option = plan.demand, plan.option
    rate = option.tokens_per_s_per_replica
    night_hours = demand.night_hours
    day_hours = 24 - night_hours
    peak_hours = day_hours * max(0.0, 1 - 1 / demand.peak_factor) if demand.peak_factor > 1 else 0.0
    held = max(plan.day.replicas, plan.night.replicas)
    free_tps = max(0.0, held * rate * target_utilisation - demand.night_output_tps)
    capacity_output = free_tps * night_hours * 3600
    capacity_total = capacity_output / demand.output_share
    wanted = capacity_total if batch_tokens_per_day is None else min(batch_tokens_per_day, capacity_total)
    batch_tps = (wanted * demand.output_share / (night_hours * 3600)) if night_hours else 0.0

    hours = tuple(_hours(plan, night_hours, peak_hours, held, batch_tps))
    served = demand.average_output_tps * SECONDS_PER_DAY
    # The 24-hour figures use the plan's continuous day (its utilisation is this same ratio); ``hours`` rounds it
    # to whole hours for the table.
    running = plan.day.replicas * day_hours + (plan.peak.replicas - plan.day.replicas) * peak_hours
    plain_capacity = (running + plan.night.replicas * night_hours) * 3600 * rate
    night_replicas = held if batch_tps > 0 else plan.night.replicas
    filled_capacity = (running + night_replicas * night_hours) * 3600 * rate
    batch_output = batch_tps * night_hours * 3600
    extra_nodes = (nodes_for(held, option) - plan.night.nodes) * night_hours if batch_tps > 0 else 0.0
    hour_usd = option.node_hour_usd
    extra_usd_day = extra_nodes * hour_usd
    node_hours = plan.node_hours_per_day + extra_nodes
    total_tokens = demand.tokens_per_day + wanted
    # SLO capacity of one billed node-hour: its replicas' rate (a multi-node replica: its share per node).
    per_node = rate * option.replicas_per_node if option.replica.nodes == 1 else rate / option.replica.nodes
    billed = plan.node_hours_per_day * 3600 * per_node
    billed_filled = node_hours * 3600 * per_node
    return Backfill(
        hours=hours,
        utilisation=min(1.0, served / plain_capacity) if plain_capacity else 0.0,
        utilisation_backfilled=min(1.0, (served + batch_output) / filled_capacity) if filled_capacity else 0.0,
        billed_utilisation=min(1.0, served / billed) if billed else 0.0,
        billed_utilisation_backfilled=min(1.0, (served + batch_output) / billed_filled) if billed_filled else 0.0,
        batch_tokens_per_day=wanted,
        batch_capacity_tokens_per_day=capacity_total,
        extra_node_hours_per_day=extra_nodes,
        usd_per_million_batch_tokens=(extra_usd_day / (wanted / 1e6)) if wanted > 0 else None,
        usd_per_million_tokens_full=node_hours * hour_usd / (total_tokens / 1e6),
        monthly_extra_usd=extra_usd_day * DAYS_PER_MONTH,
        target_utilisation=target_utilisation,
    )


def _hours(plan: Plan, night_hours: float, peak_hours: float, held: int, batch_tps: float) -> list[Hour]:
    """24 hours from the night's start: the night, then the day with its peak in the middle (whole hours; a
    fraction of an hour is given to the level that holds most of it)."""
    demand, rate = plan.demand, plan.option.tokens_per_s_per_replica
    nights = round(night_hours)
    peaks = min(24 - nights, round(peak_hours))
    days = 24 - nights - peaks
    before = days // 2
    levels = ["night"] * nights + ["day"] * before + ["peak"] * peaks + ["day"] * (days - before)
    out = []
    for hour, level in enumerate(levels):
        if level == "night":
            replicas, load, backfilled, batch = plan.night.replicas, demand.night_output_tps, held, batch_tps
        elif level == "peak":
            replicas, load, backfilled, batch = plan.peak.replicas, demand.peak_output_tps, plan.peak.replicas, 0.0
        else:
            replicas, load, backfilled, batch = plan.day.replicas, demand.day_output_tps, plan.day.replicas, 0.0
        if level == "night" and batch <= 0:
            backfilled = replicas
        out.append(
            Hour(
                hour=hour,
                level=level,
                replicas=replicas,
                replicas_backfilled=backfilled,
                interactive_output_tps=load,
                batch_output_tps=batch,
                utilisation=min(1.0, load / (replicas * rate)) if replicas else 0.0,
                utilisation_backfilled=min(1.0, (load + batch) / (backfilled * rate)) if backfilled else 0.0,
            )
        )
    return out
