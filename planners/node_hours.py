"""Expected nodes of an accelerator pool over the day, from the plan's workloads and their KEDA schedules.

Pure Python, no Pulumi. ``costing`` prices a pool's *expected* monthly cost with this model:

- **Planned replicas.** A workload (Deployment, StatefulSet, LeaderWorkerSet) plans ``spec.replicas``:
  the stack's planned load (``inference.replicas``, or the capacity plan's day floor, as infra renders
  it). One replica needs its pods' accelerators (a LeaderWorkerSet group: the leader's plus
  (size - 1) workers').
- **The schedule bounds them by time of day.** A ScaledObject targeting the workload (as
  inference_platform.components.autoscaling renders it) has a ``day`` cron trigger (the day window) and a
  ``scalingModifiers`` formula ``day >= 2 ? DAY : NIGHT``, each branch ``min(max(load, FLOOR), CEILING)``
  or, when its ceiling is ``maxReplicaCount`` (which then caps it), ``max(load, FLOOR)``. Expected replicas in a window = planned replicas clamped to that
  window's [floor, ceiling]: the floor runs even without load, the ceiling caps the plan. Load above the
  plan (the daily peak) is not expected: the pool's maximum prices it. At night the *ceiling* is what
  saves money; a schedule lowering only the floor saves only if load falls, which the plan does not say,
  so such a night is priced at the planned replicas. With the asynchronous lane's backfill the night branch is
  ``(batch > 0 ? HELD : NIGHT)``: the floor is held while the lane's queue has work, and the lane exists to fill
  every night, so the night is priced at the HELD bounds (the line's basis says so).
  Without the formula (a plain cron trigger), the cron's ``desiredReplicas`` raises the day floor and
  ``minReplicaCount``/``maxReplicaCount`` bound the rest of the day. Without a ScaledObject a workload
  runs its planned replicas around the clock.
- **Nodes follow accelerators.** At any time a pool runs ceil(accelerators its workloads want /
  accelerators per node) nodes (per zonal node group when a pool is one group per zone, each carrying
  its share), clamped to the pool's [minSize, maxSize]. A pool no workload pins to stays at its desired
  size, the start size nothing then moves.
- **Expected node-hours a day** = the sum over the day's segments (between window edges) of hours x
  nodes; with one schedule that is day hours x day nodes + night hours x night nodes.
- Window edges are read in the trigger's timezone and carried to UTC at that zone's offset on 1 January:
  daylight saving shifts a window by an hour, which changes no total for one schedule, only how two
  schedules in different zones overlap.
- A schedule that cannot be read (a cron other than ``M H * * *``, a formula of another shape) is priced
  at its day bounds all day, and the line's basis says so.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from inference_platform.catalog import time_zones

SCALED_OBJECT: Final = "kubernetes:keda.sh/v1alpha1:ScaledObject"
DAY_TRIGGER: Final = "day"
MINUTES_PER_DAY: Final = 1440
_OFFSET_DATE: Final = datetime(2026, 1, 1, 12)
_CRON: Final = re.compile(r"\s*(\d{1,2})\s+(\d{1,2})\s+\*\s+\*\s+\*\s*")
_CAPPED: Final = re.compile(r"\s*min\(max\(.*,\s*(\d+)\),\s*(\d+)\)\s*")
_RAISED: Final = re.compile(r"\s*max\(.*,\s*(\d+)\)\s*")


@dataclass(frozen=True)
class Bounds:
    floor: int
    ceiling: int

    def clamp(self, replicas: int) -> int:
        return min(max(replicas, self.floor), max(self.floor, self.ceiling))


@dataclass(frozen=True)
class Schedule:
    """One ScaledObject's replica bounds by time of day."""

    day: Bounds
    night: Bounds
    day_start: int
    """Minute of the UTC day the day window opens (0 with ``day_end`` 1440: no night)."""
    day_end: int
    timezone: str = "UTC"
    note: str = ""
    """Why the schedule was read as day bounds all day, when it was."""
    backfill: str = ""
    """How the asynchronous lane's queue bounds the night, when it does (its night bounds are then the held ones)."""
    night_without_backfill: Bounds | None = None
    """With backfill: the night's own bounds, while the lane's queue is empty (the plan's summary shows both)."""

    def is_day(self, minute: int) -> bool:
        if self.day_start == self.day_end:
            return True
        if self.day_start < self.day_end:
            return self.day_start <= minute < self.day_end
        return minute >= self.day_start or minute < self.day_end

    @property
    def day_hours(self) -> float:
        if self.day_start == self.day_end:
            return 24.0
        return ((self.day_end - self.day_start) % MINUTES_PER_DAY) / 60

    def describe(self) -> str:
        if self.note:
            return f"{self.day.floor}-{self.day.ceiling} replicas all day ({self.note})"
        held = f", {self.backfill}" if self.backfill else ""
        return (
            f"{self.day_hours:g} h day at {self.day.floor}-{self.day.ceiling} replicas, {24 - self.day_hours:g} h "
            f"night at {self.night.floor}-{self.night.ceiling} ({self.timezone}{held})"
        )


