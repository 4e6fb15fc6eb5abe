"""``inferctl verify``: after a rollout, check an endpoint against the stack's SLOs under load.

In order: the smoke checks of the OpenAI API through the given URL (health, models, chat and completions with
usage, streams timed as a client sees them, schema-valid structured output); a short Locust load of streamed chat
completions ramping up to the planned concurrency (per replica x
replicas), judged at that concurrency on TTFT p50/p95, ITL p50/p95, tokens/s, error rate and goodput;
the serving logs (a local log file, or pods through the Kubernetes API); GPU utilisation from
Prometheus when it answers; through an https edge with API keys, that the gateway's per-client rate
limits are in force (one request's X-RateLimit headers: none means its rate-limit service is missing). Prints a one-screen verdict, writes <out>/verify.json, requests.jsonl and
latency.png.

Exit status: 0 every check passed, 1 a check or SLO failed, 2 bad input (the message names the flag).
"""

from __future__ import annotations

import argparse
import json
import math
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

DEFAULT_OUT = Path("build/verify")
INFERENCE_NAMESPACE = "inference"
"""Where the rollouts run (infra/storage.py ``INFERENCE``) when ``--namespace`` is not given."""
SMOKE_REQUESTS = 3


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "verify",
        help=__doc__.splitlines()[0].split(": ", 1)[1],
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--stack", required=True, help="stack whose settings (SLOs, concurrency, auth) apply")
    parser.add_argument("--stack-file", type=Path, help="read the stack's config from this file (as plan does)")
    parser.add_argument(
        "--settings-file",
        type=Path,
        help="the stack's settings document instead of the stack files (the in-cluster Job's ConfigMap)",
    )
    parser.add_argument("--url", required=True, help="endpoint, https://<api> (http only outside production)")
    parser.add_argument("--api-key", help="API key (prefer --api-key-file or $INFERCTL_API_KEY: argv is visible)")
    parser.add_argument("--api-key-file", type=Path, help="a key, or a JSON {client: key} file (see --client)")
    parser.add_argument("--client", help="which client's key to take from a JSON key file")
    parser.add_argument("--ca-file", type=Path, help="CA bundle that signs the endpoint's certificate")
    parser.add_argument("--protocol", default="openai", help="openai (the only one: the OpenAI API)")
    parser.add_argument("--model", help="the OpenAI model id (default: the first GET /v1/models lists)")
    parser.add_argument("--concurrency", type=int, help="requests in flight per replica (default: the stack's)")
    parser.add_argument("--replicas", type=int, help="serving replicas behind the URL (default inference.replicas)")
    parser.add_argument("--rate", type=float, help="offer Poisson arrivals at this many requests/s instead of a ramp")
    parser.add_argument("--duration", type=float, help="seconds of load (default verification.durationSeconds)")
    parser.add_argument("--max-requests", type=int, help="stop after this many (default verification.maxRequests)")
    parser.add_argument("--workers", type=int, default=0, help="Locust worker processes (default 0: one process)")
    parser.add_argument("--timeout", type=float, help="seconds per request (default verification's)")
    parser.add_argument("--log-file", type=Path, help="local server log to check for ERROR/OOM lines")
    parser.add_argument("--log-from-start", action="store_true", help="check the whole log file, not only this run")
    parser.add_argument("--namespace", help="check the serving pods in this namespace through the Kubernetes API")
    parser.add_argument("--selector", default="app.kubernetes.io/name=inference", help="label selector of the pods")
    parser.add_argument("--prometheus-url", help="Prometheus base URL (default verification.prometheusUrl)")
    parser.add_argument(
        "--event-job",
        help="post a Kubernetes Event per canary decision on this Job (in --namespace; the verification Job's own)",
    )
    parser.add_argument("--out", type=Path, help=f"report directory (default {DEFAULT_OUT}/<stack>)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from inference_platform.inferctl.verify.verdict import Verdict
    from inference_platform.settings import stack_files

    settings = (
        stack_files.load_document(args.settings_file, args.stack)
        if args.settings_file is not None
        else stack_files.load(args.stack, stack_file=args.stack_file)
    )
    plan = build_plan(args, settings)
    out = args.out or DEFAULT_OUT / args.stack
    out.mkdir(parents=True, exist_ok=True)
    print(
        f"verify {args.url} (stack {args.stack}): {plan['concurrency_per_replica']} in flight per replica x "
        f"{plan['replicas']} replica(s), {plan['config'].duration_s:g} s, at most {plan['config'].max_requests} "
        "requests",
        flush=True,
    )
    verdict = Verdict()
    report: dict[str, Any] = {"stack": args.stack, "url": args.url, "started": time.time()}
    log_offset = _log_offset(args)

    smoke_ok = _smoke(args, settings, plan, verdict, report)
    draw_chart = None
    if smoke_ok:
        draw_chart = _load(settings, plan, out, verdict, report)
    else:
        verdict.add("load", False, "skipped: the smoke checks failed")
    _rate_limits(args, settings, plan, verdict, report)
    _logs(args, log_offset, verdict, report)
    _gpu(args, settings, report, verdict)
    _canary(args, settings, plan, verdict, report)
    if draw_chart is not None:
        draw_chart(verdict)

    report["verdict"] = verdict.to_dict()
    (out / "verify.json").write_text(json.dumps(report, indent=2, default=str), encoding="utf-8")
    print("\n".join(verdict.lines()))
    print(f"report {out / 'verify.json'}" + (f", chart {report['chart']}" if report.get("chart") else ""))
    return verdict.exit_code


def build_plan(args: argparse.Namespace, settings: Any) -> dict[str, Any]:
    """The load to offer, from flags over the stack's settings; bad input exits 2 naming each flag."""
    from inference_platform.errors import CommandError
    from inference_platform.inferctl.loadtest.command import served_model
    from inference_platform.inferctl.serving.smoke import KEY_HEADER, api_key
    from inference_platform.loadgen.config import DEFAULT_MAX_IN_FLIGHT, LoadConfig, Shape, SizeDistribution

    verification = settings.verification
    problems: list[str] = []
    per_replica = (
        args.concurrency
        if args.concurrency is not None
        else (verification.concurrency_per_replica or settings.serving.max_batch_size)
    )
    replicas = args.replicas if args.replicas is not None else settings.inference.replicas
    if per_replica <= 0:
        problems.append(f"--concurrency: got {per_replica}; expected > 0")
    if replicas <= 0:
        problems.append(f"--replicas: got {replicas}; expected > 0")
    if args.rate is not None and not args.rate > 0:
        problems.append(f"--rate: got {args.rate:g}; expected > 0 requests/s")
    if args.workers < 0:
        problems.append(f"--workers: got {args.workers}; expected >= 0")
    total = max(1, per_replica) * max(1, replicas)
    duration = args.duration if args.duration is not None else float(verification.duration_seconds)
    if args.rate is not None:
        # The planned concurrency is what is judged, not a cap: a Poisson burst may go past it.
        shape = Shape(kind="rate", rate=args.rate, concurrency=max(total, DEFAULT_MAX_IN_FLIGHT))
    else:
        steps = ramp_steps(total)
        shape = Shape(kind="ramp", steps=steps, step_seconds=max(duration, 1e-3) / len(steps))
    guided = settings.serving.guided_decoding.backend != "none"
    key = api_key(args)
    config = LoadConfig(
        url=args.url,
        protocol=args.protocol,
        # Filled from GET /v1/models once the key is known (_served_model), unless given.
        model=args.model or "",
        # The OpenAI convention (Authorization: Bearer), which the edge reads after its own header.
        api_key_header=KEY_HEADER,
        ca_file=str(args.ca_file) if args.ca_file else None,
        shape=shape,
        isl=SizeDistribution(mean=verification.isl.mean, spread=verification.isl.spread),
        osl=SizeDistribution(mean=verification.osl.mean, spread=verification.osl.spread),
        structured_share=verification.structured_share if guided else 0.0,
        max_requests=args.max_requests if args.max_requests is not None else verification.max_requests,
        duration_s=duration,
        timeout_s=args.timeout if args.timeout is not None else verification.request_timeout_seconds,
        workers=max(0, args.workers),
    )
    problems += [
        p
        for p in config.problems(max_duration_s=verification.max_duration_seconds, require_tls=settings.production)
        if not p.startswith(("--concurrency", "--rate", "--workers", "--steps"))
    ]
    if problems:
        raise CommandError("bad input:\n  " + "\n  ".join(problems), exit_code=2)
    if key is None and (settings.serving.auth.enabled or settings.production):
        key = secrets_manager_key(settings)
    if not args.model:
        config = replace(config, model=served_model(config, key))
    return {"config": config, "api_key": key, "concurrency_per_replica": per_replica, "replicas": replicas}


def ramp_steps(total: int) -> tuple[int, ...]:
    """A quarter, half, and all of the planned concurrency (distinct, increasing)."""
    return tuple(sorted({max(1, math.ceil(total / 4)), max(1, math.ceil(total / 2)), total}))


def secrets_manager_key(settings: Any) -> str:
    """The first inference API key from Secrets Manager (``<project>-<stack>/inference/api-key-1-...``)."""
    from inference_platform.errors import CommandError

    prefix = f"{settings.name_prefix}/inference/api-key-1-"
    try:
        import boto3

        client = boto3.client("secretsmanager", region_name=settings.region.name)
        found = client.list_secrets(Filters=[{"Key": "name", "Values": [prefix]}]).get("SecretList", [])
        if not found:
            raise CommandError(f"no secret named {prefix}* in Secrets Manager: pass --api-key-file", exit_code=2)
        return str(client.get_secret_value(SecretId=found[0]["ARN"])["SecretString"])
    except CommandError:
        raise
    except Exception as err:  # botocore's errors (credentials, network, access) all end the same way
        raise CommandError(
            f"no API key given and Secrets Manager failed ({type(err).__name__}: {err}): pass --api-key-file",
            exit_code=2,
        ) from None


def _smoke(args: argparse.Namespace, settings: Any, plan: dict[str, Any], verdict: Any, report: dict) -> bool:
    from inference_platform.inferctl.serving.smoke import SmokeConfig, SmokeReport, run_smoke
    from inference_platform.inferctl.serving.smoke_openai import SmokeFailure
    from inference_platform.loadgen.api_key_header import api_key_headers

    config = plan["config"]
    serving = settings.serving
    smoke = SmokeConfig(
        url=args.url,
        headers=api_key_headers(config.api_key_header, plan["api_key"]),
        model=config.model,
        slo=serving.slo,
        guided=serving.guided_decoding.backend != "none",
        ca_file=config.ca_file,
        requests=SMOKE_REQUESTS,
        timeout=config.timeout_s,
    )
    smoke_report = SmokeReport()
    try:
        run_smoke(smoke, smoke_report)
    except SmokeFailure as err:
        verdict.add("smoke", False, str(err)[:200])
        report["smoke"] = {"checks": smoke_report.checks, "failure": str(err)}
        return False
    structured = next((c for c in smoke_report.checks if c.startswith("structured output")), "")
    verdict.add("smoke", True, f"{len(smoke_report.checks)} checks; {structured[:60]}")
    report["smoke"] = {"checks": smoke_report.checks, "unloaded_slo_notes": smoke_report.slo_misses}
    return True


def _load(settings: Any, plan: dict[str, Any], out: Path, verdict: Any, report: dict) -> Any:
    """Run the load and judge it; returns what draws the chart once the verdict is final (None: no data)."""
    from inference_platform.inferctl.loadtest.chart import latency_chart
    from inference_platform.inferctl.verify.verdict import Limits, judge_load
    from inference_platform.loadgen import records as rec
    from inference_platform.loadgen.runner import print_progress
    from inference_platform.loadgen.runner import run as run_load

    config = _sized(settings, plan["config"], plan["api_key"], report)
    slo, vslo = settings.serving.slo, settings.verification.slo
    goodput_slo = rec.Slo(ttft_ms=vslo.goodput_ttft_ms, itl_ms=vslo.goodput_itl_ms)
    print(f"load: up to {max(config.shape.levels())} in flight for ~{config.duration_s:g} s", flush=True)
    result = run_load(config, out, api_key=plan["api_key"], progress=print_progress)
    levels = rec.by_load(result.records, goodput_slo) if result.records else {}
    planned = max(config.shape.levels())
    final = levels.get(planned)
    if final is None and levels:
        # The planned step never ran (e.g. every request failed early): judge what did run.
        final = levels[max(levels)]
    limits = Limits(
        ttft_p50_ms=slo.ttft_p50_ms,
        ttft_p95_ms=slo.ttft_p95_ms,
        itl_p50_ms=slo.itl_p50_ms,
        itl_p95_ms=vslo.itl_p95_ms,
        min_output_tokens_per_s=slo.min_output_tokens_per_second,
        min_goodput=vslo.min_goodput,
        max_error_rate=vslo.max_error_rate,
        goodput_ttft_ms=vslo.goodput_ttft_ms,
        goodput_itl_ms=vslo.goodput_itl_ms,
    )
    if result.timed_out:
        verdict.add("load bounds", False, f"the load generator overran its wall-time bound ({result.wall_s:.0f} s)")
    unit = "requests/s offered" if config.shape.kind == "rate" else "in flight"
    judged = next((load for load, summary in levels.items() if summary is final), planned)
    scope = f"at the planned {judged:g} {unit}, of {len(result.records)} in the run"
    print(_counts_line(levels, judged, unit, len(result.records)), flush=True)
    judge_load(verdict, final, limits, replicas=plan["replicas"], scope=scope)
    report["load"] = {
        "config": json.loads(config.to_json()),
        "replicas": plan["replicas"],
        "wall_s": result.wall_s,
        "exit_codes": result.exit_codes,
        "records": str(result.records_path),
        "at_planned_concurrency": final.to_dict() if final else None,
        "overall": rec.summarize(result.records, goodput_slo).to_dict() if result.records else None,
        "by_load": {str(k): v.to_dict() for k, v in levels.items()},
        "knee": rec.saturation_knee(levels),
    }
    report["window"] = {"start": min((r.start for r in result.records), default=None), "end": time.time()}
    final_count = levels[judged].requests if judged in levels else 0
    if levels:
        # Drawn once every check has run (run() calls it), so the picture carries the final verdict.
        def draw(final: Any) -> None:
            chart = latency_chart(
                levels,
                out / "latency.png",
                load_label="requests/s offered" if config.shape.kind == "rate" else "requests in flight (all replicas)",
                title=f"{report['url']} ({config.protocol}, {len(result.records)} requests, "
                f"{final_count} at the planned {judged:g} {unit})",
                ttft_slo_ms=slo.ttft_p95_ms,
                itl_slo_ms=vslo.itl_p95_ms,
                ttft_p50_slo_ms=slo.ttft_p50_ms,
                itl_p50_slo_ms=slo.itl_p50_ms,
                verdict=final.passed,
                failed_checks=[c.name for c in final.checks if c.ok is False],
                planned_load=planned,
            )
            report["chart"] = str(chart)

        return draw
    return None


def _counts_line(levels: dict[float, Any], judged: float, unit: str, total: int) -> str:
    """How many requests the run recorded and how they split over its steps: the one count the progress line,
    the checks and the chart each take a part of (issue 28: one run read 69, 55 and 98 requests)."""
    steps = ", ".join(f"{s.requests} at {load:g}" for load, s in levels.items())
    judged_count = levels[judged].requests if judged in levels else 0
    return (
        f"load: {total} requests recorded ({steps} {unit}); the checks judge the {judged_count} at the planned "
        f"{judged:g}"
    )


def _sized(settings: Any, config: Any, api_key: str | None, report: dict) -> Any:
    """``config`` with prompts sized by the served model's tokenizer and clamped to the server's limits."""
    from dataclasses import replace

    from inference_platform.loadgen.api_key_header import api_key_headers
    from inference_platform.loadgen.config import PromptSizing
    from inference_platform.loadgen.tokens import measure_sizing

    serving = settings.serving
    limits = PromptSizing(max_input_tokens=serving.max_input_len, max_seq_len=serving.max_seq_len)
    headers = api_key_headers(config.api_key_header, api_key)
    limits = measure_sizing(config.url, model=config.model, headers=headers, limits=limits, ca_file=config.ca_file)
    report["prompt_sizing"] = {
        "source": limits.source,
        "special_tokens": limits.special_tokens,
        "max_input_tokens": limits.max_input_tokens,
        "max_seq_len": limits.max_seq_len,
    }
    print(f"prompts sized by: {limits.source}; at most {limits.max_input_tokens} tokens (serving.maxInputLen)")
    return replace(config, prompt_sizing=limits)


def _rate_limits(args: argparse.Namespace, settings: Any, plan: dict[str, Any], verdict: Any, report: dict) -> None:
    """Through the edge with a client key, one request must carry the gateway's X-RateLimit headers (or be
    refused with 429): without its rate-limit service the gateway lets every client through unlimited
    (failing open) or answers 500 (failing closed), and neither shows up in the load's latencies."""
    from inference_platform.inferctl.verify.rate_limits import probe
    from inference_platform.loadgen.api_key_header import api_key_headers

    if not args.url.startswith("https://"):
        verdict.add("rate limits", None, "not checked (no gateway: the URL is not https)")
        return
    if not settings.edge.auth.enabled or not plan["api_key"]:
        verdict.add("rate limits", None, "not checked (no client key: limits are per client)")
        return
    config = plan["config"]
    found = probe(args.url, api_key_headers(config.api_key_header, plan["api_key"]), ca_file=config.ca_file)
    report["rate_limits"] = found.to_dict()
    verdict.add("rate limits", found.ok, found.note[:200])


def _canary(args: argparse.Namespace, settings: Any, plan: dict[str, Any], verdict: Any, report: dict) -> None:
    """The canary gate (inferctl/verify/canary_gate.py): promote, hold or roll back, and why; a rollback fails the
    verification (and so the ``pulumi up``) with the reason and the weight to write back (0)."""
    from inference_platform.inferctl.verify.canary_gate import gate, write_back
    from inference_platform.loadgen.api_key_header import api_key_headers

    config = plan["config"]
    headers = api_key_headers(config.api_key_header, plan["api_key"]) if plan["api_key"] else {}
    gated = gate(
        args.url,
        settings,
        headers,
        ca_file=config.ca_file,
        prometheus_url=args.prometheus_url or settings.verification.prometheus_url,
        namespace=args.namespace or INFERENCE_NAMESPACE,
        live_until=report["started"],
    )
    if gated is None:
        return
    decision, live = gated
    report["canary"] = {**decision.as_output(), "live": live.as_output() if live is not None else None}
    if args.event_job:
        report["canary"]["event"] = _canary_event(args, settings, decision)
    report["canary"]["writeBack"] = write_back(decision, args.stack)
    print("record the canary decision in the stack (then pulumi up):\n  " + "\n  ".join(report["canary"]["writeBack"]))
    verdict.add(
        "canary gate",
        decision.action != "rollback",
        f"{decision.action} to {decision.weight} %: {decision.reason}"[:400],
    )


def _canary_event(args: argparse.Namespace, settings: Any, decision: Any) -> str:
    """Post the decision's Event on the Job; what happened, for the report (a failed post never hides the
    decision: the verdict line carries it anyway)."""
    import datetime
    import socket

    from inference_platform.inferctl.verify import canary_events, logs

    canary = settings.models.canary
    manifest = canary_events.event_manifest(
        decision,
        model=canary.model or settings.serving.model,
        version=canary.version,
        namespace=args.namespace or INFERENCE_NAMESPACE,
        job=args.event_job,
        instance=socket.gethostname(),
        now=datetime.datetime.now(datetime.UTC),
    )
    try:
        canary_events.post(logs.kubernetes_api(), manifest)
    except Exception as err:  # no API access: say so in the report, the decision stands
        return f"not posted: {err}"[:300]
    return f"posted {manifest['reason']} on job/{args.event_job}"


def _log_offset(args: argparse.Namespace) -> int:
    if args.log_file is None or args.log_from_start:
        return 0
    try:
        return args.log_file.stat().st_size
    except OSError:
        return 0


def _logs(args: argparse.Namespace, offset: int, verdict: Any, report: dict) -> None:
    from inference_platform.inferctl.verify import logs

    if args.namespace:
        try:
            api = logs.kubernetes_api()
        except Exception as err:  # no kubeconfig / service account: say so, do not pass silently
            verdict.add("logs", False, f"cannot reach the Kubernetes API: {err}")
            return
        found = logs.check_pods(api, args.namespace, args.selector)
    elif args.log_file is not None:
        found = logs.check_log_file(args.log_file, offset=offset)
    else:
        verdict.add("logs", None, "not checked (give --log-file, or --namespace in the cluster)")
        return
    report["logs"] = found.to_dict()
    if not found.checked:
        verdict.add("logs", False, "; ".join(found.notes)[:200])
    elif found.problems:
        verdict.add("logs", False, f"{len(found.problems)} problem(s): {found.problems[0][:150]}")
    else:
        verdict.add("logs", True, f"no ERROR/OOM in {found.source} ({'; '.join(found.notes)})")


def _gpu(args: argparse.Namespace, settings: Any, report: dict, verdict: Any) -> None:
    from inference_platform.inferctl.verify.prometheus import gpu_utilization

    url = args.prometheus_url or settings.verification.prometheus_url
    if not url:
        verdict.add("GPU utilisation", None, "not measured (no --prometheus-url / verification.prometheusUrl)")
        return
    window = report.get("window") or {}
    start, end = window.get("start"), window.get("end") or time.time()
    seconds = int(end - start) if start else int(settings.verification.duration_seconds)
    found = gpu_utilization(url, window_s=max(1, seconds), at=end)
    report["gpu"] = found.to_dict()
    minimum = settings.verification.slo.min_gpu_utilization
    if found.value is None:
        verdict.add("GPU utilisation", None, f"not measured: {found.note}"[:200])
    else:
        ok = found.value >= minimum
        verdict.add(
            "GPU utilisation",
            ok,
            f"{found.value:.0%} {'>=' if ok else '<'} {minimum:.0%} (verification.slo.minGpuUtilization)",
        )
