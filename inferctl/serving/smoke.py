"""``inferctl smoke``: prove an endpoint serves the OpenAI API within the stack's SLOs, as a client sees it.

Checks, in order: ``/health``; ``/v1/models`` lists the model; a chat completion (with ``usage``: prompt,
completion and total tokens adding up); --requests streamed chat completions (SSE chunks until ``[DONE]``, the
last with ``usage``); a completion; an unknown model answered in OpenAI's error shape; structured output (a
``response_format`` JSON schema, and ``json_object``) when the stack enables guided decoding. Reports TTFT,
inter-token latency and output tokens/s (medians over the streamed requests, timed per chunk as it arrives and
counted by the final chunk's ``usage``) and compares them with ``serving.slo``.

An ``https`` URL is the edge (TLS ends at the load balancer or the local Envoy): the key goes as
``Authorization: Bearer <key>``, as every OpenAI client sends it. An ``http`` URL is the OpenAI server itself.
Triton's KServe v2 API is not checked here: it is internal (the pods' probes and metrics use it).

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
STRUCTURED_MAX_TOKENS = 256
API_KEY_ENV = "INFERCTL_API_KEY"
KEY_HEADER = "authorization"
"""Where smoke (and verify) send the key: the OpenAI convention, which the edge reads after its own header."""
UNKNOWN_MODEL = "no-such-model"


@dataclass(frozen=True, kw_only=True)
class SmokeConfig:
    url: str
    headers: dict[str, str]
    slo: Any
    """``SloSettings`` of the stack."""
    guided: bool
    model: str | None = None
    """Default: the first model ``/v1/models`` lists (what a client would pick)."""
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
    """API -> LatencySummary"""
    slo_misses: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        out = [f"  ok  {check}" for check in self.checks]
        for api, summary in self.latency.items():
            out.append(f"latency over {api}: " + "; ".join(summary.lines()))
        out.append("SLOs met" if not self.slo_misses else "SLOs missed: " + "; ".join(self.slo_misses))
        return out


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "smoke",
        help=__doc__.splitlines()[0].split(": ", 1)[1],
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--url", required=True, help="https://<edge> or http://<OpenAI server>, e.g. :9000")
    parser.add_argument("--model", help="the model to ask (default: the first /v1/models lists)")
    parser.add_argument("--ca-file", type=Path, help="CA bundle to trust for https (serve-local --edge prints it)")
    parser.add_argument("--stack", default="dev", help="stack whose serving settings (SLOs, guided decoding) apply")
    parser.add_argument("--api-key", help=f"API key (prefer --api-key-file or ${API_KEY_ENV}: argv is visible)")
    parser.add_argument(
        "--api-key-file", type=Path, help="a key, or serve-local --edge's JSON {client: key} (see --client)"
    )
    parser.add_argument("--client", help="which client's key to take from a JSON key file (default: the only one)")
    parser.add_argument("--requests", type=int, default=DEFAULT_REQUESTS, help="streamed requests")
    parser.add_argument(
        "--max-tokens",
        type=int,
        default=DEFAULT_MAX_TOKENS,
        help=f"tokens to generate per request (at least 2; default {DEFAULT_MAX_TOKENS})",
    )
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per request")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from inference_platform.errors import CommandError
    from inference_platform.inferctl.serving.smoke_openai import SmokeFailure
    from inference_platform.loadgen.api_key_header import api_key_headers
    from inference_platform.settings import stack_files

    problems = []
    if args.requests < 1:
        problems.append(f"--requests: got {args.requests}; expected >= 1")
    if args.max_tokens < 2:
        problems.append(f"--max-tokens: got {args.max_tokens}; expected >= 2 (a stream needs two tokens for ITL)")
    if not args.timeout > 0:
        problems.append(f"--timeout: got {args.timeout}; expected > 0 seconds")
    if not args.url.startswith(("http://", "https://")):
        problems.append(f"--url: got {args.url!r}; expected http(s)://host[:port]")
    if problems:
        raise CommandError("bad input: " + "; ".join(problems), exit_code=2)
    settings = stack_files.load(args.stack)
    serving = settings.serving
    config = SmokeConfig(
        url=args.url,
        headers=api_key_headers(KEY_HEADER, api_key(args)),
        model=args.model,
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
        run_smoke(config, report)
    except SmokeFailure as err:
        print("\n".join(report.lines()[: len(report.checks)]))
        raise CommandError(f"smoke failed: {err}", exit_code=EXIT_CHECK_FAILED) from None
    print("\n".join(report.lines()))
    return EXIT_SLO_MISSED if report.slo_misses else 0


def run_smoke(config: SmokeConfig, report: SmokeReport) -> SmokeReport:
    """Run every check, filling ``report``; raises SmokeFailure at the first failed check."""
    from inference_platform.catalog.serving_contract import (
        OPENAI_CHAT_PATH,
        OPENAI_COMPLETIONS_PATH,
        OPENAI_HEALTH_PATH,
        OPENAI_MODELS_PATH,
    )
    from inference_platform.inferctl.serving.smoke_openai import Endpoint, get, post, stream
    from inference_platform.loadgen.latency import slo_misses, summarize

    endpoint = Endpoint(config.url, config.headers, config.timeout, ca_file=config.ca_file)
    status, body = get(endpoint, OPENAI_HEALTH_PATH)
    _require(status == 200, f"GET {OPENAI_HEALTH_PATH}: HTTP {status}: {str(body)[:200]}")
    report.checks.append(f"{OPENAI_HEALTH_PATH} 200")

    status, body = get(endpoint, OPENAI_MODELS_PATH)
    listed = [m.get("id") for m in body.get("data", [])] if status == 200 and isinstance(body, dict) else []
    _require(listed, f"GET {OPENAI_MODELS_PATH}: HTTP {status}, no model listed: {str(body)[:200]}")
    model = config.model or listed[0]
    _require(model in listed, f"GET {OPENAI_MODELS_PATH}: {model!r} is not listed (listed: {', '.join(listed)})")
    report.checks.append(f"{OPENAI_MODELS_PATH}: {', '.join(listed)}")

    messages = [{"role": "user", "content": config.prompt}]
    chat = {"model": model, "messages": messages, "max_tokens": config.max_tokens, "temperature": 0}
    answer = _completion(endpoint, OPENAI_CHAT_PATH, chat)
    content = answer["choices"][0].get("message", {}).get("content") or ""
    _require(content, f"POST {OPENAI_CHAT_PATH}: empty message content")
    report.checks.append(f"chat completion: {len(content)} characters, usage {_usage_line(answer['usage'])}")

    runs = []
    for _ in range(config.requests):
        streamed = stream(endpoint, OPENAI_CHAT_PATH, {**chat, "stream_options": {"include_usage": True}})
        _require(streamed.usage is not None, f"POST {OPENAI_CHAT_PATH} (stream): no usage in the final chunk")
        assert streamed.usage is not None  # _require raised otherwise
        _check_usage(streamed.usage, f"POST {OPENAI_CHAT_PATH} (stream)")
        _require(
            streamed.timing.tokens >= 2,
            f"POST {OPENAI_CHAT_PATH} (stream): {streamed.timing.tokens} token(s), expected several",
        )
        runs.append(streamed)
    last = runs[-1]
    report.checks.append(
        f"chat completion streams x{config.requests}: {len(last.timing.token_times)} chunks, "
        f"{last.timing.tokens} tokens each ({last.text[:40]!r}...)"
    )
    report.latency["chat completions"] = summarize([r.timing for r in runs])

    completion = _completion(
        endpoint, OPENAI_COMPLETIONS_PATH, {"model": model, "prompt": config.prompt, "max_tokens": config.max_tokens}
    )
    text = completion["choices"][0].get("text") or ""
    _require(text, f"POST {OPENAI_COMPLETIONS_PATH}: empty text")
    report.checks.append(f"completion: {len(text)} characters, usage {_usage_line(completion['usage'])}")

    status, body = post(endpoint, OPENAI_CHAT_PATH, {**chat, "model": UNKNOWN_MODEL})
    error = body.get("error") if isinstance(body, dict) else None
    _require(
        status == 404 and isinstance(error, dict) and error.get("message"),
        f"POST {OPENAI_CHAT_PATH} for an unknown model: expected 404 with OpenAI's error object, got HTTP "
        f"{status}: {str(body)[:200]}",
    )
    assert isinstance(error, dict)  # _require raised otherwise
    report.checks.append(f"unknown model: 404 {error.get('code') or error.get('type')}")

    if config.guided:
        _structured(endpoint, chat, report)
    else:
        report.checks.append("structured output: not enabled for this stack (serving.guidedDecoding.backend none)")

    for api, summary in report.latency.items():
        report.slo_misses += [f"{api}: {miss}" for miss in slo_misses(summary, config.slo)]
    return report


def _structured(endpoint: Any, chat: dict[str, Any], report: SmokeReport) -> None:
    """``response_format`` json_schema (the answer must validate) and json_object (it must parse as an object)."""
    import json

    from inference_platform.catalog.serving_contract import OPENAI_CHAT_PATH
    from inference_platform.loadgen.structured import ANSWER_SCHEMA, Guide

    formats = (
        ({"type": "json_schema", "json_schema": {"name": "answer", "schema": ANSWER_SCHEMA}},
         Guide("json_schema", json.dumps(ANSWER_SCHEMA))),
        ({"type": "json_object"}, Guide("json_object", "{}")),
    )  # fmt: skip
    for response_format, guide in formats:
        body = {**chat, "max_tokens": STRUCTURED_MAX_TOKENS, "response_format": response_format}
        body["messages"] = [{"role": "user", "content": "Reply in JSON: " + chat["messages"][0]["content"]}]
        answer = _completion(endpoint, OPENAI_CHAT_PATH, body)
        content = answer["choices"][0].get("message", {}).get("content") or ""
        problem = guide.check(content)
        if problem is None and guide.guide_type == "json_object" and not content.lstrip().startswith("{"):
            problem = f"{content[:80]!r} is not a JSON object"
        _require(problem is None, f"structured output ({response_format['type']}): {problem}")
        report.checks.append(f"structured output ({response_format['type']}): {content[:60]!r}")


def _completion(endpoint: Any, path: str, body: dict[str, Any]) -> dict[str, Any]:
    """A non-streaming answer that must be 200 with choices and a consistent ``usage``."""
    from inference_platform.inferctl.serving.smoke_openai import post

    status, answer = post(endpoint, path, body)
    _require(status == 200 and isinstance(answer, dict), f"POST {path}: HTTP {status}: {str(answer)[:200]}")
    _require(answer.get("choices"), f"POST {path}: no choices: {str(answer)[:200]}")
    _require(isinstance(answer.get("usage"), dict), f"POST {path}: no usage")
    _check_usage(answer["usage"], f"POST {path}")
    return answer


def _check_usage(usage: dict[str, Any], where: str) -> None:
    prompt, completion, total = (usage.get(k) for k in ("prompt_tokens", "completion_tokens", "total_tokens"))
    _require(
        isinstance(prompt, int) and isinstance(completion, int) and prompt > 0 and completion > 0,
        f"{where}: usage without positive prompt/completion token counts: {usage}",
    )
    assert isinstance(prompt, int) and isinstance(completion, int)  # _require raised otherwise
    _require(total == prompt + completion, f"{where}: usage total_tokens {total} != {prompt} + {completion}")


def _usage_line(usage: dict[str, Any]) -> str:
    cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens")
    extra = f", {cached} cached" if cached is not None else ""
    return f"{usage['prompt_tokens']} in + {usage['completion_tokens']} out{extra}"


def _require(condition: Any, message: str) -> None:
    from inference_platform.inferctl.serving.smoke_openai import SmokeFailure

    if not condition:
        raise SmokeFailure(message)


def api_key(args: argparse.Namespace) -> str | None:
    """The key from --api-key-file (a key, or a JSON ``{client: key}`` picked by --client), --api-key or
    ``$INFERCTL_API_KEY``; None without one."""
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
