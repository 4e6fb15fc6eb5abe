"""``inferctl capacity calibrate --from build/verify/<stack>/verify.json [--stack S]``: fold what verification
measured into the stack's planning factors (planners/planning_factors.py).

From the report's load at the planned concurrency: output tokens/s per replica, TTFT p50 and ITL p50,
at the concurrency per replica and the request shape (isl/osl means) the run used. The planner predicts
the same point (the stack's serving model, precision, TP and KV dtype on the instance type the plan picks,
the serving pool's cheapest: inference_platform.settings.capacity.planned_instance, at that batch and shape, with the stack's current feature factors and unit scales), and
the ratios measured/predicted become ``throughput_scale``, ``ttft_scale`` and ``itl_scale``, each marked
``measured`` with the report it came from. ``inferctl verify`` measures no speculative acceptance or
prefix-cache hit rate yet: those keep their values and their source.

Where the factors go (so plans stay reproducible): the stack file, ``capacity.factors`` in
``stacks/Pulumi.<stack>.yaml`` (``--write-stack``, the default; comments kept), which the next ``make plan``
and the next PR's cost delta read from the committed stack like every other setting, reviewed in the PR
that changes them; and ``build/capacity/<stack>-factors.json`` (``--out``) for ``capacity plan --factors``.
A report from another stack, or one that failed or carried no load, is refused (exit 2).

Only the capacity plan reads the factors: on a stack without ``capacity.tokensPerDay`` (dev) they are
written but change nothing it plans, and calibrate says so in a warning naming ``capacity.tokensPerDay``.
"""

from __future__ import annotations

import argparse
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from inference_platform.errors import CommandError

REPO = Path(__file__).resolve().parents[2]
PREFIX = "inference-platform:"


def register(sub: Any) -> None:
    c = sub.add_parser("calibrate", help="fold a verify.json's measured throughput and latency into planning factors")
    c.add_argument("--from", dest="source", type=Path, required=True, metavar="VERIFY.json",
                   help="the report inferctl verify wrote (build/verify/<stack>/verify.json)")  # fmt: skip
    c.add_argument("--stack", help="stack the report is for (default: the report's own)")
    c.add_argument("--out", type=Path, help="factors JSON (default build/capacity/<stack>-factors.json)")
    c.add_argument("--stack-file", type=Path, help="stack file to write capacity.factors into "
                   "(default stacks/Pulumi.<stack>.yaml)")  # fmt: skip
    c.add_argument("--no-write-stack", dest="write_stack", action="store_false",
                   help="only write the JSON, leave the stack file alone")  # fmt: skip
    c.add_argument("--json", action="store_true", help="print the calibration as JSON")
    c.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    report = _read(args.source)
    stack = args.stack or report.get("stack")
    if not stack:
        raise CommandError("--stack: the report names no stack; give --stack", exit_code=2)
    if report.get("stack") and report["stack"] != stack:
        raise CommandError(f"--stack: the report is for stack {report['stack']!r}, not {stack!r}", exit_code=2)
    from inference_platform.settings import stack_files

    settings = stack_files.load(stack, stack_file=args.stack_file)
    result = calibrate(report, settings, source=str(args.source))
    out = args.out or REPO / "build" / "capacity" / f"{stack}-factors.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(result["factors"].to_json(), encoding="utf-8")
    result["written"] = [str(out)]
    if args.write_stack:
        path = args.stack_file or REPO / "stacks" / f"Pulumi.{stack}.yaml"
        write_stack_factors(path, result["factors"])
        result["written"].append(str(path))
    if args.json:
        print(json.dumps({k: v for k, v in result.items() if k != "factors"} | {"factors": result["factors"].to_dict()},
                         indent=2))  # fmt: skip
    else:
        print(text(result))
    return 0


def _read(path: Path) -> dict[str, Any]:
    try:
        report = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CommandError(f"--from: no such file {path}", exit_code=2) from None
    except (OSError, ValueError) as err:
        raise CommandError(f"--from: {path} is not a verify.json ({err})", exit_code=2) from None
    if not isinstance(report, dict) or not isinstance(report.get("load"), dict):
        raise CommandError(f"--from: {path} has no load section (is it inferctl verify's report?)", exit_code=2)
    return report


