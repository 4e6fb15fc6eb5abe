"""What the streaming path costs (issue 27 section 6): the OpenAI server against Triton direct, the edge against none.

Two local stacks in turn, each the real CPU Triton with the production ``tensorrt_llm`` model and the stand-in
engine, the image's OpenAI server and the real Envoy edge; each round paired and interleaved in one process.

On the first the engine is UNPACED (no first-token, per-token or prefill delay: as fast as its Python loop, so the
path around it shows):

- **throughput**: ``--concurrency`` streams of ``--tokens`` tokens each (``ignore_eos``), Triton's
  ``generate_stream`` direct and the same through the OpenAI server (``/v1/completions``, ``stream``): tokens/s
  each and their ratio (target >= 0.95), the path sent first alternating round by round; the client reads every
  event of both paths alike and decodes only each stream's last (``_first_and_last``);
- **CPU per token**: the OpenAI server process's user + system CPU (``/proc/<pid>/stat``) over its run, divided by the
  tokens it streamed (target <= 50 us).

On the second the engine is PACED as a GPU decodes (``TTFT_TIMING``: a first token 20 ms after admission, then one
every 10 ms per running request: faster than dev's own inter-token SLO, ``itlP50Ms`` 60, and MLPerf Inference's
Interactive bound, TPOT 40 ms, so a pace a GPU node keeps while the path must stay out of the way), because an
unpaced engine's loop takes all the CPU the path leaves: the first token then waits in the engine's own queue, which
the path's speed changes either way (measured: through the edge 28 ms *sooner* than direct at concurrency 16), and
the difference says nothing about the path:

- **added TTFT**: time to first token through the edge (TLS, API key, Envoy, the server, Triton) minus Triton direct,
  p50 at concurrency 1 and 16 (target <= 5 ms), and the server's part of it (plain HTTP to the server, no edge).
  Concurrency as the benchmark tools define it (aiperf ``--concurrency``: "send requests as fast as possible within
  concurrency"; guidellm ``concurrent``): 16 streams each sending its next request when its last one ended, their
  lengths drawn (seeded, the same for every path) around ``--ttft-tokens`` so the streams fall out of step, each
  request after a drawn pause of up to two token intervals (``_ttft``: so its arrival is not locked to the engine's
  iteration), and each stream's first request (all 16 start together: the ramp) not counted. The thundering herd,
  16 requests sent at the same instant again and again, is reported beside it without a target (``herd_*``): there
  each request's first token waits for the other 15 to pass the path on the same 2 cores, and aiperf's own guide
  names such bursts as what a load pattern should avoid ("Request Rate with Max Concurrency").

Every process (the engine, Triton, the server, Envoy and this client) shares the machine's cores. The client is
aiohttp for that reason (``_session``).

Medians over the rounds (``--throughput-rounds`` of the throughput part, ``--rounds`` of the TTFT part), and the
throughput ratio's quartiles, are printed with the targets and written to ``build/bench/streaming.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import ssl
import statistics
import tempfile
import time
from collections.abc import AsyncIterable
from pathlib import Path
from typing import Any

import aiohttp

OUT = Path("build/bench/streaming.json")
TTFT_TIMING = {"first_token_delay_ms": 20, "token_delay_ms": 10, "prefill_us_per_token": 0}
"""The engine's pace for the TTFT part: a GPU's, not the CPU loop's (module docstring)."""
TTFT_SEED = 27
STREAM_REQUESTS = 6
"""Requests each of the concurrent streams sends in the closed loop (its first, the ramp, not counted)."""
TARGETS = {"throughput_ratio": 0.95, "cpu_us_per_token": 50.0, "added_ttft_ms_p50": 5.0}
PROMPT = "stream " * 40


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench streaming", description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7, help="rounds of the TTFT part")
    parser.add_argument(
        "--throughput-rounds",
        type=int,
        default=61,
        help="rounds of the throughput part (each under a second; one round's ratio ranges 0.6-1.2 here, so many)",
    )
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--tokens", type=int, default=256)
    parser.add_argument("--ttft-requests", type=int, default=40)
    parser.add_argument("--ttft-tokens", type=int, default=64)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)

    from inference_platform.inference_image.testing.cpu_llm_api.local import Timing
    from inference_platform.settings import stack_files
    from tools.local_openai_stack import openai_stack

    rounds: dict[str, list[dict[str, float]]] = {"throughput": [], "ttft": []}
    unpaced = Timing(first_token_delay_ms=0, token_delay_ms=0, prefill_us_per_token=0)
    for part, timing, measure, count in (
        ("throughput", unpaced, _throughput, args.throughput_rounds),
        ("ttft", Timing(**TTFT_TIMING), _ttft, args.rounds),
    ):
        with (
            tempfile.TemporaryDirectory(prefix="bench-streaming-") as tmp,
            openai_stack(stack_files.load("dev"), Path(tmp), timing) as stack,
        ):
            asyncio.run(_warm(stack))
            rounds[part] = [asyncio.run(measure(stack, args, turn)) for turn in range(count)]
    summary = {key: statistics.median(r[key] for r in part) for part in rounds.values() for key in part[0]}
    ratios = [r["throughput_ratio"] for r in rounds["throughput"]]
    quartiles = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else ratios * 3
    summary["throughput_ratio_q1"], summary["throughput_ratio_q3"] = quartiles[0], quartiles[2]
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


