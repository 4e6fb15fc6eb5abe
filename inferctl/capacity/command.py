"""`inferctl capacity throughput|plan|calibrate|cold-start|fleet`: the planner on the command line (exit 2 on bad input, naming
the flag; exit 3 when ``plan`` needs more nodes than one pool of one cluster holds: use ``fleet``)."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any

from inference_platform.errors import CommandError

# PlanningError.field -> the flag that sets it.
FLAGS: dict[str, str] = {
    "tokens_per_day": "--tokens-per-day",
    "isl": "--isl",
    "osl": "--osl",
    "peak_factor": "--peak-factor",
    "night_fraction": "--night-fraction",
    "night_hours": "--night-hours",
    "accelerator": "--accelerator",
    "model": "--model",
    "tp": "--tp",
    "slo": "--slo-ttft-ms/--slo-itl-ms",
    "price_per_million_output": "--price-per-m-output",
    "price_per_million_input": "--price-per-m-input",
    "spot_factor": "--spot-factor",
    "reserved_factor": "--reserved-factor",
    "scaling_target": "--scaling-target",
    "region_quota": "--region-quota",
    "max_nodes_per_cluster": "--max-nodes-per-cluster",
    "region": "--region",
}
_SUFFIX = {"": 1, "K": 1e3, "M": 1e6, "G": 1e9, "B": 1e9, "T": 1e12, "P": 1e15}


def tokens(text: str) -> float:
    """``1e12``, ``150T``, ``500G``/``500B``, ``2.5M``: a token count."""
    match = re.fullmatch(r"\s*([0-9.eE+-]+)\s*([KMGBTP]?)\s*", text.upper())
    if not match:
        raise argparse.ArgumentTypeError(f"not a token count: {text!r} (e.g. 1e12, 150T, 500G)")
    try:
        return float(match.group(1)) * _SUFFIX[match.group(2)]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a token count: {text!r} (e.g. 1e12, 150T, 500G)") from None


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("capacity", help="plan GPUs, replicas and cost from tokens/day and an SLO")
    sub = parser.add_subparsers(dest="capacity_command", required=True, metavar="SUBCOMMAND")

    t = sub.add_parser("throughput", help="output tokens/s of one replica at the best batch meeting the SLO")
    _model_flags(t)
    t.add_argument("--accelerator", required=True, help="chip (h100, h200, b200, l40s, ...) or instance type")
    t.add_argument("--tp", type=int, required=True, help="tensor-parallel degree")
    t.add_argument("--isl", type=int, required=True, help="input tokens per request")
    t.add_argument("--osl", type=int, required=True, help="output tokens per request")
    t.add_argument(
        "--scenario",
        choices=("offline", "server"),
        default="server",
        help="server: under the latency SLO (default); offline: the throughput ceiling",
    )
    t.add_argument("--ttft-ms", type=float, help="time-to-first-token target (server scenario)")
    t.add_argument("--itl-ms", type=float, help="inter-token latency target (server scenario)")
    t.add_argument("--json", action="store_true", help="print one JSON object")
    t.add_argument("--plot", type=Path, metavar="FILE.png", help="draw tokens/s per GPU vs batch with the SLO")
    t.set_defaults(handler=run_throughput)

    p = sub.add_parser("plan", help="replicas, GPUs, pool sizes and cost for a daily token volume")
    _model_flags(p)
    _demand_flags(p)
    group = p.add_mutually_exclusive_group(required=True)
    group.add_argument("--accelerator", help="chip or instance type to plan on")
    group.add_argument("--compare", action="store_true", help="rank every accelerator by $/M tokens at the SLO")
    p.add_argument("--price-per-m-input", type=float, help="selling price per million input tokens (margin)")
    p.add_argument("--price-per-m-output", type=float, help="selling price per million output tokens (margin)")
    p.add_argument("--price-per-m-tokens", type=float, help=argparse.SUPPRESS)  # refused: see _plan_kwargs
    p.add_argument(
        "--factors",
        type=Path,
        metavar="FILE.json",
        help="planning factors (PlanningFactors JSON, e.g. written by capacity calibrate)",
    )
    p.add_argument(
        "--speculative-draft-tokens",
        type=int,
        default=0,
        metavar="K",
        help="speculative decoding: draft tokens per step (serving.speculative.draftLength; default 0 = off)",
    )
    p.add_argument(
        "--speculative-acceptance",
        type=float,
        metavar="A",
        help="per-draft acceptance probability (default the planning factors', 0.6 modelled)",
    )
    p.add_argument(
        "--prefix-reuse",
        action="store_true",
        help="KV-cache reuse on (serving.kvCache.enableReuse): cached input tokens skip prefill",
    )
    p.add_argument(
        "--prefix-hit-rate",
        type=float,
        metavar="R",
        help="share of input tokens found in the cache (implies --prefix-reuse; default 0.2 modelled)",
    )
    p.add_argument("--spot-factor", type=float, default=None, help="spot price / on-demand (default 0.45)")  # fmt: skip
    p.add_argument("--reserved-factor", type=float, default=None, help="reserved price / on-demand (default 0.65)")
    p.add_argument("--region", default="us-east-1", help="price table region (default us-east-1)")
    p.add_argument(
        "--stack",
        metavar="NAME",
        help="show the stack's monthly token budgets (edge.tokenLimits) beside the plan; warn when they exceed it",
    )
    p.add_argument("--json", action="store_true", help="print the plan as JSON")
    p.add_argument("--plot", type=Path, metavar="FILE.png", help="draw throughput vs batch and cost vs tokens/day")
    from inference_platform.inferctl.capacity import cold_start as cold_start_flags

    cold_start_flags.add_flags(p)
    p.set_defaults(handler=run_plan)

    from inference_platform.inferctl.capacity import calibrate

    calibrate.register(sub)
    cold_start_flags.register(sub)

    f = sub.add_parser("fleet", help="split a daily volume over clusters and regions with failure headroom")
    _model_flags(f)
    _demand_flags(f)
    f.add_argument("--accelerator", required=True, help="accelerator of every cluster's pool (a catalog name)")
    f.add_argument("--region-quota", action="append", required=True, metavar="REGION=GPUS",
                   help="a region and its accelerator quota; repeat per region")  # fmt: skip
    f.add_argument("--max-nodes-per-cluster", type=int, default=None, help="default 1000")
    f.add_argument("--json", action="store_true", help="print the fleet as JSON")
    f.set_defaults(handler=run_fleet)


def _model_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", required=True, help="catalogued model (Llama-3.1-70B, ...)")
    p.add_argument("--precision", default="fp8", help="weight precision (default fp8)")
    p.add_argument("--kv-dtype", default="fp8", help="KV-cache dtype (default fp8)")


def _demand_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--tokens-per-day", type=tokens, required=True, help="input + output tokens per day (1e12, 150T)")
    p.add_argument("--isl", type=int, required=True, help="mean input (prompt) tokens per request")
    p.add_argument("--osl", type=int, required=True, help="mean output tokens per request")
    p.add_argument("--slo-ttft-ms", type=float, required=True, help="time-to-first-token SLO in ms")
    p.add_argument("--slo-itl-ms", type=float, required=True, help="inter-token latency SLO in ms")
    p.add_argument("--peak-factor", type=float, default=None, help="peak / daily average (default 1.23)")
    p.add_argument("--night-fraction", type=float, default=None, help="night load / day load, in (0, 1]")
    p.add_argument("--night-hours", type=float, default=None, help="hours of night load per day (default 8)")


def _bad(err: Exception, fallback: str) -> CommandError:
    from inference_platform.catalog.prices import PriceError
    from inference_platform.planners.capacity import PlanningError

    if isinstance(err, PlanningError):
        flag = FLAGS.get(err.field, err.field)
    elif isinstance(err, PriceError):
        flag = "--region"
    else:
        flag = fallback
    return CommandError(f"{flag}: {err}", exit_code=2)


def check_flags(checks: list[tuple[str, bool, str]]) -> None:
    """One exit-2 error naming every flag whose value is out of range: (flag, ok, what was given/allowed)."""
    problems = [f"{flag}: {message}" for flag, ok, message in checks if not ok]
    if problems:
        raise CommandError("; ".join(problems), exit_code=2)


def _positive(flag: str, value: float | None, kind: str = "a number > 0") -> tuple[str, bool, str]:
    return flag, value is None or value > 0, f"got {value:g}; expected {kind}" if value is not None else ""


def _demand_checks(args: argparse.Namespace) -> list[tuple[str, bool, str]]:
    night_fraction, night_hours, peak = args.night_fraction, args.night_hours, args.peak_factor
    return [
        _positive("--tokens-per-day", args.tokens_per_day),
        _positive("--isl", args.isl, "an integer >= 1"),
        _positive("--osl", args.osl, "an integer >= 1"),
        _positive("--slo-ttft-ms", args.slo_ttft_ms),
        _positive("--slo-itl-ms", args.slo_itl_ms),
        ("--peak-factor", peak is None or peak >= 1, f"got {peak}; expected a number >= 1"),
        ("--night-fraction", night_fraction is None or 0 < night_fraction <= 1,
         f"got {night_fraction}; expected a fraction in (0, 1]"),
        ("--night-hours", night_hours is None or 0 <= night_hours < 24, f"got {night_hours}; expected [0, 24)"),
    ]  # fmt: skip


def _slo(ttft: float | None, itl: float | None, flags: str) -> Any:
    from inference_platform.planners.latency import Slo

    if ttft is None or itl is None:
        return None
    try:
        return Slo(ttft_ms=ttft, itl_ms=itl)
    except ValueError as err:
        raise CommandError(f"{flags}: {err}", exit_code=2) from None


def _demand(args: argparse.Namespace) -> Any:
    from inference_platform.planners import capacity

    check_flags(_demand_checks(args))
    slo = _slo(args.slo_ttft_ms, args.slo_itl_ms, "--slo-ttft-ms/--slo-itl-ms")
    optional = {
        k: getattr(args, k) for k in ("peak_factor", "night_fraction", "night_hours") if getattr(args, k) is not None
    }
    try:
        return capacity.Demand(tokens_per_day=args.tokens_per_day, isl=args.isl, osl=args.osl, slo=slo, **optional)
    except ValueError as err:
        raise _bad(err, "--tokens-per-day") from None


def run_throughput(args: argparse.Namespace) -> int:
    from inference_platform.catalog.models import SizingError
    from inference_platform.planners import capacity, latency

    check_flags([
        ("--tp", args.tp >= 1, f"got {args.tp}; expected an integer >= 1"),
        _positive("--isl", args.isl, "an integer >= 1"),
        _positive("--osl", args.osl, "an integer >= 1"),
        _positive("--ttft-ms", args.ttft_ms),
        _positive("--itl-ms", args.itl_ms),
        ("--ttft-ms/--itl-ms", args.scenario != "server" or (args.ttft_ms is None) == (args.itl_ms is None),
         "give both targets or neither"),
    ])  # fmt: skip
    slo = _slo(args.ttft_ms, args.itl_ms, "--ttft-ms/--itl-ms") if args.scenario == "server" else None
    try:
        workload = latency.Workload(isl=args.isl, osl=args.osl)
        replica = _replica_for(args.model, args.precision, args.accelerator, args.tp, args.kv_dtype)
        prediction = latency.predict(replica, workload, scenario=args.scenario, slo=slo)
    except capacity.PlanningError as err:
        raise _bad(err, "--accelerator") from None
    except (SizingError, LookupError) as err:
        raise CommandError(f"--model/--precision/--tp: {err}", exit_code=2) from None
    if not prediction.met:
        c = prediction.closest
        first = prediction.sweep[0]
        raise CommandError(
            f"--ttft-ms/--itl-ms: no batch meets TTFT <= {args.ttft_ms:g} ms and ITL <= {args.itl_ms:g} ms on "
            f"{replica.node.name} TP{replica.tp}; the best achievable is TTFT {first.ttft_ms:.0f} ms and ITL "
            f"{first.itl_ms:.1f} ms at batch 1 (closest: batch {c.batch}, TTFT {c.ttft_ms:.0f} ms, ITL "
            f"{c.itl_ms:.1f} ms)",
            exit_code=2,
        )
    out = throughput_json(prediction)
    if args.plot:
        from inference_platform.inferctl.capacity.plots import throughput_plot

        throughput_plot([prediction], args.plot)
        out["plot"] = str(args.plot)
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        print(throughput_text(out))
    return 0


def _replica_for(model: str, precision: str, accelerator: str, tp: int, kv_dtype: str) -> Any:
    """The cheapest node type of the chip (per accelerator-hour) on which ``tp`` is a valid layout."""
    from inference_platform.catalog import models
    from inference_platform.catalog.models import SizingError
    from inference_platform.planners import capacity, latency

    problems = []
    candidates = sorted(capacity.instances_for(accelerator), key=lambda t: t.price_per_accelerator_hour_usd or 0)
    try:
        tp_problem = models.architecture(model).tp_problem(tp)
    except (SizingError, LookupError) as err:
        raise capacity.PlanningError("model", str(err)) from None
    if tp_problem:
        raise capacity.PlanningError("tp", f"{model}: {tp_problem}")
    for node in candidates:
        if tp > node.max_tensor_parallel and node.max_tensor_parallel < 8:
            continue
        try:
            return latency.replica(model, precision, node, tp, kv_dtype)
        except (SizingError, LookupError) as err:
            problems.append(f"{node.name}: {err}")
    raise capacity.PlanningError(
        "model", f"{model} at {precision} does not fit TP {tp} on {accelerator}: " + ("; ".join(problems) or "no node")
    )


def throughput_json(prediction: Any) -> dict[str, Any]:
    best = prediction.best
    r = prediction.replica
    return {
        "model": r.model.name,
        "precision": r.precision,
        "kv_dtype": r.kv_dtype,
        "instance_type": r.node.name,
        "accelerator": r.node.accelerator_model,
        "tp": r.tp,
        "nodes_per_replica": r.nodes,
        "isl": prediction.workload.isl,
        "osl": prediction.workload.osl,
        "scenario": prediction.scenario,
        "slo": {"ttft_ms": prediction.slo.ttft_ms, "itl_ms": prediction.slo.itl_ms} if prediction.slo else None,
        "tokens_per_s_per_accelerator": round(best.tokens_per_s_per_accelerator, 1),
        "tokens_per_s_per_replica": round(best.tokens_per_s_per_replica, 1),
        "batch": best.batch,
        "ttft_ms": round(best.ttft_ms, 1),
        "itl_ms": round(best.itl_ms, 2),
        "decode_bound": best.decode_bound,
        "max_batch": prediction.max_batch,
        "kv_capacity_tokens": prediction.kv_capacity_tokens,
    }


def throughput_text(o: dict[str, Any]) -> str:
    slo = f"TTFT <= {o['slo']['ttft_ms']:g} ms, ITL <= {o['slo']['itl_ms']:g} ms" if o["slo"] else "no latency SLO"
    lines = [
        f"{o['model']} {o['precision']} (KV {o['kv_dtype']}) on {o['instance_type']} TP{o['tp']}, "
        f"{o['isl']}/{o['osl']} tokens, {o['scenario']} ({slo})",
        f"  output tokens/s per accelerator: {o['tokens_per_s_per_accelerator']:,.0f}",
        f"  output tokens/s per replica:     {o['tokens_per_s_per_replica']:,.0f}",
        f"  batch {o['batch']} of at most {o['max_batch']} (KV cache {o['kv_capacity_tokens']:,} tokens); decode "
        f"{o['decode_bound']}-bound",
        f"  predicted TTFT {o['ttft_ms']:,.0f} ms, ITL {o['itl_ms']:.1f} ms",
    ]
    if o.get("plot"):
        lines.append(f"  plot: {o['plot']}")
    return "\n".join(lines)


# Exit code of ``capacity plan`` when the plan is beyond one pool of one cluster (``capacity fleet`` splits it).
EXIT_BEYOND_ONE_CLUSTER = 3


def _plan_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    if getattr(args, "price_per_m_tokens", None) is not None:
        raise CommandError(
            "--price-per-m-tokens: no longer accepted: it priced output tokens only, while public prices charge "
            "input tokens too; give --price-per-m-input and --price-per-m-output (the margin is per million "
            "input + output tokens at --isl:--osl)",
            exit_code=2,
        )
    check_flags([
        ("--price-per-m-input", args.price_per_m_input is None or args.price_per_m_input >= 0,
         f"got {args.price_per_m_input}; expected a price >= 0"),
        ("--price-per-m-output", args.price_per_m_output is None or args.price_per_m_output >= 0,
         f"got {args.price_per_m_output}; expected a price >= 0"),
    ])  # fmt: skip
    return {
        k: v
        for k, v in (
            ("price_per_million_input", args.price_per_m_input),
            ("price_per_million_output", args.price_per_m_output),
            ("spot_factor", args.spot_factor),
            ("reserved_factor", args.reserved_factor),
        )
        if v is not None
    }


def _features(args: argparse.Namespace) -> tuple[Any, Any]:
    """(PlanningFactors, latency.Features) from --factors and the feature flags; exit 2 naming the flag."""
    from inference_platform.planners.latency import Features
    from inference_platform.planners.planning_factors import DEFAULT_FACTORS, Factor, PlanningFactors

    factors = DEFAULT_FACTORS
    if args.factors is not None:
        try:
            factors = PlanningFactors.from_json(args.factors.read_text())
        except OSError as err:
            raise CommandError(f"--factors: cannot read {args.factors}: {err.strerror}", exit_code=2) from None
        except ValueError as err:
            raise CommandError(f"--factors: {args.factors}: {err}", exit_code=2) from None
    check_flags([
        ("--speculative-draft-tokens", 0 <= args.speculative_draft_tokens <= 8,
         f"got {args.speculative_draft_tokens}; expected 0-8 (the engine's max_draft_len range)"),
        ("--speculative-acceptance", args.speculative_acceptance is None or 0 <= args.speculative_acceptance < 1,
         f"got {args.speculative_acceptance}; expected a probability in [0, 1)"),
        ("--prefix-hit-rate", args.prefix_hit_rate is None or 0 <= args.prefix_hit_rate < 1,
         f"got {args.prefix_hit_rate}; expected a share in [0, 1)"),
    ])  # fmt: skip
    given = {}
    if args.speculative_acceptance is not None:
        given["speculative_acceptance"] = Factor(value=args.speculative_acceptance, basis="--speculative-acceptance")
    if args.prefix_hit_rate is not None:
        given["prefix_hit_rate"] = Factor(value=args.prefix_hit_rate, basis="--prefix-hit-rate")
    if given:
        import dataclasses

        factors = dataclasses.replace(factors, **given)
    reuse = args.prefix_reuse or args.prefix_hit_rate is not None
    return factors, Features.from_factors(factors, draft_tokens=args.speculative_draft_tokens, prefix_reuse=reuse)


def run_plan(args: argparse.Namespace) -> int:
    from inference_platform.catalog.models import SizingError
    from inference_platform.inferctl.capacity import cold_start as cold_start_view
    from inference_platform.inferctl.capacity.render import compare_json, compare_text, plan_json, plan_text
    from inference_platform.planners import capacity

    check_flags(cold_start_view.checks(args))
    demand = _demand(args)
    factors, features = _features(args)
    plan_kwargs = {**_plan_kwargs(args), "factors": factors}
    try:
        if args.compare:
            plans = capacity.compare_plans(demand, args.model, args.precision, region=args.region,
                                           kv_dtype=args.kv_dtype, features=features, **plan_kwargs)  # fmt: skip
            if not any(p for _, p, _ in plans):
                reasons = "; ".join(f"{c}: {w}" for c, _, w in plans)
                raise CommandError(f"--slo-ttft-ms/--slo-itl-ms: no accelerator meets the SLO ({reasons})", 2)
            out: dict[str, Any] = compare_json(plans)
            text = compare_text(plans)
        else:
            query = capacity.Query(
                model=args.model, precision=args.precision, accelerator=args.accelerator, workload=demand.workload,
                slo=demand.slo, region=args.region, kv_dtype=args.kv_dtype, features=features)  # fmt: skip
            p, _ = capacity.best_plan(demand, query, **plan_kwargs)
            beyond = capacity.single_pool_problem(p)
            if beyond:
                raise CommandError(
                    f"--tokens-per-day: {beyond}; one pool of one cluster cannot carry it. Split the volume over "
                    "clusters and regions with `inferctl capacity fleet` (same flags, plus --region-quota "
                    "REGION=GPUS per region)",
                    exit_code=EXIT_BEYOND_ONE_CLUSTER,
                )
            chip = p.option.replica.node.accelerator_model
            assert chip is not None  # a plan's node carries accelerators (planners.capacity sizes on them)
            plans = [(chip, p, "")]
            smaller = capacity.smaller_nodes(demand, query, p, **plan_kwargs)
            out = plan_json(p, smaller)
            text = plan_text(p, smaller)
            cold = cold_start_view.for_option(p.option, args)
            out["cold_start"] = cold_start_view.as_json(cold, args.ramp_percent_per_hour)
            text += "\n" + cold_start_view.as_text(cold, args.ramp_percent_per_hour)
    except CommandError:
        raise
    except (SizingError, LookupError) as err:
        raise _bad(err, "--model") from None
    if getattr(args, "stack", None):
        from inference_platform.inferctl.capacity.budgets import budgets_json, budgets_text, stack_budgets

        budgets, weighted = stack_budgets(args.stack)
        out["budgets"] = budgets_json(budgets, args.tokens_per_day, weighted=weighted)
        text += "\n" + budgets_text(out["budgets"])
    if args.plot:
        from inference_platform.inferctl.capacity.plots import plan_plot

        plan_plot([p for _, p, _ in plans if p], args.plot)
        out["plot"] = str(args.plot)
        text += f"\nplot: {args.plot}"
    print(json.dumps(out, indent=2) if args.json else text)
    return 0


def run_fleet(args: argparse.Namespace) -> int:
    from inference_platform.catalog.models import SizingError
    from inference_platform.inferctl.capacity.render import fleet_json, fleet_text
    from inference_platform.planners import capacity

    demand = _demand(args)
    quotas: dict[str, int] = {}
    for item in args.region_quota:
        region, _, count = item.partition("=")
        try:
            quotas[region.strip()] = int(count)
        except ValueError:
            raise CommandError(f"--region-quota: expected REGION=GPUS, got {item!r}", exit_code=2) from None
    try:
        first = next(iter(quotas))
        option = capacity.best_option(capacity.Query(
            model=args.model, precision=args.precision, accelerator=args.accelerator, workload=demand.workload,
            slo=demand.slo, region=first, kv_dtype=args.kv_dtype))  # fmt: skip
        p = capacity.plan(demand, option, region=first)
        limits = {} if args.max_nodes_per_cluster is None else {"max_nodes_per_cluster": args.max_nodes_per_cluster}
        result = capacity.fleet(p, quotas, **limits)
    except (SizingError, LookupError) as err:
        raise _bad(err, "--region-quota") from None
    print(json.dumps(fleet_json(result), indent=2) if args.json else fleet_text(result))
    return 0
