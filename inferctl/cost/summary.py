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
    drained = (outputs or {}).get("drain")
    lines += [drain_line(drained)] if isinstance(drained, Mapping) else []
    from inference_platform.inferctl.cost.canary import canary_cost, canary_line

    canary = canary_cost(resources, outputs, e, usage_for(stack, policy_config, project_root))
    lines += [canary_line(canary)] if canary is not None else []
    from inference_platform.inferctl.cost.picker import picker_cost, picker_line

    picker = picker_cost(resources, e.region)
    lines += [picker_line(picker)] if picker is not None else []
    return "\n".join([*lines, line])


def cold_start_line(c: Mapping[str, Any]) -> str:
    """The stack's modelled cold start (the ``coldStart`` output) in one line, then the autoscaling thresholds derived
    from it, one line per step (planners/scaling.py)."""
    phases = ", ".join(f"{p['name']} {float(p['seconds']):.0f} s ({p['basis']})" for p in c.get("newPhases", []))
    standby = int(c.get("standbyReplicas") or 0)
    head = (
        f"Cold start (scale-up decision to serving): {float(c['runningNodeSeconds']) / 60:.1f} min on a running node, "
        f"{float(c['newNodeSeconds']) / 60:.1f} min with a new node (launch {float(c['launchSeconds']) / 60:.1f} + "
        f"{float(c['afterLaunchSeconds']) / 60:.1f} min); image pull {c.get('imagePull')}, weights from "
        f"{'FSx' if c.get('weightsSource') == 'fsx' else 'S3'}"
        + (f", {standby} standby replica(s)" if standby else "")
        + f"; new node: {phases}; details: inferctl capacity cold-start --stack <stack>"
    )
    t = c.get("thresholds")
    if not isinstance(t, Mapping):
        return head
    lines = [head, thresholds_line(t)]
    lines += [f"  - {s['what']}: {s['value']} ({s['source']})" for s in t.get("steps", [])]
    f = c.get("fallback")
    if isinstance(f, Mapping):
        n, poll = int(f["failureThreshold"]), float(f["pollingSeconds"])
        lines.append(
            f"Autoscaling on a failing signal (KEDA fallback, behavior scalingModifiers): the HPA holds through the first {n} "
            f"failed reads of a trigger (at most ~{n * poll:.0f} s at its polling interval), then it is nil in the formula: the other demand "
            f"trigger decides, {int(f['replicas'])} replica(s) within the bounds in force when none reads, no "
            "backfill when the queue fails; the night ceiling holds throughout"
        )
    return "\n".join(lines)


def drain_line(d: Mapping[str, Any]) -> str:
    """How long a removed replica drains (the ``drain`` output, planners/drain.py) in one line, flagged when
    streams are cut."""
    exit_how = "hand-set" if d.get("exitTimeoutHandSet") else "derived"
    grace_how = "hand-set" if d.get("gracePeriodHandSet") else "derived"
    line = (
        f"Scale-down drain: {int(d['exitTimeoutSeconds'])} s ({exit_how}) for the longest stream the SLO admits "
        f"({float(d['longestStreamSeconds']):.0f} s: TTFT p95, then maxSeqLen - 2 tokens at the SLO's output rate); "
        f"terminationGracePeriodSeconds {int(d['gracePeriodSeconds'])} ({grace_how}: preStop "
        f"{int(d['preStopSeconds'])} s + the drain + 5 s); a replica leaves as soon as its streams end"
    )
    if d.get("flag"):
        line += f"; FLAG: {d['flag']}"
    return line


def thresholds_line(t: Mapping[str, Any]) -> str:
    """The autoscaling target (derived or hand-set, flagged) in one line."""
    how = "hand-set" if t.get("handSet") else "derived"
    line = (
        f"Autoscaling thresholds ({how}): {float(t['targetRequests']):g} requests in flight per replica (derived "
        f"{float(t['derivedTargetRequests']):.1f} = a replica's {int(t['hold'])} within the SLO / (1 + "
        f"{float(t['headroom']):.1%} headroom: {float(t['rampPercentPerHour']):g} %/h over a "
        f"{float(t['scaleUpSeconds']) / 60:.1f}-min scale-up on a {t['scaleUpPath']}); kvCacheTarget "
        f"{float(t['kvCacheTarget']):g}"
    )
    if t.get("flag"):
        line += f"; FLAG: {t['flag']}"
    return line


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
        + _day_profile_note(p.get("dayProfile"))
    )


def _day_profile_note(d: Any) -> str:
    """The planned day on the ScaledObject's bounds (capacityPlan.dayProfile): the night at its load share."""
    if not isinstance(d, Mapping) or not isinstance(d.get("night"), Mapping):
        return ""
    night, by_hour = d["night"], d["hours"]
    day = next((h for h in by_hour if h["level"] == "day"), by_hour[0])
    return (
        f"; 24 h on the ScaledObject's bounds: night ({int(night['hours'])} h) at {float(d['nightLoadShare']):.0%} of "
        f"the day's load on {int(night['replicas'])} replica(s) ({float(d['nightReplicaShare']):.0%} of the day's "
        f"{int(day['replicas'])}) at {float(night['utilisation']):.0%}, day at {float(day['utilisation']):.0%}, "
        f"{float(d['utilisation24h']):.0%} over 24 h"
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
