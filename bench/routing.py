"""``make bench`` routing: the recorded routing trace replayed against N local replicas under each ``edge.routing``
mode, side by side in one run (issue 29).

One set of replicas (``inferctl.serving.replicas``) serves every mode, each mode behind its own local Envoy
rendered from the dev stack's edge policy with that mode. Each mode's replay marks every prompt with the mode's
name at its very start, so no mode reuses another's cached prefixes. Per mode and part of the trace it reports:

- the prefix-cache hit rate: the engines' own cached prompt tokens over all prompt tokens (``usage`` of each
  response, which the stand-in fills from its KV-block cache);
- latency p50/p90/p99 of the short (``max_tokens`` 4) requests, whose time is mostly prefill: prefill is what the
  cache saves (the stand-in's prefill grows with the prompt tokens its cache does not hold);
- throughput (requests/s at the replay's concurrency) and errors;
- per-replica spread (requests per replica) and the peak requests one replica held at once, against Envoy's bound.

Then the shared part at equal offered load (bench/routing_load.py). Where ``envoy`` mode puts each system prompt is a
draw: Maglev hashes the affinity key onto a table built from the replicas' addresses, and with 8 prompts per replica
one replica may get twice another's. So that mode's shared part and ladder run on ``--placements`` draws (a new mark
moves every key: the same replicas, the prompts placed anew), and its equal-load figures are their median, each draw
printed and written beside it.

Written to ``build/bench/routing.json`` (``--out``), which the pull request's comment compares with the base
branch's run when a change touches routing (``inferctl diff --routing-head/--routing-base``; the paths that count are
``bench/routing-paths.txt``; .github/workflows/preview.yml).

The small version in ``make test`` (tests/bench/test_routing_trace.py) asserts only what is deterministic.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import dataclasses
import json
import math
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench import routing_load
from bench.routing_load import nearest_rank
from bench.routing_trace import TraceRequest, distinct_prefix_chars, load, marked

MODES = ("round-robin", "envoy", "inference-pool")
PARTS = ("shared", "hot", "control")
PLACED_MODE = "envoy"
"""The mode whose replica for a prompt is a hash draw (Maglev over the replicas' addresses and the affinity keys),
measured over ``--placements`` draws. Round robin and least request place nothing by key."""
OUT = Path("build/bench/routing.json")
TOKENS_PER_BLOCK = 32
"""The stand-in's KV block (TensorRT-LLM's ``KvCacheConfig.tokens_per_block`` default; cpu_llm_api/kv_cache.py)."""


def fleet_kv_tokens(requests: list[TraceRequest], *, replicas: int, kv_target: float) -> int:
    """Each replica's KV pool for the replay: the fleet sized for the shared part as the stack's autoscaler sizes one,
    holding the part's distinct prefixes (``routing_trace.distinct_prefix_chars``: 24 system prompts and every
    conversation's history, about 120 k tokens) at ``kv_target`` (``autoscaling.kvCacheTarget``, 0.85 in dev) of its
    pools; in whole blocks. That is the regime prefix routing exists for: the distinct prefixes outgrow one replica's
    pool (about 47 k tokens each, 0.4 of them) but fit the fleet's, as a multi-tenant fleet's thousands of system
    prompts outgrow one GPU's pool. Round robin asks every replica to hold all of them; prefix routing asks each for a
    third, if its placement is even. Until 2026-12-07 the pool was a fixed 32 k tokens: the fleet's 96 k then held
    less than the trace it served (every mode evicted, and ``envoy``'s tail at half load was its loaded replica's
    evictions, not a queue). With the stack's own pool (dev: 131 k tokens, ``--kv-tokens 0``) every replica holds
    every prefix, and routing can only lose (balance) or tie."""
    need = distinct_prefix_chars(requests) / (replicas * kv_target)
    return math.ceil(need / TOKENS_PER_BLOCK) * TOKENS_PER_BLOCK


REQUEST_TIMEOUT = 120.0
CLOCK_SLACK_US = 200.0
"""How far apart two of Envoy's workers may stamp the same instant in its access log, in microseconds: each stamps
its own events, and one event's stamp trails the state change it logs (a stream is counted active just before its
first byte goes out)."""
LOG_FLUSH_WAIT = 15.0


@dataclass(frozen=True)
class Outcome:
    status: int
    prompt_tokens: int
    cached_tokens: int
    seconds: float


@dataclass(frozen=True)
class Pick:
    """One replica pick as the edge's access log brackets it, for Envoy's bounded-load rule: the requests its replica
    surely held active at the pick, and the most the whole cluster may have held active then.

    In ``envoy`` mode the pick happens between the request's body being in (the affinity Lua reads the whole body
    before the router runs) and its upstream request beginning (``received_us`` .. ``upstream_wait_us``); a request
    counts as surely held when it was attached before that window and still running after it, and as possibly held
    when it ran at any point of it, each widened by ``CLOCK_SLACK_US``. The bracket holds whatever the order in which
    Envoy's workers opened connections, so the check never blames Envoy for timing it cannot see. Modes that pick
    before the body is in (round robin, least request) have no bound to check."""

    host: str
    host_active: int
    overall_active: int


@dataclass(frozen=True)
class PartResult:
    outcomes: list[Outcome]
    wall_seconds: float
    per_replica: dict[str, int]
    peak_in_flight: dict[str, int]
    picks: tuple[Pick, ...] = ()

    def picks_over_bound(self, *, replicas: int, load_bound_percent: int) -> list[Pick]:
        """The picks Envoy's bounded-load rule forbids: a replica already holding more than its slots
        (``catalog.edge_routing.bounded_load_slots``). Requests waiting for a new upstream connection are not
        active for Envoy, so ``peak_in_flight`` may pass ``load_bound`` while no pick breaks the rule."""
        from inference_platform.catalog.edge_routing import bounded_load_slots

        return [
            pick
            for pick in self.picks
            if pick.host_active
            > bounded_load_slots(
                overall_active=pick.overall_active, replicas=replicas, load_bound_percent=load_bound_percent
            )
        ]

    @property
    def errors(self) -> int:
        return sum(1 for o in self.outcomes if o.status != 200)

    @property
    def hit_rate(self) -> float:
        prompt = sum(o.prompt_tokens for o in self.outcomes)
        return sum(o.cached_tokens for o in self.outcomes) / prompt if prompt else 0.0

    def latency(self, q: float) -> float:
        return nearest_rank([o.seconds for o in self.outcomes if o.status == 200], q)

    @property
    def throughput(self) -> float:
        return len(self.outcomes) / self.wall_seconds if self.wall_seconds else 0.0


def replay(
    url: str,
    *,
    ca: Path,
    keys: Sequence[str],
    model: str,
    requests: Sequence[TraceRequest],
    mark: str,
    concurrency: int,
    access_log: Path,
) -> PartResult:
    """Send ``requests`` in order through the edge at ``url`` (at most ``concurrency`` at once, one connection per
    worker), then read which replica served each from the edge's access log."""
    import httpx

    start_offset = access_log.stat().st_size if access_log.exists() else 0
    clients = [httpx.Client(verify=str(ca), timeout=REQUEST_TIMEOUT) for _ in range(concurrency)]
    by_client = sorted({r.client for r in requests})

    def send(i: int, request: TraceRequest) -> Outcome:
        key = keys[by_client.index(request.client) % len(keys)]
        body = {"model": model, "messages": marked(request, mark), "max_tokens": request.max_tokens}
        began = time.perf_counter()
        try:
            response = clients[i % concurrency].post(
                f"{url}/v1/chat/completions", json=body, headers={"Authorization": f"Bearer {key}"}
            )
        except httpx.HTTPError:
            return Outcome(0, 0, 0, time.perf_counter() - began)
        seconds = time.perf_counter() - began
        if response.status_code != 200:
            return Outcome(response.status_code, 0, 0, seconds)
        usage = response.json().get("usage") or {}
        cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0
        return Outcome(200, int(usage.get("prompt_tokens", 0)), int(cached), seconds)

    began = time.perf_counter()
    try:
        if concurrency == 1:
            outcomes = [send(0, r) for r in requests]
        else:
            with concurrent.futures.ThreadPoolExecutor(concurrency) as pool:
                # Worker i always uses connection i: submit in waves of ``concurrency``.
                outcomes = []
                for at in range(0, len(requests), concurrency):
                    wave = requests[at : at + concurrency]
                    outcomes += list(pool.map(send, range(len(wave)), wave))
    finally:
        for client in clients:
            client.close()
    wall = time.perf_counter() - began
    # Envoy writes its access log out every second (its file flush interval): wait, bounded, for every line.
    deadline = time.monotonic() + LOG_FLUSH_WAIT
    per_replica, peaks, picks = replica_load(access_log, start_offset)
    while sum(per_replica.values()) < len(requests) and time.monotonic() < deadline:
        time.sleep(0.2)
        per_replica, peaks, picks = replica_load(access_log, start_offset)
    return PartResult(outcomes, wall, per_replica, peaks, picks)


