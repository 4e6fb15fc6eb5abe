"""Text and JSON views of plans, comparisons and fleets (every money figure labelled with its basis)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from inference_platform.inferctl.cost.render import money
from inference_platform.planners.backfill import Backfill, backfill
from inference_platform.planners.capacity import (
    EKS_MAX_NODES_PER_MANAGED_NODE_GROUP,
    K8S_MAX_NODES_PER_CLUSTER,
    RANK_BASIS,
    Fleet,
    Plan,
    single_pool_problem,
)


def _round(v: float | None, digits: int = 4) -> float | None:
    return None if v is None else round(v, digits)


def _money(m: Any) -> dict[str, float]:
    return {k: round(v, 4) for k, v in asdict(m).items()}


def plan_json(p: Plan, smaller: list[Plan] | tuple[Plan, ...] = ()) -> dict[str, Any]:
    o = p.option
    d = p.demand
    margin = p.gross_margin
    per_m = p.margin_per_million_total
    return {
        "model": o.replica.model.name,
        "precision": o.replica.precision,
        "accelerator": o.replica.node.accelerator_model,
        "instance_type": o.replica.node.name,
        "tp": o.replica.tp,
        "region": p.region,
        "demand": {
            "tokens_per_day": d.tokens_per_day,
            "tokens_counted": "input + output",
            "isl": d.isl,
            "osl": d.osl,
            "slo": {"ttft_ms": d.slo.ttft_ms, "itl_ms": d.slo.itl_ms},
            "peak_factor": d.peak_factor,
            "night_fraction": d.night_fraction,
            "night_hours": d.night_hours,
            "output_tokens_per_s": {"average": round(d.average_output_tps, 1), "peak": round(d.peak_output_tps, 1)},
        },
        "replica": {
            "batch": o.point.batch,
            "ttft_ms": round(o.point.ttft_ms, 1),
            "itl_ms": round(o.point.itl_ms, 2),
            "tokens_per_s_per_replica": round(o.tokens_per_s_per_replica, 1),
            "tokens_per_s_per_accelerator": round(o.point.tokens_per_s_per_accelerator, 1),
            "accelerators": o.accelerators_per_replica,
            "replicas_per_node": o.replicas_per_node,
        },
        "levels": {
            lvl.name.replace(" ", "_"): {"replicas": lvl.replicas, "accelerators": lvl.accelerators, "nodes": lvl.nodes}
            for lvl in (p.peak, p.day, p.night)
        },
        "hpa": {"minReplicas": p.hpa_min, "maxReplicas": p.hpa_max},
        "pool": {"minSize": p.pool_min_nodes, "maxSize": p.pool_max_nodes},
        "expected_utilisation": round(p.expected_utilisation, 3),
        "nodes": {
            "billed": "whole nodes (whole multi-node groups) at the node's hourly price",
            "instance_type": o.replica.node.name,
            "accelerators_per_node": o.replica.node.accelerator_count,
            "node_hour_usd": round(p.node_hour_usd, 4),
            "node_monthly_usd": round(p.node_monthly_usd, 2),
            "node_hours_per_day": round(p.node_hours_per_day, 2),
            "accelerator_use": round(p.accelerator_use, 3),
        },
        "smaller_instances": [
            {
                "instance_type": s.option.replica.node.name,
                "tp": s.option.replica.tp,
                "nodes": {"peak": s.peak.nodes, "night_floor": s.night.nodes},
                "monthly_usd_on_demand": round(s.monthly_usd.on_demand, 2),
                "accelerator_use": round(s.accelerator_use, 3),
            }
            for s in smaller
        ],
        "monthly_usd": _money(p.monthly_usd),
        "usd_per_million_output_tokens": _money(p.usd_per_million_output),
        "usd_per_million_total_tokens": _money(p.usd_per_million_total),
        "price_per_million_input_tokens": p.price_per_million_input,
        "price_per_million_output_tokens": p.price_per_million_output,
        "revenue_per_million_total_tokens": _round(p.revenue_per_million_total),
        "margin_per_million_total_tokens": _money(per_m) if per_m else None,
        "gross_margin": _money(margin) if margin else None,
        "notes": list(p.notes),
        "backfill": backfill_json(backfill(p)),
        "features": _features_json(p),
        "planning_factors": p.factors.to_dict() if p.factors else None,
        "factors": {"spot": p.spot_factor, "reserved": p.reserved_factor},
    }


def _features_json(p: Plan) -> dict[str, Any]:
    f = p.option.features
    if f is None:
        return {"speculative_draft_tokens": 0, "prefix_hit_rate": 0.0, "tokens_per_step": 1.0}
    return {
        "speculative_draft_tokens": f.draft_tokens,
        "speculative_acceptance": f.speculative_acceptance,
        "tokens_per_step": round(f.tokens_per_step, 3),
        "prefix_hit_rate": f.prefix_hit_rate,
        "scales": {"throughput": f.throughput_scale, "ttft": f.ttft_scale, "itl": f.itl_scale},
    }


def _factors_text(p: Plan) -> list[str]:
    if p.factors is None:
        return []
    f = p.option.features
    used = []
    if f is not None and f.draft_tokens:
        used.append("speculative_acceptance")
    if f is not None and f.prefix_hit_rate:
        used.append("prefix_hit_rate")
    used += ["throughput_scale", "ttft_scale", "itl_scale"]
    parts = []
    for name in used:
        factor = getattr(p.factors, name)
        parts.append(f"{name} {factor.value:g} ({factor.source}{': ' + factor.basis if factor.basis else ''})")
    lines = ["  planning factors: " + "; ".join(parts)]
    if f is not None and f.draft_tokens:
        lines.append(f"  speculative decoding: {f.draft_tokens} drafts, {f.tokens_per_step:.2f} tokens per step")
    if f is not None and f.prefix_hit_rate:
        lines.append(f"  prefix-cache reuse: {f.prefix_hit_rate:.0%} of input tokens skip prefill")
    return lines


def plan_text(p: Plan, smaller: list[Plan] | tuple[Plan, ...] = ()) -> str:
    j = plan_json(p, smaller)
    r = j["replica"]
    d = j["demand"]
    lines = [
        f"{j['model']} {j['precision']} on {j['instance_type']} TP{j['tp']} ({j['region']}), "
        f"{d['tokens_per_day']:.3g} tokens/day (input + output), {d['isl']}/{d['osl']}, "
        f"SLO TTFT {d['slo']['ttft_ms']:g} ms / ITL {d['slo']['itl_ms']:g} ms",
        f"  replica: batch {r['batch']}, TTFT {r['ttft_ms']:.0f} ms, ITL {r['itl_ms']:.1f} ms, "
        f"{r['tokens_per_s_per_replica']:,.0f} output tokens/s ({r['tokens_per_s_per_accelerator']:,.0f} per GPU)",
        "  level          replicas   accelerators   nodes",
    ]
    for name, lvl in j["levels"].items():
        lines.append(f"  {name:<14}{lvl['replicas']:>9}{lvl['accelerators']:>15,.0f}{lvl['nodes']:>8}")
    lines += [
        f"  HPA minReplicas {j['hpa']['minReplicas']}, maxReplicas {j['hpa']['maxReplicas']}; "
        f"pool minSize {j['pool']['minSize']}, maxSize {j['pool']['maxSize']} (peak + one surge replica)",
        f"  expected average utilisation (load / SLO capacity): {j['expected_utilisation']:.0%}",
        f"  billed by whole nodes: {j['nodes']['instance_type']} ${j['nodes']['node_hour_usd']:,.2f}/h "
        f"(${j['nodes']['node_monthly_usd']:,.0f} a month around the clock), {j['nodes']['node_hours_per_day']:,.1f} "
        f"node-hours a day; replicas use {j['nodes']['accelerator_use']:.0%} of the billed accelerators",
        "  monthly cost:          on-demand {on_demand:>14,.0f}   spot {spot:>14,.0f}   reserved floor {reserved:>14,.0f} USD"
        .format(**j["monthly_usd"]),
        "  $ per M output tokens: on-demand {on_demand:>14.3f}   spot {spot:>14.3f}   reserved floor {reserved:>14.3f}"
        .format(**j["usd_per_million_output_tokens"]),
        "  $ per M total tokens:  on-demand {on_demand:>14.3f}   spot {spot:>14.3f}   reserved floor {reserved:>14.3f}"
        .format(**j["usd_per_million_total_tokens"]),
    ]  # fmt: skip
    if j["gross_margin"]:
        m, per_m = j["gross_margin"], j["margin_per_million_total_tokens"]
        p_in, p_out = j["price_per_million_input_tokens"] or 0, j["price_per_million_output_tokens"] or 0
        lines.append(
            f"  margin at ${p_in:g}/M input + ${p_out:g}/M output (${j['revenue_per_million_total_tokens']:.3f} per M "
            f"total tokens at {d['isl']}:{d['osl']}): on-demand ${per_m['on_demand']:.3f}/M ({m['on_demand']:.0%}), "
            f"spot ${per_m['spot']:.3f}/M ({m['spot']:.0%}), reserved floor ${per_m['reserved']:.3f}/M "
            f"({m['reserved']:.0%})"
        )
    for s in j["smaller_instances"]:
        lines.append(
            f"  smaller node that fits: {s['instance_type']} TP{s['tp']}, {s['nodes']['peak']} node(s) at peak, "
            f"{s['monthly_usd_on_demand']:,.0f} USD a month on demand ({s['accelerator_use']:.0%} of its accelerators used)"
        )
    lines += backfill_text(j["backfill"])
    lines += [f"  note: {n}" for n in j["notes"]]
    lines += _factors_text(p)
    return "\n".join(lines)


def backfill_json(b: Backfill) -> dict[str, Any]:
    """The day with and without the asynchronous lane (planners.backfill)."""
    cost = b.usd_per_million_batch_tokens
    return {
        "basis": "night floor held at the day floor while batch work waits, filled to the target share of its SLO "
        "capacity; cost: the extra node-hours on demand over the batch tokens (input + output)",
        "target_utilisation": b.target_utilisation,
        "utilisation_24h": {"without": round(b.utilisation, 3), "with": round(b.utilisation_backfilled, 3)},
        "billed_utilisation_24h": {
            "without": round(b.billed_utilisation, 3),
            "with": round(b.billed_utilisation_backfilled, 3),
        },
        "batch_tokens_per_day": round(b.batch_tokens_per_day),
        "extra_node_hours_per_day": round(b.extra_node_hours_per_day, 2),
        "usd_per_million_batch_tokens": None if cost is None else round(cost, 4),
        "usd_per_million_tokens_with_backfill": round(b.usd_per_million_tokens_full, 4),
        "monthly_extra_usd": round(b.monthly_extra_usd, 2),
        "hours": [
            {
                "hour": h.hour,
                "level": h.level,
                "replicas": h.replicas,
                "replicas_backfilled": h.replicas_backfilled,
                "utilisation": round(h.utilisation, 3),
                "utilisation_backfilled": round(h.utilisation_backfilled, 3),
            }
            for h in b.hours
        ],
    }


def backfill_text(j: dict[str, Any]) -> list[str]:
    u, billed, cost = j["utilisation_24h"], j["billed_utilisation_24h"], j["usd_per_million_batch_tokens"]
    per_m = "no batch token fits" if cost is None else f"${cost:.3f} per M batch tokens (marginal, on demand)"
    return [
        f"  with backfill (night floor held while batch work waits, filled to {j['target_utilisation']:.0%}): "
        f"{j['batch_tokens_per_day']:.3g} batch tokens/day, {per_m}; 24-h utilisation {u['without']:.0%} -> "
        f"{u['with']:.0%} of the running replicas, {billed['without']:.0%} -> {billed['with']:.0%} of the billed "
        f"accelerators; +{j['extra_node_hours_per_day']:g} node-hours/day (${j['monthly_extra_usd']:,.0f}/month)",
        "  hour " + " ".join(f"{h['hour']:>3}" for h in j["hours"]),
        "  w/o  " + " ".join(f"{h['utilisation'] * 100:>3.0f}" for h in j["hours"]),
        "  with "
        + " ".join(f"{h['utilisation_backfilled'] * 100:>3.0f}" for h in j["hours"])
        + "  (% of the running replicas' SLO capacity; hours from the night's start)",
    ]


def compare_json(plans: list[tuple[str, Plan | None, str]]) -> dict[str, Any]:
    return {
        "ranked_by": RANK_BASIS,
        "ranking": [
            {"accelerator": chip, "plan": plan_json(p), "single_pool_problem": single_pool_problem(p)}
            if p
            else {"accelerator": chip, "unavailable": why}
            for chip, p, why in plans
        ],
    }


def compare_text(plans: list[tuple[str, Plan | None, str]]) -> str:
    lines = [
        f"ranked by {RANK_BASIS}",
        "rank  accelerator   layout                $/M total (ranked)  $/M output   GPUs at peak  nodes at peak"
        "   monthly on-demand USD",
    ]
    rank = 0
    for chip, p, why in plans:
        if p is None:
            lines.append(f"   -  {chip:<13} {why}")
            continue
        rank += 1
        layout = f"{p.option.replica.node.name} TP{p.option.replica.tp}"
        lines.append(
            f"{rank:>4}  {chip:<13} {layout:<21} {p.usd_per_million_total.on_demand:>18.3f}"
            f"{p.usd_per_million_output.on_demand:>13.3f}{p.peak.accelerators:>15,.0f}{p.peak.nodes:>15,}"
            f"{p.monthly_usd.on_demand:>24,.0f}" + ("  *" if single_pool_problem(p) else "")
        )
    if any(p and single_pool_problem(p) for _, p, _ in plans):
        lines.append(
            f"  * beyond one pool of one cluster ({EKS_MAX_NODES_PER_MANAGED_NODE_GROUP} nodes per EKS managed node "
            f"group, {K8S_MAX_NODES_PER_CLUSTER:,} per cluster): split it with `inferctl capacity fleet`"
        )
    return "\n".join(lines)


def fleet_json(f: Fleet) -> dict[str, Any]:
    from inference_platform.planners.capacity import fleet_summary

    summary = fleet_summary(f)
    return {
        "plan": plan_json(f.plan),
        "accelerators_needed_at_peak": f.accelerators_needed,
        "accelerators_provisioned": f.accelerators_provisioned,
        "summary": {
            "clusters": len(f.clusters),
            "regions": [asdict(r) for r in summary.regions],
            "monthly_usd": {"expected": summary.monthly_expected_usd, "ceiling": summary.monthly_ceiling_usd},
            "usd_per_million_total_tokens": summary.usd_per_million_total,
            "usd_per_million_output_tokens": summary.usd_per_million_output,
        },
        "clusters": [asdict(c) for c in f.clusters],
    }


def fleet_text(f: Fleet) -> str:
    """The fleet in a few rows: one per region (its clusters are alike), the total, and its money; ``--json`` lists
    every cluster stack."""
    from inference_platform.planners.capacity import fleet_summary

    p, summary = f.plan, fleet_summary(f)
    d = p.demand
    lines = [
        f"{p.option.replica.model.name} on {p.option.replica.node.name} TP{p.option.replica.tp} for "
        f"{d.tokens_per_day:.3g} tokens/day: {f.accelerators_needed:,} accelerators at the peak, "
        f"{f.accelerators_provisioned:,} provisioned in {len(f.clusters)} clusters over {len(summary.regions)} "
        "region(s) (any one cluster can be lost and the rest carry the peak)",
        f"  {'region':<14}{'clusters':>9}{'nodes each':>12}{'replicas each':>15}{'accelerators':>14}"
        f"{'expected $/month':>19}{'ceiling $/month':>18}",
    ]
    for r in summary.regions:
        lines.append(
            f"  {r.region:<14}{r.clusters:>9,}{r.nodes_per_cluster:>12,}{r.replicas_per_cluster:>15,}"
            f"{r.accelerators:>14,}{money(r.monthly_expected_usd):>19}{money(r.monthly_ceiling_usd):>18}"
        )
    nodes = sum(r.clusters * r.nodes_per_cluster for r in summary.regions)
    lines.append(
        f"  {'total':<14}{len(f.clusters):>9,}{f'{nodes:,} nodes':>27}{f.accelerators_provisioned:>14,}"
        f"{money(summary.monthly_expected_usd):>19}{money(summary.monthly_ceiling_usd):>18}"
    )
    lines += [
        f"  ${summary.usd_per_million_total:.2f} per M total tokens (input + output at isl/osl {d.isl}/{d.osl}), "
        f"${summary.usd_per_million_output:.2f} per M output tokens: the expected month on demand, each cluster "
        "carrying its share of the demand by day and night; the ceiling is every provisioned node around the clock",
        f"  stacks: {_stack_names(f)} (--json lists each cluster)",
    ]
    return "\n".join(lines)


def _stack_names(f: Fleet) -> str:
    """``serve-us-east-1-1 .. serve-us-east-1-30, ...``: each region's first and last stack."""
    out = []
    for region in dict.fromkeys(c.region for c in f.clusters):
        names = [c.name for c in f.clusters if c.region == region]
        out.append(names[0] if len(names) == 1 else f"{names[0]} .. {names[-1]}")
    return ", ".join(out)