def measured_point(report: dict[str, Any]) -> dict[str, float]:
    """What the report measured at its planned concurrency, per replica (raises CommandError if unusable)."""
    load = report["load"]
    at = load.get("at_planned_concurrency") or {}
    verdict = report.get("verdict") or {}
    if verdict.get("passed") is not True:
        raise CommandError("--from: the verification failed; calibrating on a failed run would teach the plan a "
                           "broken cluster", exit_code=2)  # fmt: skip
    if not at.get("succeeded") or not at.get("output_tokens_per_s"):
        raise CommandError("--from: the report has no successful requests at the planned concurrency", exit_code=2)
    replicas = max(1, int(load.get("replicas") or 1))
    config = load.get("config") or {}
    shape = config.get("shape") or {}
    in_flight = max(shape.get("steps") or [shape.get("concurrency") or 1])
    return {
        "replicas": replicas,
        "batch": max(1, round(in_flight / replicas)),
        "isl": max(1, round((config.get("isl") or {}).get("mean", 1))),
        "osl": max(1, round((config.get("osl") or {}).get("mean", 1))),
        "tokens_per_s_per_replica": float(at["output_tokens_per_s"]) / replicas,
        "ttft_ms": float(at["ttft_p50_ms"]),
        "itl_ms": float(at["itl_p50_ms"]),
        "requests": int(at.get("requests") or 0),
        "errors": int(at.get("errors") or 0),
    }


def calibrate(report: dict[str, Any], settings: Any, *, source: str) -> dict[str, Any]:
    """The stack's factors with the report's measurements folded in, and what was compared."""
    from dataclasses import replace

    from inference_platform.planners import latency
    from inference_platform.planners.planning_factors import PlanningFactors, one_line
    from inference_platform.settings import capacity as capacity_settings

    m = measured_point(report)
    serving = settings.serving
    pool = settings.node_pools.root[serving.node_pool]
    current: PlanningFactors = stack_factors(settings)
    # The type the plan prices (its cheapest in the stack's region), so the ratio corrects the plan's figure.
    instance = capacity_settings.planned_instance(pool.instance_types, settings.region.name)
    replica = latency.replica(serving.resolved_architecture(), serving.precision, instance,
                              serving.tensor_parallel, serving.kv_cache.resolved_dtype())  # fmt: skip
    features = replace(latency.Features.from_factors(current), throughput_scale=1.0, ttft_scale=1.0, itl_scale=1.0)
    # measured_point rounds these three to whole tokens and requests.
    workload = latency.Workload(isl=int(m["isl"]), osl=int(m["osl"]))
    predicted = latency.point(replica, workload, int(m["batch"]), features=features)
    when = report.get("started")
    day = datetime.fromtimestamp(when, UTC).strftime("%Y-%m-%d") if isinstance(when, (int, float)) else "undated"
    basis = (f"inferctl verify {source} (stack {settings.stack}, {report.get('url', '?')}, {day}): "
             f"{m['requests']} requests, {m['errors']} errors, {m['batch']} in flight per replica x {m['replicas']}, "
             f"isl/osl {m['isl']}/{m['osl']}, on {replica.node.name} TP{replica.tp}")  # fmt: skip
    ratios = {
        "throughput_scale": m["tokens_per_s_per_replica"] / predicted.tokens_per_s_per_replica,
        "ttft_scale": m["ttft_ms"] / predicted.ttft_ms,
        "itl_scale": m["itl_ms"] / predicted.itl_ms,
    }
    # The stack file's capacity.factors takes one printable line per basis (the report's url is free text),
    # and only ratios in PlanningFactors' ranges: a run 20x off the roofline is a broken run, not a factor.
    try:
        factors = current.with_measured(one_line(basis), **{k: round(v, 4) for k, v in ratios.items()})
    except ValueError as err:
        raise CommandError(f"--from: the report's measurements give no usable factors ({err}); is it this "
                           "stack's run?", exit_code=2) from None  # fmt: skip
    return {
        "stack": settings.stack,
        "measured": m,
        "predicted": {
            "tokens_per_s_per_replica": predicted.tokens_per_s_per_replica,
            "ttft_ms": predicted.ttft_ms,
            "itl_ms": predicted.itl_ms,
        },
        "before": current.to_dict(),
        "factors": factors,
        "not_measured": [
            f for f in ("speculative_acceptance", "prefix_hit_rate") if f not in factors.measured_fields()
        ],
        "warnings": unused_warnings(settings),
    }


