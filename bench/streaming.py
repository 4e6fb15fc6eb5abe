"""What the streaming path costs (issue 27 section 6): the OpenAI server against Triton direct, the edge against none.

One local stack (the real CPU Triton with the production ``tensorrt_llm`` model and the stand-in engine UNPACED: no
first-token, per-token or prefill delay, so the engine is as fast as its Python loop and the path around it shows),
the image's OpenAI server and the real Envoy edge. Each round, paired and interleaved in one process:

- **throughput**: ``--concurrency`` streams of ``--tokens`` tokens each (``ignore_eos``), Triton's
  ``generate_stream`` direct, then the same through the OpenAI server (``/v1/completions``, ``stream``): tokens/s
  each and their ratio (target >= 0.95);
- **CPU per token**: the OpenAI server process's user + system CPU (``/proc/<pid>/stat``) over its run, divided by the
  tokens it streamed (target <= 50 us);
- **added TTFT**: time to first token through the edge (TLS, API key, Envoy, the server, Triton) minus Triton direct,
  p50 at concurrency 1 and 16 (target <= 5 ms), and the server's part of it (plain HTTP to the server, no edge).

Every process (the engine, Triton, the server, Envoy and this client) shares the machine's cores: on 2 cores the
engine's loop is CPU-bound, so whatever the path spends is taken from the engine too, and at concurrency 16 the
requests' own work queues behind each other. The client is aiohttp for that reason (``_session``).

Medians over ``--rounds`` are printed with the targets and written to ``build/bench/streaming.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import ssl
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp

OUT = Path("build/bench/streaming.json")
TARGETS = {"throughput_ratio": 0.95, "cpu_us_per_token": 50.0, "added_ttft_ms_p50": 5.0}
PROMPT = "stream " * 40


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench streaming", description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--tokens", type=int, default=256)
    parser.add_argument("--ttft-requests", type=int, default=40)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)

    from inference_platform.inference_image.testing.cpu_llm_api.local import Timing
    from inference_platform.settings import stack_files
    from tools.local_openai_stack import openai_stack

    rounds: list[dict[str, float]] = []
    with (
        tempfile.TemporaryDirectory(prefix="bench-streaming-") as tmp,
        openai_stack(
            stack_files.load("dev"), Path(tmp), Timing(first_token_delay_ms=0, token_delay_ms=0, prefill_us_per_token=0)
        ) as stack,
    ):
        asyncio.run(_warm(stack))
        for _ in range(args.rounds):
            rounds.append(asyncio.run(_round(stack, args)))
    summary = {key: statistics.median(r[key] for r in rounds) for key in rounds[0]}
    report = {
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "load": os.getloadavg()},
        "settings": vars(args) | {"out": str(args.out)},
        "rounds": rounds,
        "median": summary,
        "targets": TARGETS,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    _print(summary, args)
    return 0


def _session(**kwargs: Any) -> aiohttp.ClientSession:
    """The measuring client: aiohttp, whose per-request CPU (~0.23 ms here) is an eighth of httpx's (~1.9 ms), so 16
    requests sent together leave the client within a few ms of each other and the TTFT measured is the path's,
    not the client's own queue."""
    return aiohttp.ClientSession(
        timeout=aiohttp.ClientTimeout(total=300), connector=aiohttp.TCPConnector(limit=0), **kwargs
    )


async def _warm(stack: Any) -> None:
    async with _session() as http:
        await _triton_stream(http, stack, 8)
        await _openai_stream(http, stack.openai_url, stack.served_model, 8, {})