@dataclass(frozen=True)
class _Upstream:
    host: str
    received: float
    begin: float
    end: float


def _upstream_requests(entries: Sequence[dict[str, Any]]) -> list[_Upstream]:
    """Each served request's times in microseconds: body in, upstream request begun and ended."""
    requests = []
    for e in entries:
        try:
            start = float(e["start_s"]) * 1e6
            begin = start + float(e["upstream_wait_us"])
            received = min(start + float(e["received_us"]), begin)
            requests.append(_Upstream(e["upstream"], received, begin, begin + float(e["upstream_us"])))
        except (KeyError, TypeError, ValueError):
            continue
    return requests


def _picks(requests: Sequence[_Upstream]) -> tuple[Pick, ...]:
    slack = CLOCK_SLACK_US
    picks = []
    for r in requests:
        others = [o for o in requests if o is not r]
        surely = sum(1 for o in others if o.host == r.host and o.begin < r.received - slack and o.end > r.begin + slack)
        possibly = sum(1 for o in others if o.begin < r.begin + slack and o.end > r.received - slack)
        picks.append(Pick(r.host, surely, possibly))
    return tuple(picks)


def replica_load(access_log: Path, offset: int = 0) -> tuple[dict[str, int], dict[str, int], tuple[Pick, ...]]:
    """Requests per upstream replica, the most upstream requests one held at once, and every pick bracketed for
    Envoy's load-bound rule, from the edge's access log (upstream request intervals in microseconds; Envoy counts a
    host's active request over that span)."""
    entries = []
    with access_log.open("rb") as handle:
        handle.seek(offset)
        for line in handle.read().decode("utf-8", "replace").splitlines():
            with contextlib.suppress(ValueError):
                entries.append(json.loads(line))
    served = [e for e in entries if e.get("upstream") not in (None, "-", "")]
    per_replica = Counter(e["upstream"] for e in served)
    requests = _upstream_requests(served)
    peaks: dict[str, int] = {}
    for host in per_replica:
        events = []
        for r in requests:
            if r.host == host:
                events += [(r.begin, 1), (r.end, -1)]
        # An interval ending exactly where another begins does not overlap it: ends sort first.
        level = peak = 0
        for _, step in sorted(events, key=lambda ev: (ev[0], ev[1])):
            level += step
            peak = max(peak, level)
        peaks[host] = peak
    return dict(per_replica), peaks, _picks(requests)


