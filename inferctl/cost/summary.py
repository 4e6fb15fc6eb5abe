"""The one-line monthly estimate the plan report prints (``make plan``) and the PR comment carries."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any


def usage_for(stack: str, path: Path | None = None, project_root: Path | None = None) -> Any:
    """Usage assumptions of the stack's cost policy (``cost-monthly-budget.assumptions`` in the policy config
    ``inference_platform.offline_plan.policy_config.select`` chooses: ``path``, else the project's
    ``policies/config/<stack>.json``; the project is the current directory unless given), the same ones the
    policy prices with. Exit 2 naming every bad key of every cost policy's ``assumptions`` at once."""
    from inference_platform.offline_plan import policy_config
    from inference_platform.planners import costing

    chosen = policy_config.select(path, project_root or Path.cwd(), stack)
    return costing.Usage.from_config((chosen.values.get("cost-monthly-budget") or {}).get("assumptions"))


def resources_as_dicts(resources: Iterable[Any]) -> list[dict[str, Any]]:
    """Recorded resources (inference_platform.offline_plan.recorder) as the dicts ``costing`` reads."""
    return [
        {"urn": r.urn, "type": r.type, "name": r.name, "custom": r.custom, "id": r.id, "inputs": r.inputs}
        for r in resources
    ]


def estimate_for(resources: list[dict[str, Any]], outputs: Mapping[str, Any] | None, stack: str,
                 policy_config: Path | None = None, project_root: Path | None = None) -> Any:  # fmt: skip
    """The stack's estimate; PriceError when its region is not priced."""
    from inference_platform.planners import costing

    region = costing.plan_region({"outputs": outputs or {}, "resources": resources})
    return costing.estimate(resources, region=region, usage=usage_for(stack, policy_config, project_root))


def summary_line(resources: list[dict[str, Any]], outputs: Mapping[str, Any] | None, stack: str,
                 policy_config: Path | None = None, project_root: Path | None = None) -> str:  # fmt: skip
    from inference_platform.catalog.prices import PriceError
    from inference_platform.inferctl.cost.render import money

    try:
        e = estimate_for(resources, outputs, stack, policy_config, project_root)
    except PriceError as err:
        return f"Monthly cost: not estimated ({err})"
    top = sorted(e.by("category").items(), key=lambda kv: -kv[1][1])[:3]
    parts = ", ".join(f"{k} {money(v[1])}" for k, v in top)
    unknown = f"; {len(e.unknown)} resources of unknown cost not counted" if e.unknown else ""
    line = (
        f"Monthly cost ({e.region}): expected {money(e.monthly_expected)} (min {money(e.monthly_min)}, max "
        f"{money(e.monthly_max)}); largest: {parts}{unknown}. Details: inferctl cost build/plan/{stack}.json"
    )
    planned = (outputs or {}).get("capacityPlan")
    cold = (outputs or {}).get("coldStart")
    lines = [capacity_line(planned)] if isinstance(planned, Mapping) else []
    if isinstance(planned, Mapping):
        from inference_platform.inferctl.cost.deployed import deployed_line, deployed_pool

        deployed = deployed_pool(resources, outputs or {}, e)
        lines += [deployed_line(planned, deployed)] if deployed is not None else []
    lines += [cold_start_line(cold)] if isinstance(cold, Mapping) else []
    from inference_platform.inferctl.cost.canary import canary_cost, canary_line

    canary = canary_cost(resources, outputs, e, usage_for(stack, policy_config, project_root))
    lines += [canary_line(canary)] if canary is not None else []
    return "\n".join([*lines, line])


def cold_start_line(c: Mapping[str, Any]) -> str:
    """The stack's modelled cold start (the ``coldStart`` output) in one line, each phase with its basis."""
    phases = ", ".join(f"{p['name']} {float(p['seconds']):.0f} s ({p['basis']})" for p in c.get("phases", []))
    head = (
        f"Cold start (scale-up to serving): {float(c['newNodeSeconds']) / 60:.1f} min with a new node, "
        f"{float(c['existingNodeSeconds']) / 60:.1f} min on a running one, "
        f"{float(c['withLazyLoadingSeconds']) / 60:.1f} min {'without' if c.get('lazyLoading') else 'with'} lazy "
        f"image loading (SOCI, modelled): {phases}"
    )
    if "maxTargetShare" in c:
        head += (
            f"; at a ramp of {float(c['rampPercentPerHour']):g} %/h the autoscaler may target at most "
            f"{float(c['maxTargetShare']):.0%} of a replica's batch (it targets {float(c['targetShare']):.0%})"
        )
    return head


def capacity_line(p: Mapping[str, Any]) -> str:
    """The stack's capacity plan (the ``capacityPlan`` output) in one line."""
    r, hpa, pool, usd = p["replicas"], p["hpa"], p["pool"], p["monthlyUsd"]
    return (
        f"Planned capacity (what the demand needs): {p['tokensPerDay']:.3g} tokens/day at TTFT "
        f"{p['slo']['ttftMs']:g} ms / ITL {p['slo']['itlMs']:g} ms on {p['layout']} "
        f"({p['replicaTokensPerSecond']:,.0f} output tokens/s per replica): replicas peak {r['peak']:.0f} / day "
        f"{r['day']:.0f} / night {r['night']:.0f}, HPA {hpa['minReplicas']:.0f}-{hpa['maxReplicas']:.0f}, pool "
        f"{pool['minSize']:.0f}-{pool['maxSize']:.0f} nodes, utilisation {p['expectedUtilisation']:.0%}; those "
        f"node-hours ${usd['onDemand']:,.0f}/month on demand ({_per_million(p)})"
        + _backfill_note(p.get("backfill"))
        + _factors_note(p.get("factors"))
    )


def _backfill_note(b: Any) -> str:
    """The asynchronous lane's backfill (capacityPlan.backfill, with batch.enabled): utilisation and batch cost."""
    if not isinstance(b, Mapping):
        return ""
    u, billed, cost = b["utilisation24h"], b["billedUtilisation24h"], b.get("usdPerMillionBatchTokens")
    per_m = "no batch token fits the night" if cost is None else f"${float(cost):.3f} per M batch tokens (marginal)"
    return (
        f"; with backfill {float(b['batchTokensPerDay']):.3g} batch tokens/day at {per_m}, 24-h utilisation "
        f"{float(u['without']):.0%} -> {float(u['with']):.0%} of the running replicas, {float(billed['without']):.0%} "
        f"-> {float(billed['with']):.0%} of the billed accelerators"
    )


def _per_million(p: Mapping[str, Any]) -> str:
    """$ per million total (input + output, at the plan's isl/osl) and per million output tokens; outputs
    written before the total was exported show the output figure alone."""
    out = f"${float(p['usdPerMillionOutputTokens']):.2f} per M output tokens"
    total = p.get("usdPerMillionTotalTokens")
    if total is None:
        return out
    shape = f" at isl/osl {p['isl']:.0f}/{p['osl']:.0f}" if "isl" in p and "osl" in p else ""
    return f"${float(total):.2f} per M total tokens (input + output{shape}), {out}"


def _factors_note(factors: Any) -> str:
    """Which planning factors the plan used were measured (inferctl capacity calibrate); the rest modelled."""
    if not isinstance(factors, Mapping) or not factors:
        return ""
    measured = [f"{k} {float(v['value']):g}" for k, v in factors.items() if v.get("source") == "measured"]
    if not measured:
        return "; planning factors all modelled"
    return f"; measured factors: {', '.join(measured)} (the rest modelled)"
