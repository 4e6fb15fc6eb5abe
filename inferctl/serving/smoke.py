"""``inferctl smoke``: prove an inference endpoint serves the ensemble contract within the stack's SLOs.

Checks, in order: live/ready, every model ready, the ensemble's metadata; a non-streaming and
streaming generate over HTTP (``/generate``, ``/generate_stream``); the gRPC stream with and without
``stream``; structured output (JSON schema and regex guides) when the stack enables guided
decoding. Reports TTFT, inter-token latency and output tokens/s (medians over --requests streamed
requests per protocol) and compares them with ``serving.slo``.

An ``https`` URL is the edge (TLS ends at the load balancer or the local Envoy; Triton itself never
serves TLS): gRPC then goes to the same host and port over TLS, with the API key as plain metadata.

Exit status: 0 all good, 1 a check failed, 2 bad arguments, 4 SLOs missed.
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

EXIT_CHECK_FAILED = 1
EXIT_SLO_MISSED = 4
DEFAULT_PROMPT = "Inference smoke test: the quick brown fox jumps over the lazy dog."
DEFAULT_REQUESTS = 5
DEFAULT_MAX_TOKENS = 48
API_KEY_ENV = "INFERCTL_API_KEY"
# What clients of NVIDIA's TensorRT-LLM ensemble rely on (a subset of model_repository/client_io.pbtxt).
CONTRACT = {
    "inputs": [
        "text_input",
        "max_tokens",
        "bad_words",
        "stop_words",
        "end_id",
        "pad_id",
        "temperature",
        "top_k",
        "top_p",
        "stream",
        "guided_decoding_guide_type",
        "guided_decoding_guide",
    ],
    "outputs": ["text_output"],
}


@dataclass(frozen=True, kw_only=True)
class SmokeConfig:
    url: str
    grpc_url: str | None
    headers: dict[str, str]
    models: list[str]
    slo: Any
    """``SloSettings`` of the stack."""
    guided: bool
    ca_file: str | None = None
    """Default: the system trust store. CA bundle for ``https`` URLs (a local edge's CA)."""
    requests: int = DEFAULT_REQUESTS
    max_tokens: int = DEFAULT_MAX_TOKENS
    prompt: str = DEFAULT_PROMPT
    timeout: float = 60.0


@dataclass
class SmokeReport:
    checks: list[str] = field(default_factory=list)
    latency: dict[str, Any] = field(default_factory=dict)
    """protocol -> LatencySummary"""
    slo_misses: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        out = [f"  ok  {check}" for check in self.checks]
        for protocol, summary in self.latency.items():
            out.append(f"latency over {protocol}: " + "; ".join(summary.lines()))
        out.append("SLOs met" if not self.slo_misses else "SLOs missed: " + "; ".join(self.slo_misses))
        return out


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "smoke",
        help=__doc__.splitlines()[0].split(": ", 1)[1],
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--url", required=True, help="HTTP(S) endpoint, e.g. http://127.0.0.1:8000")
    parser.add_argument("--grpc-url", help="gRPC host:port (default: the --url host on port 8001 for http URLs)")
    parser.add_argument("--grpc-tls", action="store_true", help="use TLS on the gRPC channel (implied by https)")
    parser.add_argument("--ca-file", type=Path, help="CA bundle to trust for https (serve-local --edge prints it)")
    parser.add_argument("--stack", default="dev", help="stack whose serving settings (SLOs, auth header) apply")
    parser.add_argument("--api-key", help=f"API key (prefer --api-key-file or ${API_KEY_ENV}: argv is visible)")
    parser.add_argument(
        "--api-key-file", type=Path, help="a key, or serve-local --edge's JSON {client: key} (see --client)"
    )
    parser.add_argument("--client", help="which client's key to take from a JSON key file (default: the only one)")
    parser.add_argument("--requests", type=int, default=DEFAULT_REQUESTS, help="streamed requests per protocol")
    parser.add_argument("--max-tokens", type=int, default=DEFAULT_MAX_TOKENS)
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per request")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from inference_platform.inferctl.serving.smoke_http import SmokeFailure
    from inference_platform.loadgen.api_key_header import api_key_headers
    from inference_platform.offline_plan import stack_settings

    from inference_platform.errors import CommandError

    if args.requests < 1 or args.max_tokens < 2:
        raise CommandError("--requests must be >= 1 and --max-tokens >= 2", exit_code=2)
    settings = stack_settings.load(args.stack)
    serving = settings.serving
    key = _api_key(args)
    edge = args.url.startswith("https://")
    headers = api_key_headers(settings.edge.auth.header if edge else serving.auth.header, key)
    config = SmokeConfig(
        url=args.url,
        grpc_url=args.grpc_url or _default_grpc(args.url),
        headers=headers,
        models=smoke_models(serving.llm_model_name, through_edge=edge),
        slo=serving.slo,
        guided=serving.guided_decoding.backend != "none",
        ca_file=str(args.ca_file) if args.ca_file else None,
        requests=args.requests,
        max_tokens=args.max_tokens,
        timeout=args.timeout,
    )
    print(f"smoke {args.url} (stack {args.stack})", flush=True)
    report = SmokeReport()
    try:
        run_smoke(config, report, grpc_tls=args.grpc_tls or edge)
    except SmokeFailure as err:
        print("\n".join(report.lines()[: len(report.checks)]))
        raise CommandError(f"smoke failed: {err}", exit_code=EXIT_CHECK_FAILED) from None
    print("\n".join(report.lines()))
    return EXIT_SLO_MISSED if report.slo_misses else 0


def smoke_models(llm_model_name: str, *, through_edge: bool) -> list[str]:
    """The models whose readiness smoke checks: every model of the repository on Triton itself; through the
    edge (an ``https`` URL) only the public ones, since the gateway refuses every endpoint of the others."""
    from inference_platform.components.catalog.serving_contract import PUBLIC_MODELS

    if through_edge:
        return list(PUBLIC_MODELS)
    return ["ensemble", "preprocessing", "postprocessing", llm_model_name, "tensorrt_llm_bls"]


def run_smoke(config: SmokeConfig, report: SmokeReport, *, grpc_tls: bool = False) -> SmokeReport:
    """Run every check, filling ``report``; raises SmokeFailure at the first failed check."""
    from inference_platform.inferctl.serving.smoke_grpc import stream_generate
    from inference_platform.inferctl.serving.smoke_http import HttpEndpoint, check_health, generate, generate_stream
    from inference_platform.loadgen.latency import slo_misses, summarize
    from inference_platform.loadgen.structured import GUIDES

    http = HttpEndpoint(config.url, config.headers, config.timeout, ca_file=config.ca_file)
    edge = http.tls
    body = {"text_input": config.prompt, "max_tokens": config.max_tokens, "top_k": 1}
    report.checks += check_health(http, config.models, CONTRACT)

    text = generate(http, "ensemble", {**body, "stream": False}).get("text_output", "")
    _require(text, "HTTP generate returned no text_output")
    report.checks.append(f"HTTP generate: {len(text)} characters")

    timings = []
    for _ in range(config.requests):
        streamed, timing = generate_stream(http, "ensemble", {**body, "stream": True})
        _require(timing.tokens >= 2, f"HTTP generate_stream returned {timing.tokens} token(s), expected several")
        timings.append(timing)
    report.checks.append(
        f"HTTP generate_stream x{config.requests}: {timings[-1].tokens} tokens each ({streamed[:40]!r}...)"
    )
    report.latency["HTTP"] = summarize(timings)

    if config.grpc_url:
        grpc_timings = []
        for _ in range(config.requests):
            streamed, timing = stream_generate(
                config.grpc_url,
                headers=config.headers,
                prompt=config.prompt,
                max_tokens=config.max_tokens,
                stream=True,
                timeout=config.timeout,
                tls=grpc_tls,
                ca_file=config.ca_file,
                through_edge=edge,
            )
            _require(timing.tokens >= 2, f"gRPC stream returned {timing.tokens} token(s), expected several")
            grpc_timings.append(timing)
        whole, timing = stream_generate(
            config.grpc_url,
            headers=config.headers,
            prompt=config.prompt,
            max_tokens=config.max_tokens,
            stream=False,
            timeout=config.timeout,
            tls=grpc_tls,
            ca_file=config.ca_file,
            through_edge=edge,
        )
        _require(whole and timing.tokens == 1, f"gRPC with stream=false returned {timing.tokens} responses, expected 1")
        report.checks.append(f"gRPC stream x{config.requests} (stream=true) and stream=false: {len(whole)} characters")
        report.latency["gRPC"] = summarize(grpc_timings)

    if config.guided:
        for guide in GUIDES:
            answer = generate(
                http,
                "ensemble",
                {
                    **body,
                    "max_tokens": 256,
                    "stream": False,
                    "guided_decoding_guide_type": guide.guide_type,
                    "guided_decoding_guide": guide.guide,
                },
            ).get("text_output", "")
            problem = guide.check(answer)
            _require(problem is None, f"structured output ({guide.guide_type}): {problem}")
            report.checks.append(f"structured output ({guide.guide_type}): {answer[:60]!r}")
    else:
        report.checks.append("structured output: not enabled for this stack (serving.guidedDecoding.backend none)")

    for protocol, summary in report.latency.items():
        report.slo_misses += [f"{protocol}: {miss}" for miss in slo_misses(summary, config.slo)]
    return report


def _require(condition: Any, message: str) -> None:
    from inference_platform.inferctl.serving.smoke_http import SmokeFailure

    if not condition:
        raise SmokeFailure(message)


def _api_key(args: argparse.Namespace) -> str | None:
    from inference_platform.errors import CommandError

    if args.api_key_file is not None:
        try:
            text = args.api_key_file.read_text(encoding="utf-8").strip()
        except OSError as err:
            raise CommandError(f"cannot read --api-key-file {args.api_key_file}: {err.strerror}", exit_code=2) from None
        return _client_key(text, args.client) if text.startswith("{") else text
    return args.api_key or os.environ.get(API_KEY_ENV) or None


def _client_key(text: str, client: str | None) -> str:
    """The key of ``client`` in a ``{client: key}`` JSON file (the only one when not named)."""
    import json

    from inference_platform.errors import CommandError

    try:
        keys = json.loads(text)
    except json.JSONDecodeError:
        raise CommandError("--api-key-file starts with '{' but is not JSON {client: key}", exit_code=2) from None
    if client is None and len(keys) == 1:
        return str(next(iter(keys.values())))
    if client not in keys:
        raise CommandError(f"--client must name one of the key file's clients: {', '.join(sorted(keys))}", exit_code=2)
    return str(keys[client])


def _default_grpc(url: str) -> str | None:
    import urllib.parse

    parsed = urllib.parse.urlsplit(url)
    if parsed.hostname is None:
        return None
    if parsed.scheme == "https":  # the edge serves gRPC on its HTTPS listener
        return f"{parsed.hostname}:{parsed.port or 443}"
    if parsed.scheme != "http":
        return None
    return f"{parsed.hostname}:8001"