async def _throughput(stack: Any, args: argparse.Namespace, turn: int) -> dict[str, float]:
    """Both paths' tokens/s in one round, the one sent first alternating round by round (``turn``): whichever runs
    second meets the machine as the first left it (the caches warm, the collector's debt), for or against it."""

    async def direct(http: aiohttp.ClientSession) -> list[tuple[int, float]]:
        return await asyncio.gather(*(_triton_stream(http, stack, args.tokens) for _ in range(args.concurrency)))

    async def served(http: aiohttp.ClientSession) -> list[tuple[int, float]]:
        return await asyncio.gather(
            *(
                _openai_stream(http, stack.openai_url, stack.served_model, args.tokens, {})
                for _ in range(args.concurrency)
            )
        )

    rates: dict[str, float] = {}
    cpu, served_tokens = 0.0, 0
    async with _session() as http:
        for name in _rotated(("direct", "served"), turn):
            pid = stack.openai_server.process.pid
            cpu_before, started = _cpu_seconds(pid), time.perf_counter()
            streams = await (direct if name == "direct" else served)(http)
            rates[name] = sum(n for n, _ in streams) / (time.perf_counter() - started)
            if name == "served":
                cpu = _cpu_seconds(pid) - cpu_before
                served_tokens = sum(n for n, _ in streams)
    return {
        "triton_tokens_per_s": rates["direct"],
        "server_tokens_per_s": rates["served"],
        "throughput_ratio": rates["served"] / rates["direct"],
        "cpu_us_per_token": cpu / served_tokens * 1e6,
    }