@dataclass(frozen=True)
class Load:
    """One workload's pods on one pool."""

    workload: str
    pool: str
    accelerators_per_replica: float
    planned_replicas: int
    schedule: Schedule | None = None

    def replicas_at(self, minute: int) -> int:
        if self.schedule is None:
            return self.planned_replicas
        bounds = self.schedule.day if self.schedule.is_day(minute) else self.schedule.night
        return bounds.clamp(self.planned_replicas)


@dataclass(frozen=True)
class Segment:
    hours: float
    accelerators: float
    nodes: int


def read_schedules(resources: Iterable[Mapping[str, Any]]) -> dict[tuple[str, str, str], Schedule]:
    """(namespace, kind, name) of each ScaledObject's target -> its schedule."""
    out: dict[tuple[str, str, str], Schedule] = {}
    for r in resources:
        if r.get("type") != SCALED_OBJECT:
            continue
        inputs = r.get("inputs") or {}
        spec = inputs.get("spec") or {}
        target = spec.get("scaleTargetRef") or {}
        namespace = str((inputs.get("metadata") or {}).get("namespace") or "default")
        key = (namespace, str(target.get("kind") or "Deployment"), str(target.get("name") or ""))
        out[key] = schedule_of(spec)
    return out


def schedule_of(spec: Mapping[str, Any]) -> Schedule:
    """The day/night bounds a ScaledObject ``spec`` enforces (see the module docstring)."""
    lo = int(float(spec.get("minReplicaCount", 0) or 0))
    hi = int(float(spec.get("maxReplicaCount", 100) or 100))
    cron = next(
        (t for t in spec.get("triggers") or [] if t.get("type") == "cron" and t.get("name") == DAY_TRIGGER),
        None,
    ) or next((t for t in spec.get("triggers") or [] if t.get("type") == "cron"), None)
    everyday = Bounds(lo, hi)
    if cron is None:
        return Schedule(everyday, everyday, 0, 0)
    meta = cron.get("metadata") or {}
    formula = str(((spec.get("advanced") or {}).get("scalingModifiers") or {}).get("formula") or "")
    held, unheld = "", None
    if formula:
        parts = _conditional(formula)
        night_branch = parts[2] if parts and re.fullmatch(r"\s*day\s*>=\s*\d+\s*", parts[0]) else ""
        inner = _conditional(night_branch.strip()[1:-1]) if night_branch.strip().startswith("(") else None
        if inner is not None and (queue := re.fullmatch(r"\s*(\w+)\s*>\s*0\s*", inner[0])):
            # Backfill holds these bounds while the lane's queue has work; the lane exists to fill every night's
            # trough, so the expectation is the held bounds every night (the basis says so).
            night_branch, held = inner[1], f"night held at its floor while the {queue[1]!r} queue has work"
            unheld = _branch(inner[2], hi)
        day_bounds = _branch(parts[1], hi) if parts and night_branch else None
        night_bounds = _branch(night_branch, hi) if night_branch else None
        if day_bounds is None or night_bounds is None:
            return Schedule(everyday, everyday, 0, 0, note=f"formula {formula!r} not read")
        day, night = day_bounds, night_bounds
    else:
        desired = int(float(meta.get("desiredReplicas", 0) or 0))
        day, night = Bounds(max(lo, desired), hi), everyday
    timezone = str(meta.get("timezone") or "UTC")
    start, end = _minute(str(meta.get("start", ""))), _minute(str(meta.get("end", "")))
    try:
        zone = time_zones.zone(timezone)  # the tzdata package's zones, not this machine's
    except KeyError:
        return Schedule(day, day, 0, 0, timezone, note=f"timezone {timezone!r} unknown")
    if start is None or end is None:
        return Schedule(day, day, 0, 0, timezone, note=f"cron {meta.get('start')!r}-{meta.get('end')!r} not read")
    offset = _OFFSET_DATE.replace(tzinfo=zone).utcoffset()
    shift = int(offset.total_seconds() // 60) if offset is not None else 0
    return Schedule(
        day, night, (start - shift) % MINUTES_PER_DAY, (end - shift) % MINUTES_PER_DAY, timezone, backfill=held,
        night_without_backfill=unheld,
    )  # fmt: skip


def _conditional(text: str) -> tuple[str, str, str] | None:
    """``cond ? then : otherwise`` split at its top level (parentheses nest; expr-lang's conditional nests to
    the right), or None. The night branch with the asynchronous lane's backfill is ``(batch > 0 ? HELD : NIGHT)``."""
    depth, question = 0, -1
    for i, char in enumerate(text):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if depth == 0 and char == "?" and question < 0:
            question = i
        elif depth == 0 and char == ":" and question >= 0:
            return text[:question], text[question + 1 : i], text[i + 1 :]
    return None


def _branch(text: str, top: int) -> Bounds | None:
    """One branch's bounds: its own ceiling, else ``maxReplicaCount`` (``top``); None when unreadable."""
    if capped := _CAPPED.fullmatch(text):
        return Bounds(int(capped[1]), int(capped[2]))
    if raised := _RAISED.fullmatch(text):
        return Bounds(int(raised[1]), top)
    return None


def segments(loads: Iterable[Load], *, per_node: int, shards: int, lo: int, hi: int) -> list[Segment]:
    """The pool's day cut at every window edge of its workloads: hours, accelerators and nodes of each."""
    loads = list(loads)
    edges = {0, MINUTES_PER_DAY}
    for load in loads:
        if load.schedule is not None and load.schedule.day_start != load.schedule.day_end:
            edges |= {load.schedule.day_start, load.schedule.day_end}
    cuts = sorted(edges)
    out = []
    for a, b in itertools.pairwise(cuts):
        accel = sum(load.replicas_at(a) * load.accelerators_per_replica for load in loads)
        wanted = math.ceil(round(accel / max(1, shards) / per_node, 9))
        out.append(Segment((b - a) / 60, accel, min(hi, max(lo, wanted))))
    return _merged(out)


def expected_nodes(parts: list[Segment]) -> float:
    """Average nodes over the day."""
    return sum(s.hours * s.nodes for s in parts) / 24


def _merged(parts: list[Segment]) -> list[Segment]:
    """Segments with the same demand as one (the night crosses midnight: its two ends are one night)."""
    out: list[Segment] = []
    for s in parts:
        same = [i for i, o in enumerate(out) if o.accelerators == s.accelerators and o.nodes == s.nodes]
        if same:
            o = out[same[0]]
            out[same[0]] = Segment(o.hours + s.hours, o.accelerators, o.nodes)
        else:
            out.append(s)
    return out


def _minute(cron: str) -> int | None:
    match = _CRON.fullmatch(cron)
    if match is None:
        return None
    minute, hour = int(match.group(1)), int(match.group(2))
    if minute > 59 or hour > 23:
        return None
    return hour * 60 + minute
