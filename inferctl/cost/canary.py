"""What a canary costs while it runs (issue 32): its own replicas beside the current version's, priced as the
difference between the stack's estimate with the canary's workload and without it (planners/costing.py prices a
pool's node-hours from every workload pinned to it, so the canary's replicas are in the pool's line; this names
their share). ``inferctl cost`` and the plan's summary line (the PR comment) print it.

The canary is found through the ``models`` stack output (infra/models.py: ``canary.service``, the workload's name).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from inference_platform.planners.costing_inputs import WORKLOAD_KINDS


@dataclass(frozen=True)
class CanaryCost:
    model: str
    version: str
    weight: int
    workload: str
    replicas: int
    monthly_expected: float
    """The stack's expected month with the canary minus without it (the maximum does not move: a pool's maximum is
    its maxSize, whatever runs on it)."""


def canary_cost(resources: Sequence[Mapping[str, Any]], outputs: Mapping[str, Any] | None, estimate: Any,
                usage: Any) -> CanaryCost | None:  # fmt: skip
    """The canary's share of ``estimate`` (that of ``resources``); None without a canary in ``outputs``."""
    from inference_platform.planners import costing

    canary = ((outputs or {}).get("models") or {}).get("canary")
    if not isinstance(canary, Mapping) or not canary.get("service"):
        return None
    name = str(canary["service"])
    workloads = [r for r in resources if r.get("type") in WORKLOAD_KINDS and _name(r) == name]
    if not workloads:
        return None
    rest = [r for r in resources if not any(r is w for w in workloads)]
    without = costing.estimate(rest, region=estimate.region, usage=usage)
    replicas = sum(int(float(((r.get("inputs") or {}).get("spec") or {}).get("replicas") or 0)) for r in workloads)
    return CanaryCost(
        model=str(canary.get("model", "")),
        version=str(canary.get("version", "")),
        weight=int(canary.get("weight") or 0),
        workload=name,
        replicas=replicas,
        monthly_expected=estimate.monthly_expected - without.monthly_expected,
    )


def canary_line(c: CanaryCost) -> str:
    from inference_platform.inferctl.cost.render import money

    head = (
        f"Canary {c.model} {c.version} at {c.weight} %: {c.replicas} replica(s) of {c.workload} beside the current "
        f"version, {money(c.monthly_expected)}/month expected while it runs"
    )
    if c.monthly_expected < 0.005:
        head += (
            " (no node-hours of its own: it fits on the pool's planned nodes, or the pool is at its maxSize and it "
            "would wait for room: see the pool's line)"
        )
    return head + "; remove models.canary to stop paying it"


def as_json(c: CanaryCost) -> dict[str, Any]:
    return {
        "model": c.model,
        "version": c.version,
        "weight": c.weight,
        "workload": c.workload,
        "replicas": c.replicas,
        "monthly_usd_expected": round(c.monthly_expected, 2),
    }


def _name(r: Mapping[str, Any]) -> str:
    meta = (r.get("inputs") or {}).get("metadata") or {}
    return str(meta.get("name") or r.get("name", ""))