async def _ttft(stack: Any, args: argparse.Namespace, turn: int) -> dict[str, float]:
    out: dict[str, float] = {}
    edge = {"authorization": f"Bearer {stack.api_key}"}
    trust = ssl.create_default_context(cafile=str(stack.edge.certificates.ca))
    async with _session(headers=edge) as tls, _session() as plain:
        paths = {
            "triton": lambda n: _triton_stream(plain, stack, n),
            "server": lambda n: _openai_stream(plain, stack.openai_url, stack.served_model, n, {}),
            "edge": lambda n: _openai_stream(tls, stack.edge.url, stack.served_model, n, {}, trust),
        }
        # Paired: each stream's requests (their lengths and the pauses before them) drawn once, replayed on every path.
        # A pause, up to two of the engine's token intervals, puts each arrival anywhere in the engine's iteration:
        # sent the instant the last answer ended, a request arrives at the same phase of the iteration every time,
        # and a slower path then waits less for the next one (measured: 0.2 ms added at 16, against 3.9 at 1).
        rng = random.Random(TTFT_SEED)
        pause = 2 * TTFT_TIMING["token_delay_ms"] / 1000

        def requests(count: int, tokens: tuple[int, int]) -> list[tuple[int, float]]:
            return [(rng.randint(*tokens), rng.uniform(0, pause)) for _ in range(count)]

        # Concurrency 1: one request after another, 4 tokens each (the first token is all that is timed).
        one_plan = [requests(args.ttft_requests, (4, 4))]
        order = _rotated(tuple(paths), turn)  # which path goes first moves round by round (_throughput)
        one = {name: await _closed_loop(paths[name], one_plan) for name in order}
        _added(out, "", 1, one)
        # Concurrency 16: closed loop, the lengths spread around --ttft-tokens so the streams fall out of step.
        tokens = (args.ttft_tokens // 2, args.ttft_tokens * 3 // 2)
        plan = [requests(STREAM_REQUESTS, tokens) for _ in range(args.concurrency)]
        loop = {name: await _closed_loop(paths[name], plan) for name in order}
        _added(out, "", args.concurrency, loop)
        herd: dict[str, list[float]] = {name: [] for name in paths}
        for _ in range(max(1, args.ttft_requests // args.concurrency)):
            for name in order:
                herd[name] += [t for _, t in await asyncio.gather(*(paths[name](4) for _ in range(args.concurrency)))]
        _added(out, "herd_", args.concurrency, herd)
    return out


def _rotated(names: tuple[str, ...], turn: int) -> tuple[str, ...]:
    """``names`` starting at ``turn`` (mod their number): each goes first in turn, round by round."""
    at = turn % len(names)
    return names[at:] + names[:at]


async def _closed_loop(send: Any, plan: list[list[tuple[int, float]]]) -> list[float]:
    """Time to first token of every request but each stream's first: stream ``i`` sends the requests of ``plan[i]``
    (tokens, the pause before it in seconds) one after another, all streams at once."""

    async def stream(requests: list[tuple[int, float]]) -> list[float]:
        ttfts = []
        for tokens, pause in requests:
            await asyncio.sleep(pause)
            ttfts.append((await send(tokens))[1])
        return ttfts[1:] if len(ttfts) > 1 else ttfts

    return [t for ttfts in await asyncio.gather(*(stream(requests) for requests in plan)) for t in ttfts]


def _added(out: dict[str, float], prefix: str, concurrency: int, ttfts: dict[str, list[float]]) -> None:
    direct_p50 = statistics.median(ttfts["triton"])
    out[f"{prefix}added_ttft_ms_p50_c{concurrency}"] = (statistics.median(ttfts["edge"]) - direct_p50) * 1e3
    # The same split in two: what the OpenAI server adds alone (plain HTTP to it), the rest is the edge's.
    out[f"{prefix}server_added_ttft_ms_p50_c{concurrency}"] = (statistics.median(ttfts["server"]) - direct_p50) * 1e3
    out[f"{prefix}triton_ttft_ms_p50_c{concurrency}"] = direct_p50 * 1e3


async def _triton_stream(http: aiohttp.ClientSession, stack: Any, tokens: int) -> tuple[int, float]:
    body = {"text_input": PROMPT, "streaming": True, "sampling_param_max_tokens": tokens,
            "sampling_param_ignore_eos": True, "sampling_param_exclude_input_from_output": True}  # fmt: skip
    url = f"{stack.triton_url}/v2/models/tensorrt_llm/generate_stream"
    started = time.perf_counter()
    async with http.post(url, json=body) as response:
        first, last = await _first_and_last(response.content, b"data:")
    value = json.loads(last[5:])["num_output_tokens"] if last else 0  # cumulative: the last event's is the total
    return int(value[0] if isinstance(value, list) else value), (
        time.perf_counter() if first is None else first
    ) - started


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
    started = time.perf_counter()
    async with http.post(f"{base}/v1/completions", json=body, ssl=tls or True) as response:
        first, last = await _first_and_last(response.content, b"data: {")
    usage = json.loads(last[6:]).get("usage") if last else None  # include_usage: the last event carries it
    return (usage or {}).get("completion_tokens", 0), (time.perf_counter() if first is None else first) - started


async def _first_and_last(lines: AsyncIterable[bytes], prefix: bytes) -> tuple[float | None, bytes | None]:
    """When the first event starting with ``prefix`` arrived, and the last such event, reading every line.

    The client shares the cores with what it measures, so it does the same small work per event on both paths and
    parses one event per stream: decoding every event made each path pay for its own event format (OpenAI's chunks
    are larger than Triton's), on the cores the engine's loop needs, so the ratio measured the client's parsing too."""
    first, last = None, None
    async for raw in lines:  # aiohttp's StreamReader yields lines
        if raw.startswith(prefix):
            if first is None:
                first = time.perf_counter()
            last = raw
    return first, last


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _print(summary: dict[str, float], args: argparse.Namespace) -> None:
    print(
        f"streaming path, unpaced stand-in, {args.concurrency} streams x {args.tokens} tokens, medians of "
        f"{args.throughput_rounds} rounds (TTFT: of {args.rounds})"
    )
    pace = f"first token {TTFT_TIMING['first_token_delay_ms']} ms, {TTFT_TIMING['token_delay_ms']} ms a token"
    print(f"  (TTFT: the stand-in paced, {pace}; {args.concurrency} streams of about {args.ttft_tokens} tokens)")
    print(f"  Triton direct      {summary['triton_tokens_per_s']:10.0f} tokens/s")
    print(f"  OpenAI server      {summary['server_tokens_per_s']:10.0f} tokens/s   ratio {summary['throughput_ratio']:.3f}"
          f" (quartiles {summary['throughput_ratio_q1']:.3f}-{summary['throughput_ratio_q3']:.3f}; target >= "
          f"{TARGETS['throughput_ratio']})")  # fmt: skip
    print(f"  server CPU/token   {summary['cpu_us_per_token']:10.1f} us (target <= {TARGETS['cpu_us_per_token']:g})")
    for prefix, c, label in (("", 1, f"c={1:<3}"), ("", args.concurrency, f"c={args.concurrency:<3}"),
                             ("herd_", args.concurrency, f"herd {args.concurrency}")):  # fmt: skip
        target = f"target <= {TARGETS['added_ttft_ms_p50']:g}" if not prefix else "all sent at once; no target"
        print(f"  added TTFT {label:<7} {summary[f'{prefix}added_ttft_ms_p50_c{c}']:8.2f} ms p50 through the edge, "
              f"{summary[f'{prefix}server_added_ttft_ms_p50_c{c}']:.2f} ms of it the server's "
              f"(Triton direct {summary[f'{prefix}triton_ttft_ms_p50_c{c}']:.2f} ms; {target})")  # fmt: skip
