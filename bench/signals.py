"""Which autoscaling signal crosses its target first, before the TTFT SLO is missed: load driven up on the local stack.

``inferctl serve-local`` runs the dev stack's repository on the real CPU Triton with the production ``tensorrt_llm``
model, the CPU stand-in engine and the image's OpenAI server; a real Prometheus scrapes Triton every second with the
platform's recording rules. Streaming clients are added one every ``--step-seconds`` (a ramp) up to
``--max-clients``; each measures its time to first token. Every second the benchmark reads, at one instant:

- the ScaledObject's own trigger queries (components/autoscaling/scaled_object.py): requests in flight (active +
  waiting) per replica against the dev stack's derived target, KV-cache replica-equivalents against kvCacheTarget,
  NVIDIA's queue/compute ratio against queueRatioTarget;
- requests waiting for a batch slot (any waiting);
- the p95 of the TTFTs measured over the last ``--window`` seconds.

A signal "crosses" at the first of two consecutive samples at or above its threshold; the SLO is "missed" at the first
of two consecutive windows whose p95 is above ``--ttft-slo-ms``. The lead is the time from a signal's crossing to the
miss (negative: it crossed after). Figures, the full series and the conclusion go to ``build/bench/signals.json``.

What it cannot rank: queued prefill tokens (the token backlog llm-d's recipe scales on) is not published by our
server today; and the stand-in's TTFT rises only from waiting for a batch slot (its prefill is a fixed delay), so
the prefill contention of a real engine with long prompts is not in this measurement (docs/configuration.md "Which
signal").
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import math
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

OUT = Path("build/bench/signals.json")
LOOPBACK = "127.0.0.1"
READY_TIMEOUT = 240.0
NAMESPACE, JOB = "inference", "triton"
PROMPT = "the quick brown fox jumps over the lazy dog " * 8
CONSECUTIVE = 2


@dataclass
class Clients:
    """The load: streaming completions, their TTFTs (when the first token arrived, how long it took) and failures."""

    url: str
    model: str
    max_tokens: int
    stop: threading.Event = field(default_factory=threading.Event)
    ttfts: list[tuple[float, float]] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    threads: list[threading.Thread] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self) -> None:
        thread = threading.Thread(target=self._run, daemon=True)
        self.threads.append(thread)
        thread.start()

    def _run(self) -> None:
        host, port = self.url.removeprefix("http://").split(":")
        body = json.dumps({"model": self.model, "prompt": PROMPT, "max_tokens": self.max_tokens, "stream": True})
        while not self.stop.is_set():
            connection = http.client.HTTPConnection(host, int(port), timeout=120)
            try:
                sent = time.monotonic()
                connection.request("POST", "/v1/completions", body=body, headers={"content-type": "application/json"})
                response = connection.getresponse()
                if response.status != 200:
                    raise RuntimeError(f"HTTP {response.status}: {response.read()[:200]!r}")
                first = None
                for line in response:
                    if first is None and line.startswith(b"data: {"):
                        first = time.monotonic()
                        with self.lock:
                            self.ttfts.append((first, first - sent))
                    if line.startswith(b"data: [DONE]"):
                        break
            except Exception as err:  # recorded, reported
                with self.lock:
                    self.failures.append(f"{type(err).__name__}: {err}")
            finally:
                connection.close()

    def p95(self, since: float) -> tuple[float | None, int]:
        with self.lock:
            recent = [ttft for at, ttft in self.ttfts if at >= since]
        if len(recent) < 5:
            return None, len(recent)
        return statistics.quantiles(recent, n=20, method="inclusive")[18], len(recent)

    def close(self) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(timeout=150)


@dataclass(frozen=True)
class Signal:
    name: str
    query: str
    threshold: float
    source: str


def signals(settings: Any, target_requests: float) -> list[Signal]:
    from inference_platform.components.autoscaling.scaled_object import kv_replica_equivalents
    from inference_platform.components.observability import promql as q
    from inference_platform.components.observability.promql import Scope

    scope = Scope(namespace=NAMESPACE, job=JOB)
    auto = settings.autoscaling
    waiting = f"sum({q.TRT_LLM_REQUESTS}{scope.selector(model=scope.llm_model, request_type='waiting')})"
    return [
        Signal("requests in flight", q.requests_in_flight(scope), target_requests,
               "the ScaledObject's requests trigger at the dev stack's derived target"),
        Signal("requests waiting", waiting, 1.0, "any request waiting for a batch slot"),
        Signal("KV-cache use", kv_replica_equivalents(scope), auto.kv_cache_target,
               "the ScaledObject's kv trigger at autoscaling.kvCacheTarget"),
        Signal("queue/compute ratio", q.queue_compute_ratio(scope), auto.queue_ratio_target,
               "NVIDIA's triton:queue_compute:ratio at autoscaling.queueRatioTarget"),
    ]  # fmt: skip


def first_crossing(samples: Sequence[Mapping[str, Any]], key: str, threshold: float) -> int | None:
    """Index of the first of ``CONSECUTIVE`` samples whose ``key`` is at or above ``threshold`` (None: never)."""
    run = 0
    for i, sample in enumerate(samples):
        value = sample.get(key)
        run = run + 1 if value is not None and value >= threshold else 0
        if run == CONSECUTIVE:
            return i - CONSECUTIVE + 1
    return None


@contextlib.contextmanager
def serve_local(work: Path, first_token_ms: int, token_ms: int) -> Iterator[tuple[str, str]]:
    """``inferctl serve-local --stack dev`` on free ports: (OpenAI URL, Triton metrics host:port)."""
    from inference_platform.processes import die_with_parent, free_port, stop_group

    ports = {flag: free_port() for flag in ("--http-port", "--grpc-port", "--metrics-port", "--openai-port")}
    argv = [sys.executable, "-m", "inference_platform.inferctl", "serve-local", "--stack", "dev",
            "--first-token-delay-ms", str(first_token_ms), "--token-delay-ms", str(token_ms),
            "--work-dir", str(work / "serve-local"), *[str(v) for kv in ports.items() for v in kv]]  # fmt: skip
    log = work / "serve-local.log"
    with open(log, "wb") as output:
        process = subprocess.Popen(argv, stdout=output, stderr=subprocess.STDOUT, start_new_session=True,
                                   preexec_fn=die_with_parent())  # fmt: skip
        try:
            url = f"http://{LOOPBACK}:{ports['--openai-port']}"
            _wait_ready(process, f"{url}/health", log)
            yield url, f"{LOOPBACK}:{ports['--metrics-port']}"
        finally:
            process.send_signal(signal.SIGINT)
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=60)
            stop_group(process, 30)


def _wait_ready(process: subprocess.Popen[bytes], url: str, log: Path) -> None:
    deadline = time.monotonic() + READY_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"serve-local exited with {process.returncode}: {log.read_text()[-2000:]}")
        with (
            contextlib.suppress(urllib.error.URLError, ConnectionError, TimeoutError, OSError),
            urllib.request.urlopen(url, timeout=2) as response,
        ):
            if response.status == 200:
                return
        time.sleep(1)
    raise RuntimeError(f"serve-local not ready within {READY_TIMEOUT:g} s: {log.read_text()[-2000:]}")


def measure(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    import yaml

    from inference_platform.components.observability.promql import Scope
    from inference_platform.components.observability.rules import RuleSet, rule_groups, rules_file
    from inference_platform.settings import derived, stack_files
    from tools.prometheus_server import Target, running_prometheus

    settings = stack_files.load("dev")
    target = derived.target_requests(settings)
    chosen = signals(settings, target)
    rules = work / "rules.yml"
    rules.write_text(yaml.safe_dump(rules_file(rule_groups(RuleSet(scope=Scope(namespace=NAMESPACE, job=JOB)))),
                                    sort_keys=False))  # fmt: skip
    prometheus = shutil.which("prometheus")
    if prometheus is None:
        raise SystemExit("bench signals needs prometheus (make system-deps)")
    from inference_platform.processes import free_port

    samples: list[dict[str, Any]] = []
    with serve_local(work, args.first_token_ms, args.token_ms) as (url, metrics):
        scrape = Target(JOB, metrics, {"namespace": NAMESPACE, "pod": "triton-local-0", "service": JOB})
        with running_prometheus(Path(prometheus), work / "prometheus", free_port(), [scrape], [rules]) as prom:
            clients = Clients(url, settings.serving.served_model_name, args.max_tokens)
            started = time.monotonic()
            try:
                next_client = started
                while len(clients.threads) < args.max_clients or time.monotonic() - started < args.hold_seconds:
                    now = time.monotonic()
                    if len(clients.threads) < args.max_clients and now >= next_client:
                        clients.add()
                        next_client += args.step_seconds
                    at = time.time()
                    row: dict[str, Any] = {"t": round(now - started, 2), "clients": len(clients.threads)}
                    for s in chosen:
                        result = prom.query(s.query, at=at)
                        row[s.name] = float(result[0]["value"][1]) if len(result) == 1 else None
                    p95, n = clients.p95(now - args.window)
                    row["ttft_p95_ms"] = None if p95 is None else round(p95 * 1000, 1)
                    row["ttft_samples"] = n
                    samples.append(row)
                    time.sleep(max(0.0, 1.0 - (time.monotonic() - now)))
            finally:
                clients.close()
    missed = first_crossing(samples, "ttft_p95_ms", args.ttft_slo_ms + 1e-9)
    crossings = []
    for s in chosen:
        index = first_crossing(samples, s.name, s.threshold)
        lead = None if index is None or missed is None else samples[missed]["t"] - samples[index]["t"]
        crossings.append({
            "signal": s.name, "threshold": s.threshold, "source": s.source, "query": s.query,
            "crossed_at_s": None if index is None else samples[index]["t"],
            "clients_at_crossing": None if index is None else samples[index]["clients"],
            "lead_s": None if lead is None else round(lead, 1),
        })  # fmt: skip
    return {
        "conditions": (
            f"dev stack (maxBatchSize {settings.serving.max_batch_size}) on serve-local, stand-in first token "
            f"{args.first_token_ms} ms and {args.token_ms} ms per token, {args.max_tokens} tokens per request, one "
            f"client added every {args.step_seconds:g} s up to {args.max_clients}, Prometheus scraping every 1 s, "
            f"{os.cpu_count()} CPUs, Python {platform.python_version()}, {datetime.now(UTC):%Y-%m-%d}"
        ),
        "ttft_slo_ms": args.ttft_slo_ms,
        "slo_missed_at_s": None if missed is None else samples[missed]["t"],
        "clients_at_miss": None if missed is None else samples[missed]["clients"],
        "crossings": crossings,
        "requests_failed": len(clients.failures),
        "first_failures": clients.failures[:3],
        "samples": samples,
    }


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench signals", description=__doc__.splitlines()[0])
    parser.add_argument("--max-clients", type=int, default=56, help="clients at the top of the ramp (default 56)")
    parser.add_argument("--step-seconds", type=float, default=2.0, help="one more client every this many s")
    parser.add_argument("--hold-seconds", type=float, default=150.0, help="run at least this long (default 150)")
    parser.add_argument("--max-tokens", type=int, default=32, help="tokens per request (default 32)")
    parser.add_argument("--first-token-ms", type=int, default=50, help="stand-in prefill delay (default 50)")
    parser.add_argument("--token-ms", type=int, default=20, help="stand-in delay per token (default 20)")
    parser.add_argument("--window", type=float, default=10.0, help="TTFT p95 window in s (default 10)")
    parser.add_argument("--ttft-slo-ms", type=float, default=1000.0, help="TTFT p95 SLO for the stand-in (1000)")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-signals-") as tmp:
        result = measure(args, Path(tmp))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"TTFT p95 SLO {result['ttft_slo_ms']:g} ms missed at {result['slo_missed_at_s']} s "
          f"({result['clients_at_miss']} clients); {result['requests_failed']} requests failed")  # fmt: skip
    print(f"{'signal':<22} {'threshold':>9} {'crossed at':>10} {'clients':>7} {'lead':>7}")
    for c in result["crossings"]:
        crossed = "never" if c["crossed_at_s"] is None else f"{c['crossed_at_s']:g} s"
        lead = "-" if c["lead_s"] is None else f"{c['lead_s']:+g} s"
        clients = "-" if c["clients_at_crossing"] is None else str(c["clients_at_crossing"])
        print(f"{c['signal']:<22} {c['threshold']:>9g} {crossed:>10} {clients:>7} {lead:>7}")
    print(f"({result['conditions']}); written to {args.out}")
    return 0 if result["requests_failed"] == 0 and math.isfinite(result["ttft_slo_ms"]) else 1