async def _round(stack: Any, args: argparse.Namespace) -> dict[str, float]:
    async with _session() as http:
        started = time.perf_counter()
        direct = await asyncio.gather(*(_triton_stream(http, stack, args.tokens) for _ in range(args.concurrency)))
        direct_rate = sum(n for n, _ in direct) / (time.perf_counter() - started)
        cpu_before = _cpu_seconds(stack.openai_server.process.pid)
        started = time.perf_counter()
        served = await asyncio.gather(
            *(
                _openai_stream(http, stack.openai_url, stack.served_model, args.tokens, {})
                for _ in range(args.concurrency)
            )
        )
        served_wall = time.perf_counter() - started
        cpu = _cpu_seconds(stack.openai_server.process.pid) - cpu_before
        served_tokens = sum(n for n, _ in served)
        out = {
            "triton_tokens_per_s": direct_rate,
            "server_tokens_per_s": served_tokens / served_wall,
            "throughput_ratio": (served_tokens / served_wall) / direct_rate,
            "cpu_us_per_token": cpu / served_tokens * 1e6,
        }
    edge = {"authorization": f"Bearer {stack.api_key}"}
    trust = ssl.create_default_context(cafile=str(stack.edge.certificates.ca))
    async with _session(headers=edge) as tls, _session() as plain:
        for concurrency in (1, 16):
            direct_ttft, server_ttft, edge_ttft = [], [], []
            for _ in range(max(1, args.ttft_requests // concurrency)):
                got = await asyncio.gather(*(_triton_stream(plain, stack, 4) for _ in range(concurrency)))
                direct_ttft += [t for _, t in got]
                got = await asyncio.gather(
                    *(_openai_stream(plain, stack.openai_url, stack.served_model, 4, {}) for _ in range(concurrency))
                )
                server_ttft += [t for _, t in got]
                got = await asyncio.gather(
                    *(_openai_stream(tls, stack.edge.url, stack.served_model, 4, {}, trust) for _ in range(concurrency))
                )
                edge_ttft += [t for _, t in got]
            direct_p50 = statistics.median(direct_ttft)
            out[f"added_ttft_ms_p50_c{concurrency}"] = (statistics.median(edge_ttft) - direct_p50) * 1e3
            # The same split in two: what the OpenAI server adds alone (plain HTTP to it), the rest is the edge's.
            out[f"server_added_ttft_ms_p50_c{concurrency}"] = (statistics.median(server_ttft) - direct_p50) * 1e3
            out[f"triton_ttft_ms_p50_c{concurrency}"] = direct_p50 * 1e3
    return out


async def _triton_stream(http: aiohttp.ClientSession, stack: Any, tokens: int) -> tuple[int, float]:
    body = {"text_input": PROMPT, "streaming": True, "sampling_param_max_tokens": tokens,
            "sampling_param_ignore_eos": True, "sampling_param_exclude_input_from_output": True}  # fmt: skip
    url = f"{stack.triton_url}/v2/models/tensorrt_llm/generate_stream"
    started, first, count = time.perf_counter(), None, 0
    async with http.post(url, json=body) as response:
        async for raw in response.content:  # aiohttp's StreamReader yields lines
            line = raw.decode()
            if line.startswith("data:"):
                first = first or time.perf_counter()
                value = json.loads(line[5:])["num_output_tokens"]
                count = int(value[0] if isinstance(value, list) else value)
    return count, (first or time.perf_counter()) - started


async def _openai_stream(
    http: aiohttp.ClientSession,
    base: str,
    model: str,
    tokens: int,
    extra: dict[str, Any],
    tls: ssl.SSLContext | None = None,
) -> tuple[int, float]:
    body = {"model": model, "prompt": PROMPT, "max_tokens": tokens, "stream": True, "ignore_eos": True,
            "stream_options": {"include_usage": True}, **extra}  # fmt: skip
    started, first, count = time.perf_counter(), None, 0
    async with http.post(f"{base}/v1/completions", json=body, ssl=tls or True) as response:
        async for raw in response.content:
            line = raw.decode()
            if not line.startswith("data: {"):
                continue
            first = first or time.perf_counter()
            event = json.loads(line[6:])
            if event.get("usage"):
                count = event["usage"]["completion_tokens"]
    return count, (first or time.perf_counter()) - started


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _print(summary: dict[str, float], args: argparse.Namespace) -> None:
    print(
        f"streaming path, unpaced stand-in, {args.concurrency} streams x {args.tokens} tokens, medians of {args.rounds}"
    )
    print(f"  Triton direct      {summary['triton_tokens_per_s']:10.0f} tokens/s")
    print(f"  OpenAI server      {summary['server_tokens_per_s']:10.0f} tokens/s   ratio {summary['throughput_ratio']:.3f}"
          f" (target >= {TARGETS['throughput_ratio']})")  # fmt: skip
    print(f"  server CPU/token   {summary['cpu_us_per_token']:10.1f} us (target <= {TARGETS['cpu_us_per_token']:g})")
    for c in (1, 16):
        print(f"  added TTFT c={c:<3}   {summary[f'added_ttft_ms_p50_c{c}']:10.2f} ms p50 through the edge, "
              f"{summary[f'server_added_ttft_ms_p50_c{c}']:.2f} ms of it the server's "
              f"(Triton direct {summary[f'triton_ttft_ms_p50_c{c}']:.2f} ms; target <= {TARGETS['added_ttft_ms_p50']:g})")  # fmt: skip