def unused_warnings(settings: Any) -> list[str]:
    """Why the written factors change nothing the stack plans. Only the capacity plan reads them (replicas, HPA
    and pool bounds, cost): a stack without capacity.tokensPerDay plans none of that (its replicas and pool
    sizes are as written, and the cold start and autoscaling target do not depend on throughput), so the
    factors are recorded for ``capacity plan --factors`` and for when the stack sets a demand."""
    capacity = getattr(settings, "capacity", None)
    if capacity is not None and capacity.enabled:
        return []
    return [
        f"stack {settings.stack} sets no capacity.tokensPerDay: it plans no replicas, bounds or cost, so these "
        "factors change nothing in its plan (they are recorded; use them with `inferctl capacity plan --factors` "
        "or set capacity.tokensPerDay)"
    ]


def stack_factors(settings: Any) -> Any:
    """The stack's planning factors: ``capacity.factors`` over the modelled defaults."""
    from inference_platform.planners.planning_factors import PlanningFactors

    capacity = getattr(settings, "capacity", None)
    return capacity.planning_factors() if capacity is not None else PlanningFactors()


def write_stack_factors(path: Path, factors: Any) -> None:
    """``inference-platform:capacity.factors`` in the stack file, comments and order kept (ruamel round trip).
    Only fields differing from the modelled defaults are written."""
    from ruamel.yaml import YAML

    from inference_platform.planners.planning_factors import DEFAULT_FACTORS

    yaml = YAML()
    yaml.preserve_quotes = True
    yaml.width = 4096
    yaml.indent(mapping=2, sequence=4, offset=2)
    doc = yaml.load(path.read_text(encoding="utf-8"))
    config = doc.setdefault("config", {})
    capacity = config.get(PREFIX + "capacity")
    if capacity is None:
        capacity = config[PREFIX + "capacity"] = {}
    defaults = DEFAULT_FACTORS.to_dict()
    chosen = {k: v for k, v in factors.to_dict().items() if v != defaults[k]}
    if chosen:
        capacity["factors"] = chosen
    elif "factors" in capacity:
        del capacity["factors"]
    with path.open("w", encoding="utf-8") as out:
        yaml.dump(doc, out)


def text(result: dict[str, Any]) -> str:
    m, p = result["measured"], result["predicted"]
    f = result["factors"]
    lines = [
        f"calibrated stack {result['stack']} from {m['requests']} requests at {m['batch']} in flight per replica "
        f"(isl/osl {m['isl']}/{m['osl']}):",
        f"  output tokens/s per replica: measured {m['tokens_per_s_per_replica']:,.1f}, planner "
        f"{p['tokens_per_s_per_replica']:,.1f} -> throughput_scale {f.throughput_scale.value:g}",
        f"  TTFT p50 ms:                 measured {m['ttft_ms']:,.1f}, planner {p['ttft_ms']:,.1f} -> ttft_scale "
        f"{f.ttft_scale.value:g}",
        f"  ITL p50 ms:                  measured {m['itl_ms']:,.2f}, planner {p['itl_ms']:,.2f} -> itl_scale "
        f"{f.itl_scale.value:g}",
    ]
    if result["not_measured"]:
        lines.append(
            f"  kept as they were (inferctl verify does not measure them): {', '.join(result['not_measured'])}"
        )
    lines += [f"  wrote {w}" for w in result.get("written", [])]
    lines += [f"warning: {w}" for w in result.get("warnings", [])]
    return "\n".join(lines)
