"""``inferctl loadtest``: distributed load tests on Locust, one worker's ceiling, and worker sizing.

- ``run``: a bounded load (fixed concurrency, Poisson rate, or a stepped ramp) with prompt and output
  sizes from a distribution and structured-output requests mixed in; locally one master and
  ``--workers`` worker processes on 127.0.0.1 (``--role`` runs one role, as the cluster's pods do).
  Writes requests.jsonl (one record per request), report.json and latency.png.
- ``calibrate``: one worker flat out against an Envoy that answers at once: its own ceiling.
- ``size``: workers (and nodes, and their price) for a target request rate.

Exit status: 0 done, 1 the run failed (no request recorded, or the wall-time bound hit), 2 bad input.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from inference_platform.catalog.load_generator import MEASURED_PER_WORKER_RPS

DEFAULT_OUT = Path("build/loadtest")


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "loadtest",
        help=__doc__.splitlines()[0].split(": ", 1)[1],
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")

    run = actions.add_parser("run", help="run a bounded load test")
    run.add_argument("--url", required=True, help="https://<edge> or http://<OpenAI server>")
    run.add_argument("--protocol", default="openai", help="openai (the only one: streamed chat completions)")
    run.add_argument("--model", help="the OpenAI model id (default: the first GET /v1/models lists)")
    run.add_argument("--api-key-file", type=Path, help="file holding the API key (or $INFERCTL_API_KEY)")
    run.add_argument(
        "--api-key-header", default="authorization", help="authorization (Bearer, default) or the edge's own header"
    )
    run.add_argument("--ca-file", type=Path, help="CA bundle that signed the https endpoint's certificate")
    run.add_argument(
        "--shape",
        choices=("concurrency", "rate", "ramp"),
        default="concurrency",
        help="fixed concurrency, a Poisson request rate, or a stepped ramp (default concurrency)",
    )
    run.add_argument("--concurrency", type=int, default=8, help="in flight (concurrency), or the cap (rate)")
    run.add_argument("--rate", type=float, help="Poisson arrivals per second, all workers together (rate)")
    run.add_argument("--steps", help="ramp concurrencies, comma-separated increasing (ramp)")
    run.add_argument("--step-seconds", type=float, default=10.0, help="ramp: seconds per step (default 10)")
    run.add_argument("--isl", default="128:32", help="prompt tokens MEAN[:SPREAD] (default 128:32)")
    run.add_argument("--osl", default="64:16", help="output tokens MEAN[:SPREAD] (default 64:16)")
    run.add_argument("--structured-share", type=float, default=0.0, help="share of structured-output requests")
    run.add_argument("--max-requests", type=int, required=True, help="stop after this many requests (the run's bound)")
    run.add_argument("--duration", type=float, required=True, help="seconds")
    run.add_argument("--timeout", type=float, default=60.0, help="seconds per request")
    run.add_argument("--workers", type=int, default=2, help="worker processes (0: one process, no master)")
    run.add_argument("--seed", type=int, default=0, help="seed of the prompt and size draws (default 0)")
    run.add_argument("--ttft-slo-ms", type=float, help="per-request TTFT limit for goodput")
    run.add_argument("--itl-slo-ms", type=float, help="per-request inter-token latency limit for goodput")
    run.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"report directory (default {DEFAULT_OUT})")
    run.add_argument(
        "--role",
        choices=("all", "master", "worker"),
        default="all",
        help="all: master and workers here; master/worker: this one process (cluster pods)",
    )
    run.add_argument("--master-host", default="127.0.0.1", help="master address (--role master binds, worker dials)")
    run.add_argument(
        "--master-port", type=int, default=5557, help="port the Locust master binds for its workers (default 5557)"
    )
    run.add_argument("--worker-index", type=int, default=0, help="this worker's index (default $JOB_COMPLETION_INDEX)")
    run.add_argument(
        "--expect-workers-seconds",
        type=float,
        default=60.0,
        help="how long the master waits for every worker to connect (default 60; a cold cluster needs more)",
    )
    run.set_defaults(handler=run_command)

    cal = actions.add_parser("calibrate", help="measure one worker's ceiling (requests/s)")
    cal.add_argument("--url", help="endpoint to use instead of the built-in Envoy stub")
    cal.add_argument("--users", type=int, default=64, help="concurrent users of the one worker (default 64)")
    cal.add_argument("--seconds", type=float, default=20.0, help="length of the measurement (default 20)")
    cal.add_argument("--tokens", type=int, default=16, help="streamed events per answer of the stub (default 16)")
    cal.add_argument(
        "--out",
        type=Path,
        default=DEFAULT_OUT / "calibrate",
        help=f"report directory (default {DEFAULT_OUT / 'calibrate'})",
    )
    cal.set_defaults(handler=calibrate_command)

    size = actions.add_parser("size", help="workers needed for a target request rate")
    size.add_argument(
        "--target-rps",
        "--qps",
        type=float,
        default=100_000.0,
        help="request rate to size the workers for (default 100000)",
    )
    size.add_argument(
        "--per-worker-rps",
        type=float,
        default=MEASURED_PER_WORKER_RPS,
        help=f"from `loadtest calibrate` (default {MEASURED_PER_WORKER_RPS:g}, measured here)",
    )
    size.add_argument("--minutes", type=float, default=5.0, help="length of one run, for its cost (default 5)")
    size.add_argument("--utilization", type=float, default=0.7, help="share of the ceiling to plan (default 0.7)")
    size.add_argument("--instance-type", default="m7i.2xlarge", help="worker node type (never a GPU type)")
    size.add_argument("--json", action="store_true", help="print the sizing as JSON")
    size.set_defaults(handler=size_command)


def parse_size(flag: str, text: str) -> Any:
    from inference_platform.errors import CommandError
    from inference_platform.loadgen.config import SizeDistribution

    mean, _, spread = text.partition(":")
    try:
        return SizeDistribution(mean=int(mean), spread=int(spread or 0))
    except ValueError:
        raise CommandError(f"{flag}: got {text!r}; expected MEAN[:SPREAD] in tokens", exit_code=2) from None


def build_config(args: argparse.Namespace) -> Any:
    from inference_platform.errors import CommandError
    from inference_platform.loadgen.config import LoadConfig, Shape

    try:
        steps = tuple(int(s) for s in args.steps.split(",")) if args.steps else ()
    except ValueError:
        raise CommandError(f"--steps: got {args.steps!r}; expected comma-separated integers", exit_code=2) from None
    config = LoadConfig(
        url=args.url,
        protocol=args.protocol,
        model=args.model or "",
        api_key_header=args.api_key_header,
        ca_file=str(args.ca_file) if args.ca_file else None,
        shape=Shape(
            kind=args.shape, concurrency=args.concurrency, rate=args.rate, steps=steps, step_seconds=args.step_seconds
        ),
        isl=parse_size("--isl", args.isl),
        osl=parse_size("--osl", args.osl),
        structured_share=args.structured_share,
        max_requests=args.max_requests,
        duration_s=args.duration,
        timeout_s=args.timeout,
        workers=args.workers,
        seed=args.seed,
    )
    problems = config.problems()
    if (args.ttft_slo_ms is None) != (args.itl_slo_ms is None):
        problems.append("--ttft-slo-ms/--itl-slo-ms: give both or neither")
    if not args.expect_workers_seconds > 0:
        problems.append(f"--expect-workers-seconds: got {args.expect_workers_seconds:g}; expected > 0")
    if args.role != "all" and args.workers < 1:
        problems.append(f"--workers: got {args.workers}; a distributed role needs >= 1 worker")
    if problems:
        raise CommandError("bad input:\n  " + "\n  ".join(problems), exit_code=2)
    return config


def served_model(config: Any, key: str | None) -> str:
    """The first model the endpoint lists: what a client would ask for (exit 2 naming --model without one)."""
    from inference_platform.errors import CommandError
    from inference_platform.loadgen.api_key_header import api_key_headers
    from inference_platform.loadgen.served_model import NoServedModel, served_models

    try:
        headers = api_key_headers(config.api_key_header, key)
        return served_models(config.url, headers, ca_file=config.ca_file, timeout=config.timeout_s)[0]
    except NoServedModel as err:
        raise CommandError(
            f"--model: not given and {config.url} named none ({err}); pass --model", exit_code=2
        ) from None


def run_command(args: argparse.Namespace) -> int:
    from inference_platform.errors import CommandError
    from inference_platform.inferctl.loadtest.chart import latency_chart
    from inference_platform.loadgen import records as rec
    from inference_platform.loadgen.runner import print_progress, run

    config = build_config(args)
    key = _key(args)
    if not config.model:
        config = replace(config, model=served_model(config, key))
    if args.role == "worker":
        return _worker(args, config, key)
    result = run(
        config,
        args.out,
        api_key=key,
        remote_workers=args.role == "master",
        master_host=args.master_host,
        master_port=args.master_port,
        expect_workers_s=args.expect_workers_seconds,
        progress=print_progress,
    )
    if not result.records:
        raise CommandError(f"no request was recorded (Locust logs in {args.out})", exit_code=1)
    slo = rec.Slo(ttft_ms=args.ttft_slo_ms, itl_ms=args.itl_slo_ms) if args.ttft_slo_ms is not None else None
    summary = rec.summarize(result.records, slo)
    levels = rec.by_load(result.records, slo)
    label = "requests/s offered" if config.shape.kind == "rate" else "requests in flight"
    chart = latency_chart(
        levels,
        args.out / "latency.png",
        load_label=label,
        title=f"{config.url} ({config.shape.kind}, {config.workers} worker(s), {summary.requests} requests)",
        ttft_slo_ms=args.ttft_slo_ms,
        itl_slo_ms=args.itl_slo_ms,
    )
    report = {
        "config": json.loads(config.to_json()),
        "summary": summary.to_dict(),
        "by_load": {str(k): v.to_dict() for k, v in levels.items()},
        "knee": rec.saturation_knee(levels) if config.shape.kind == "ramp" else None,
        "wall_s": result.wall_s,
        "exit_codes": result.exit_codes,
        "timed_out": result.timed_out,
    }
    (args.out / "report.json").write_text(json.dumps(report, indent=2), encoding="utf-8")
    print(format_summary(summary, levels, report["knee"], label))
    print(f"records {result.records_path}, report {args.out / 'report.json'}, chart {chart}")
    return 1 if result.timed_out else 0


def format_summary(summary: Any, levels: dict[float, Any], knee: float | None, label: str) -> str:
    def ms(value: float | None) -> str:
        return "n/a" if value is None else f"{value:.1f}"

    lines = [
        f"{summary.requests} requests in {summary.span_s:.1f} s: {summary.request_rate:.2f} req/s, "
        f"{summary.output_tokens_per_s:.1f} output tokens/s, errors {summary.errors} ({summary.error_rate:.1%})",
        f"TTFT p50 {ms(summary.ttft_p50_ms)} ms p95 {ms(summary.ttft_p95_ms)} ms; "
        f"ITL p50 {ms(summary.itl_p50_ms)} ms p95 {ms(summary.itl_p95_ms)} ms",
    ]
    if summary.goodput is not None:
        lines.append(f"goodput {summary.goodput:.1%} ({summary.good_requests_per_s:.2f} good req/s)")
    if len(levels) > 1:
        lines.append(f"{label:>20} | req/s   | tok/s    | TTFT p95 | ITL p95")
        for load, s in levels.items():
            lines.append(
                f"{load:>20g} | {s.request_rate:7.2f} | {s.output_tokens_per_s:8.1f} | {ms(s.ttft_p95_ms):>8} | "
                f"{ms(s.itl_p95_ms):>7}"
            )
        lines.append(f"saturation knee at {knee:g}" if knee is not None else "no saturation knee in these steps")
    for kind, count in list(summary.error_kinds.items())[:3]:
        lines.append(f"  error x{count}: {kind}")
    return "\n".join(lines)


def _worker(args: argparse.Namespace, config: Any, key: str | None) -> int:
    """This process becomes one Locust worker (a worker pod: its index is the Indexed Job's completion
    index) and ends when the master quits."""
    from inference_platform.errors import CommandError
    from inference_platform.loadgen.runner import JOB_INDEX_ENV, locust_argv, role_env

    index = int(os.environ.get(JOB_INDEX_ENV, args.worker_index))
    if not 0 <= index < config.workers:
        raise CommandError(f"--worker-index: got {index}; expected 0-{config.workers - 1} (--workers)", exit_code=2)
    args.out.mkdir(parents=True, exist_ok=True)
    config_path = args.out / "loadtest.json"
    config_path.write_text(config.to_json(), encoding="utf-8")
    argv = locust_argv(config, "worker", master_host=args.master_host, master_port=args.master_port)
    env = role_env(config_path, records=None, api_key=key, worker_index=index)
    os.execve(sys.executable, argv, env)
    return 0  # pragma: no cover - execve does not return


def calibrate_command(args: argparse.Namespace) -> int:
    from inference_platform.inferctl.loadtest.calibrate import calibrate

    found = calibrate(args.out, url=args.url, users=args.users, seconds=args.seconds, tokens=args.tokens)
    s = found.summary
    print(
        f"one worker against {found.endpoint}: {found.requests_per_s:.0f} requests/s "
        f"({s.succeeded} ok, {s.errors} errors in {s.span_s:.1f} s; {found.users} users, "
        f"{found.tokens_per_request} streamed tokens per request; latency p50 {s.latency_p50_ms or 0:.1f} ms)"
    )
    return 0


def size_command(args: argparse.Namespace) -> int:
    from inference_platform.errors import CommandError
    from inference_platform.loadgen.sizing import worker_fleet, workers_needed

    try:
        plan = workers_needed(args.target_rps, args.per_worker_rps, utilization=args.utilization)
        fleet = worker_fleet(plan, args.instance_type)
    except (ValueError, KeyError) as err:
        raise CommandError(str(err).strip("'\""), exit_code=2) from None
    if args.json:
        print(
            json.dumps(
                {
                    "target_rps": plan.target_rps,
                    "per_worker_rps": plan.per_worker_rps,
                    "utilization": plan.utilization,
                    "workers": plan.workers,
                    "instance_type": fleet.instance_type,
                    "workers_per_node": fleet.workers_per_node,
                    "nodes": fleet.nodes,
                    "price_per_hour_usd": round(fleet.price_per_hour_usd, 4),
                    "run_minutes": args.minutes,
                    "price_per_run_usd": round(fleet.price_per_hour_usd * args.minutes / 60, 4),
                }
            )
        )
        return 0
    print(
        f"{plan.target_rps:,.0f} requests/s at {plan.planned_per_worker_rps:,.0f} per worker "
        f"({plan.utilization:.0%} of the measured {plan.per_worker_rps:,.0f}): {plan.workers} workers on "
        f"{fleet.nodes} x {fleet.instance_type} ({fleet.workers_per_node} per node), "
        f"${fleet.price_per_hour_usd:,.2f}/h on demand, ${fleet.price_per_hour_usd * args.minutes / 60:,.2f} "
        f"for a {args.minutes:g}-minute run"
    )
    return 0


def _key(args: argparse.Namespace) -> str | None:
    from inference_platform.errors import CommandError
    from inference_platform.loadgen.config import API_KEY_ENV

    if args.api_key_file is not None:
        try:
            return args.api_key_file.read_text(encoding="utf-8").strip()
        except OSError as err:
            raise CommandError(f"cannot read --api-key-file {args.api_key_file}: {err.strerror}", exit_code=2) from None
    return os.environ.get(API_KEY_ENV) or None