@contextlib.contextmanager
def mode_edge(policy: Any, mode: str, replicas: Sequence[Any], work_dir: Path) -> Iterator[Any]:
    """The local Envoy in front of ``replicas`` with ``policy`` routed by ``mode``."""
    from inference_platform.inferctl.serving.local_edge import generate_keys, run_edge
    from inference_platform.inferctl.serving.replicas import replicas_upstream
    from inference_platform.processes import free_port

    routed = dataclasses.replace(policy, routing=dataclasses.replace(policy.routing, mode=mode))
    keys = generate_keys(routed)
    with run_edge(
        routed,
        keys=keys,
        upstream=replicas_upstream(replicas),
        work_dir=work_dir / f"edge-{mode}",
        address="127.0.0.1",
        port=free_port(),
        admin_port=free_port(),
    ) as edge:
        yield edge, list(keys.values())


def tenant_clients(policy: Any, trace: dict[str, list[TraceRequest]]) -> Any:
    """``policy`` with one client per tenant of ``trace``, each on the stack's first tier, in the tenants' sorted
    order (the order ``replay`` hands out keys in): the trace's tenants are the edge's clients, as in a multi-tenant
    fleet. Under dev's one client every tenant shared its 16 concurrent streams (the circuit breaker's whole budget,
    ``EdgePolicy.parallel_requests``), and that one client's cap, not the replicas, was what the equal-load replay
    reached first in every mode."""
    from inference_platform.catalog.edge_policy import Client

    first = policy.clients[0]
    tenants = sorted({r.client for requests in trace.values() for r in requests})
    # The first client's token limits too (metered, in the shadow mode the replay runs them in).
    limits = next((c for c in policy.tokens.clients if c.client_id == first.client_id), None)
    tokens = dataclasses.replace(
        policy.tokens,
        clients=tuple(dataclasses.replace(limits, client_id=t) for t in tenants) if limits is not None else (),
    )
    clients = tuple(Client(client_id=t, tier=first.tier) for t in tenants)
    return dataclasses.replace(policy, clients=clients, tokens=tokens)


def summary(result: PartResult) -> dict[str, Any]:
    """One part's figures as the JSON report (and the pull request's comment) carries them; latencies in ms, ``None``
    when no request succeeded."""

    def ms(q: float) -> float | None:
        value = result.latency(q)
        return None if math.isnan(value) else value * 1000

    return {
        "requests": len(result.outcomes),
        "errors": result.errors,
        "hit_rate": result.hit_rate,
        "p50_ms": ms(0.5),
        "p90_ms": ms(0.9),
        "p99_ms": ms(0.99),
        "requests_per_s": result.throughput,
        "per_replica": dict(sorted(result.per_replica.items())),
        "peak_in_flight": max(result.peak_in_flight.values(), default=0),
    }


def _row(mode: str, part: str, result: PartResult) -> str:
    spread = "/".join(str(n) for _, n in sorted(result.per_replica.items()))
    peak = max(result.peak_in_flight.values(), default=0)
    return (
        f"{mode:<15}{part:<8}{result.hit_rate:>7.1%}{result.latency(0.5) * 1000:>9.0f}{result.latency(0.9) * 1000:>9.0f}"
        f"{result.latency(0.99) * 1000:>9.0f}{result.throughput:>8.2f}{result.errors:>7}  {spread:<12}{peak:>5}"
    )


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench routing", description=__doc__.splitlines()[0])
    parser.add_argument("--replicas", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=6)
    parser.add_argument("--prefill-us-per-token", type=int, default=200)
    parser.add_argument(
        "--kv-tokens",
        type=int,
        default=None,
        help="each replica's KV pool in tokens (serving.kvCache.maxTokens); 0: the stack's own; default: the fleet "
        "sized for the trace's shared part at the stack's kvCacheTarget (fleet_kv_tokens)",
    )
    parser.add_argument(
        "--ladder",
        type=_ladder,
        default=routing_load.LADDER,
        help="offered rates for the equal-load replay, as multiples of round robin's throughput at the concurrency "
        "(comma-separated; 'none' skips it); default " + ",".join(str(m) for m in routing_load.LADDER),
    )
    parser.add_argument(
        "--placements",
        type=_placements,
        default=3,
        help=f"placements of the prompts {PLACED_MODE} mode's equal-load figures are the median of (1-9)",
    )
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)

    from inference_platform.inferctl.serving.replicas import ReplicaPorts, run_replicas
    from inference_platform.inference_image.testing.cpu_llm_api.local import Timing
    from inference_platform.settings import stack_files
    from inference_platform.settings.derived import stack_edge_policy

    settings = stack_files.load("dev")
    # The token limits count in shadow mode (metered, never refused): the replay sends a few hundred thousand tokens
    # a minute through one client, and a 429 from dev's 200,000 a minute would measure the limit, not the routing.
    policy = stack_edge_policy(settings)
    policy = dataclasses.replace(policy, tokens=dataclasses.replace(policy.tokens, shadow=True))
    trace = load()
    policy = tenant_clients(policy, trace)
    serving = settings.serving
    if args.kv_tokens is None:
        args.kv_tokens = fleet_kv_tokens(
            trace["shared"], replicas=args.replicas, kv_target=settings.autoscaling.kv_cache_target
        )
    if args.kv_tokens:
        serving = serving.model_copy(
            update={"kv_cache": serving.kv_cache.model_copy(update={"max_tokens": args.kv_tokens})}
        )
    timing = Timing(first_token_delay_ms=5, token_delay_ms=5, prefill_us_per_token=args.prefill_us_per_token)
    header = f"{'mode':<15}{'part':<8}{'hit':>7}{'p50 ms':>9}{'p90 ms':>9}{'p99 ms':>9}{'req/s':>8}{'errors':>7}  {'spread':<12}{'peak':>5}"
    print(
        f"routing trace: {args.replicas} replicas, concurrency {args.concurrency}, stand-in prefill "
        f"{args.prefill_us_per_token} us per uncached token, "
        f"{f'a KV pool of {args.kv_tokens} tokens' if args.kv_tokens else 'the stack KV pool'} per replica; "
        "latency of max_tokens 4 requests (mostly prefill)"
    )
    print(header)
    results: dict[tuple[str, str], PartResult] = {}
    slo = routing_load.Slo(settings.serving.slo.ttft_p50_ms, settings.serving.slo.ttft_p95_ms)
    ladders: dict[str, list[routing_load.LoadStep]] = {}
    draws: list[dict[str, Any]] = []
    load_lines: list[str] = []
    with tempfile.TemporaryDirectory(prefix="bench-routing-") as tmp:
        work = Path(tmp)
        ports = [ReplicaPorts.free() for _ in range(args.replicas)]
        with run_replicas(serving, work, ports=ports, timing=timing) as replicas:

            def concurrent_replay(edge: Any, keys: list[str], part: str, mark: str) -> PartResult:
                """One part of the trace through ``edge`` at the replay's concurrency (``replay``)."""
                return replay(
                    edge.url,
                    ca=edge.certificates.ca,
                    keys=keys,
                    model=settings.serving.served_model_name,
                    requests=trace[part],
                    mark=mark,
                    concurrency=args.concurrency,
                    access_log=edge.access_log,
                )

            def climb(edge: Any, keys: list[str], name: str, mark: str) -> list[routing_load.LoadStep]:
                """The equal-load ladder (unit: round robin's throughput on the shared part, the first mode replayed),
                up the steps until ``routing_load.climbed``."""
                unit = results[(MODES[0], "shared")].throughput
                base = routing_load.at_slo(ladders[MODES[0]], slo) if name != MODES[0] else None
                steps: list[routing_load.LoadStep] = []
                for multiple in args.ladder:
                    if routing_load.climbed(steps, slo, until_per_s=base.offered_per_s if base else None):
                        break
                    step = routing_load.replay_at_rate(
                        edge.url,
                        ca=edge.certificates.ca,
                        keys=keys,
                        model=settings.serving.served_model_name,
                        requests=trace["shared"],
                        # The system prompts the concurrency replay of the shared part left in the replicas'
                        # caches (its mark), each step's conversations new (routing_load: the steady state).
                        mark=mark,
                        session=f"at {multiple}x",
                        rate=unit * multiple,
                    )
                    steps.append(step)
                    load_lines.append(routing_load.row(name, step, slo))
                    print(f"  at load: {load_lines[-1]}", flush=True)
                return steps

            for mode in MODES:
                with mode_edge(policy, mode, replicas, work) as (edge, keys):
                    for part in PARTS:
                        result = concurrent_replay(edge, keys, part, f"{mode} {part}")
                        results[(mode, part)] = result
                        print(_row(mode, part, result), flush=True)
                    if args.ladder:
                        ladders[mode] = climb(edge, keys, mode, f"{mode} shared")
                if mode != PLACED_MODE or not args.ladder:
                    continue
                # Where Maglev puts the prompts is a draw: another mark moves every affinity key, so the same
                # replicas hold the prompts in a new placement. Each draw: the shared part's concurrency replay (its
                # spread, and the prompts it caches) and the ladder on it, behind an edge of its own (its access log
                # holds that replay's requests only: Envoy writes a ladder's last lines out up to seconds later).
                draws.append(_draw(mode, results[(mode, "shared")], ladders[mode]))
                for n in range(2, args.placements + 1):
                    name = f"{mode}#{n}"
                    with mode_edge(policy, mode, replicas, work / f"placement-{n}") as (edge, keys):
                        placed = concurrent_replay(edge, keys, "shared", f"{name} shared")
                        print(_row(name, "shared", placed), flush=True)
                        draws.append(_draw(name, placed, climb(edge, keys, name, f"{name} shared")))
    if args.ladder:
        print(
            f"\nshared prefix at equal offered load (Poisson arrivals, {', '.join(str(m) for m in args.ladder)} x "
            f"round robin's {results[(MODES[0], 'shared')].throughput:.2f} req/s); the dev SLO: TTFT p50 <= "
            f"{slo.ttft_p50_ms:.0f} ms, p95 <= {slo.ttft_p95_ms:.0f} ms, no errors"
        )
        print(routing_load.HEADER)
        print("\n".join(load_lines))
    report: dict[str, Any] = {
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "settings": {k: getattr(args, k) for k in ("replicas", "concurrency", "prefill_us_per_token", "kv_tokens")},
        "modes": {mode: {part: summary(results[(mode, part)]) for part in PARTS} for mode in MODES},
        # Envoy's bounded-load rule, checked pick by pick in envoy mode (Pick): picks it forbids, per part.
        "envoy_picks_over_bound": {
            part: len(
                results[("envoy", part)].picks_over_bound(
                    replicas=args.replicas, load_bound_percent=policy.routing.load_bound_percent
                )
            )
            for part in PARTS
        },
    }
    if args.ladder:
        report["at_load"] = {
            "slo": {"ttft_p50_ms": slo.ttft_p50_ms, "ttft_p95_ms": slo.ttft_p95_ms},
            "ladder": list(args.ladder),
            "steps": {mode: [step.summary(slo) for step in steps] for mode, steps in ladders.items()},
            **routing_load.verdict(ladders, slo, baseline=MODES[0]),
        }
        by_draw = [
            {
                "name": draw["name"],
                "per_replica": draw["per_replica"],
                "hit_rate": draw["hit_rate"],
                **routing_load.verdict({MODES[0]: ladders[MODES[0]], draw["name"]: draw["steps"]}, slo)["modes"][
                    draw["name"]
                ],
                "steps": [step.summary(slo) for step in draw["steps"]],
            }
            for draw in draws
        ]
        # The mode's figures are the median over its placements (the pull request's comment compares those).
        report["at_load"]["modes"][PLACED_MODE] = routing_load.median_figures(by_draw)
        report["at_load"]["placements"] = {PLACED_MODE: by_draw}
    print(f"envoy mode, picks Envoy's load bound forbids, per part: {report['envoy_picks_over_bound']}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2, allow_nan=False) + "\n")
    rr, env = results[("round-robin", "shared")], results[("envoy", "shared")]
    if rr.latency(0.9) and env.latency(0.9):
        print(
            f"shared prefix, envoy vs round-robin: p90 {env.latency(0.9) / rr.latency(0.9):.2f}x, throughput "
            f"{env.throughput / rr.throughput:.2f}x, hit rate {env.hit_rate:.1%} vs {rr.hit_rate:.1%} "
            f"(median of one run; medians: {statistics.median(o.seconds for o in env.outcomes) * 1000:.0f} vs "
            f"{statistics.median(o.seconds for o in rr.outcomes) * 1000:.0f} ms)"
        )
    if args.ladder:
        print(_load_verdict(report["at_load"]))
    return 1 if any(r.errors for r in results.values()) or any(d["errors"] for d in draws) else 0


def _draw(name: str, replayed: PartResult, steps: list[routing_load.LoadStep]) -> dict[str, Any]:
    """One placement of ``PLACED_MODE``'s prompts: its concurrency replay's spread and hit rate, and its ladder."""
    return {
        "name": name,
        "per_replica": dict(sorted(replayed.per_replica.items())),
        "hit_rate": replayed.hit_rate,
        "errors": replayed.errors,  # the ladder's refusals are what it measures, as in every mode
        "steps": steps,
    }


def _placements(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= 9:
        raise argparse.ArgumentTypeError(f"{text!r}: a whole number of placements from 1 to 9")
    return int(text)


def _ladder(text: str) -> tuple[float, ...]:
    if text.strip().lower() == "none":
        return ()
    try:
        multiples = tuple(float(part) for part in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not comma-separated numbers or 'none'") from None
    if not all(0 < m <= 10 for m in multiples):
        raise argparse.ArgumentTypeError(f"{text!r}: each multiple must be above 0 and at most 10")
    return tuple(sorted(set(multiples)))


def _load_verdict(at_load: dict[str, Any]) -> str:
    """The target's two figures, envoy against round robin: per placement of the prompts, then their medians (the
    mode's figures in the report)."""
    rr = at_load["modes"][MODES[0]]
    placed = at_load.get("placements", {}).get(PLACED_MODE, [])
    lines = [
        _versus(f"{p['name']} ({'/'.join(str(n) for n in p['per_replica'].values())})", p, rr, at_load)
        for p in placed
        if len(placed) > 1
    ]
    label = f"{PLACED_MODE}, median of {len(placed)} placements" if len(placed) > 1 else PLACED_MODE
    return "\n".join([*lines, _versus(label, at_load["modes"][PLACED_MODE], rr, at_load)])


def _versus(label: str, env: dict[str, Any], rr: dict[str, Any], at_load: dict[str, Any]) -> str:
    ratio = (
        f"{env['throughput_at_slo_per_s'] / rr['throughput_at_slo_per_s']:.2f}x"
        if rr["throughput_at_slo_per_s"]
        else "n/a (round robin never held it)"
    )
    text = (
        f"shared prefix at the SLO, {label} vs round-robin: throughput {env['throughput_at_slo_per_s']:.2f} vs "
        f"{rr['throughput_at_slo_per_s']:.2f} req/s ({ratio})"
    )
    if at_load["equal_load_per_s"] is not None and rr["ttft_p90_ms_at_equal_load"] and env["ttft_p90_ms_at_equal_load"]:
        text += (
            f"; p90 TTFT at {at_load['equal_load_per_s']:.2f} req/s (round robin's last step within the SLO): "
            f"{env['ttft_p90_ms_at_equal_load']:.0f} vs {rr['ttft_p90_ms_at_equal_load']:.0f} ms "
            f"({env['ttft_p90_ms_at_equal_load'] / rr['ttft_p90_ms_at_equal_load']:.2f}x)"
        )
    return text


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
