"""The equal-load replay's arithmetic (bench/routing_load.py): the same arrivals for every mode, the SLO as the
stack states it, and the two summary figures read from the ladder the way the docs say."""

from __future__ import annotations

import argparse
import itertools
import math
import statistics

import pytest

from bench.routing_load import (
    LoadStep,
    Slo,
    Streamed,
    arrivals,
    at_slo,
    climbed,
    median_figures,
    nearest_rank,
    verdict,
)
from tests.own_loop import run_on_own_loop

SLO = Slo(ttft_p50_ms=1000, ttft_p95_ms=3000)


def step(rate: float, ttfts_s: list[float], *, span: float = 10.0, errors: int = 0, cached: int = 0) -> LoadStep:
    outcomes = [Streamed(200, t, 1000, cached) for t in ttfts_s]
    outcomes += [Streamed(503, None, 0, 0) for _ in range(errors)]
    return LoadStep(rate, tuple(outcomes), span)


def test_arrivals_are_seeded_poisson_the_same_for_every_mode():
    first, again = arrivals(500, 4.0), arrivals(500, 4.0)
    assert first == again and first[0] == 0.0
    gaps = [b - a for a, b in itertools.pairwise(first)]
    assert all(g > 0 for g in gaps)
    # The step offers the rate its label says: the gaps' mean is exactly 1 / rate; their spread stays Poisson's
    # (an exponential's standard deviation equals its mean; within 20 % over 499 draws of a fixed seed).
    assert sum(gaps) / len(gaps) == pytest.approx(0.25)
    assert statistics.pstdev(gaps) == pytest.approx(0.25, rel=0.2)
    assert arrivals(1, 4.0) == [0.0] and arrivals(0, 4.0) == []
    assert arrivals(500, 4.0, seed=1) != first
    with pytest.raises(ValueError, match="rate"):
        arrivals(3, 0.0)


def test_nearest_rank_takes_a_value_the_data_had():
    assert nearest_rank([3.0, 1.0, 2.0], 0.5) == 2.0
    assert nearest_rank([1.0, 2.0, 3.0, 4.0], 0.99) == 4.0
    assert math.isnan(nearest_rank([], 0.9))


def test_the_slo_is_both_percentiles_and_no_errors():
    assert step(1.0, [0.5] * 20).meets(SLO)
    assert not step(1.0, [1.5] * 20).meets(SLO)  # p50 over 1,000 ms
    assert not step(1.0, [0.5] * 18 + [3.5] * 2).meets(SLO)  # p95 over 3,000 ms
    assert not step(1.0, [0.5] * 20, errors=1).meets(SLO)
    summary = step(2.0, [0.5] * 20, span=5.0, cached=250).summary(SLO)
    assert summary["answered_per_s"] == 4.0 and summary["hit_rate"] == 0.25 and summary["meets_slo"] is True
    assert summary["ttft_p90_ms"] == 500.0
    assert step(1.0, [0.5], errors=2).summary(SLO)["refusals"] == {"503": 2}
    no_token = LoadStep(1.0, (Streamed(200, None, 5, 0), Streamed(0, None, 0, 0)), 1.0)
    assert no_token.refusals == {"no token": 1, "transport": 1} and no_token.errors == 2


def test_a_step_where_nothing_was_answered_has_no_latency_and_misses_the_slo():
    nothing = step(1.0, [], errors=5)
    assert nothing.summary(SLO)["ttft_p50_ms"] is None and not nothing.meets(SLO) and nothing.answered_per_s == 0


def test_the_verdict_reads_throughput_at_the_slo_and_p90_at_round_robins_last_held_load():
    ladders = {
        "round-robin": [step(2.0, [0.4] * 20, span=10), step(4.0, [0.9] * 20, span=5), step(6.0, [4.0] * 20, span=4)],
        "envoy": [step(2.0, [0.2] * 20, span=10), step(4.0, [0.3] * 20, span=5), step(6.0, [0.5] * 20, span=10 / 3)],
    }
    result = verdict(ladders, SLO)
    assert result["equal_load_per_s"] == 4.0
    assert result["modes"]["round-robin"] == {
        "throughput_at_slo_per_s": 4.0,
        "offered_at_slo_per_s": 4.0,
        "ttft_p90_ms_at_equal_load": 900.0,
    }
    assert result["modes"]["envoy"]["throughput_at_slo_per_s"] == pytest.approx(6.0)
    assert result["modes"]["envoy"]["ttft_p90_ms_at_equal_load"] == 300.0
    assert at_slo(ladders["round-robin"], SLO).offered_per_s == 4.0
    # A step that holds above one that failed is noise, not capacity: the first miss caps the ladder.
    noisy = [step(2.0, [0.4] * 20), step(4.0, [0.4] * 20, errors=1), step(6.0, [0.4] * 20)]
    assert at_slo(noisy, SLO).offered_per_s == 2.0
    assert at_slo(list(reversed(noisy)), SLO).offered_per_s == 2.0


def test_when_round_robin_never_holds_the_slo_there_is_no_equal_load_figure():
    ladders = {"round-robin": [step(2.0, [4.0] * 20)], "envoy": [step(2.0, [0.2] * 20)]}
    result = verdict(ladders, SLO)
    assert result["equal_load_per_s"] is None
    assert result["modes"]["round-robin"]["throughput_at_slo_per_s"] == 0.0
    assert result["modes"]["envoy"]["ttft_p90_ms_at_equal_load"] is None


def test_a_ladder_stops_at_its_first_miss_once_it_reached_round_robins_load():
    held, missed = step(2.0, [0.4] * 20), step(4.0, [4.0] * 20)
    assert not climbed([], SLO) and not climbed([held], SLO)
    assert climbed([held, missed], SLO)  # round robin's own ladder: its last held step is known
    # Another mode that misses below round robin's load climbs on to it, for its p90 there.
    assert not climbed([held, missed], SLO, until_per_s=6.0)
    assert climbed([held, missed, step(6.0, [4.0] * 20)], SLO, until_per_s=6.0)
    assert not climbed([held, step(6.0, [0.4] * 20)], SLO, until_per_s=6.0)  # still within the SLO: higher


def test_a_mode_placed_by_hash_is_the_median_of_its_placements():
    placed = [
        {"throughput_at_slo_per_s": 9.0, "offered_at_slo_per_s": 9.9, "ttft_p90_ms_at_equal_load": 540.0},
        {"throughput_at_slo_per_s": 6.6, "offered_at_slo_per_s": 7.5, "ttft_p90_ms_at_equal_load": 1190.0},
        {"throughput_at_slo_per_s": 7.2, "offered_at_slo_per_s": 7.5, "ttft_p90_ms_at_equal_load": None},
    ]
    assert median_figures(placed) == {
        "throughput_at_slo_per_s": 7.2,
        "offered_at_slo_per_s": 7.5,
        "ttft_p90_ms_at_equal_load": 865.0,  # of the two known
    }
    none = median_figures([{"throughput_at_slo_per_s": 0.0, "ttft_p90_ms_at_equal_load": None}])
    assert none == {"throughput_at_slo_per_s": 0.0, "offered_at_slo_per_s": None, "ttft_p90_ms_at_equal_load": None}


def test_the_verdict_prints_each_placement_then_their_median():
    from bench.routing import _load_verdict, _placements

    figures = {"throughput_at_slo_per_s": 4.0, "offered_at_slo_per_s": 4.0, "ttft_p90_ms_at_equal_load": 1000.0}
    placed = [
        {"name": "envoy", "per_replica": {"a": 49, "b": 47, "c": 48}, **figures, "ttft_p90_ms_at_equal_load": 260.0},
        {"name": "envoy#2", "per_replica": {"a": 59, "b": 55, "c": 30}, **figures, "ttft_p90_ms_at_equal_load": 670.0},
    ]
    at_load = {
        "equal_load_per_s": 4.0,
        "modes": {"round-robin": figures, "envoy": median_figures(placed)},
        "placements": {"envoy": placed},
    }
    lines = _load_verdict(at_load).splitlines()
    assert [line.split(" vs round-robin")[0] for line in lines] == [
        "shared prefix at the SLO, envoy (49/47/48)",
        "shared prefix at the SLO, envoy#2 (59/55/30)",
        "shared prefix at the SLO, envoy, median of 2 placements",
    ]
    assert lines[0].endswith("(0.26x)") and lines[2].endswith("(0.47x)")
    assert _placements("3") == 3
    for bad in ("0", "10", "two", "-1"):
        with pytest.raises(argparse.ArgumentTypeError, match="1 to 9"):
            _placements(bad)


def test_a_later_turn_waits_for_the_answer_to_the_one_before(monkeypatch, tmp_path):
    """Open loop across conversations, closed within one: turn k+1 is sent only once turn k was answered, whatever
    its arrival (events recorded in order, no clocks)."""
    import asyncio

    from bench import routing_load

    events: list[tuple[str, str, int]] = []

    async def fake_send(client, url, key, body):
        conversation, turn = body["conversation"], body["turn"]
        events.append(("sent", conversation, turn))
        await asyncio.sleep(0.01 * (3 - turn))  # earlier turns take longer: a careless replay would overtake them
        events.append(("answered", conversation, turn))
        return Streamed(200, 0.001, 10, 0)

    monkeypatch.setattr(routing_load, "_send", fake_send)
    bodies = [
        ("key", conversation, {"conversation": conversation, "turn": turn})
        for turn in range(3)
        for conversation in ("a", "b", "c")
    ]
    outcomes, span = run_on_own_loop(
        routing_load._replay("http://127.0.0.1:9", ca=tmp_path, bodies=bodies, offsets=[0.0] * 9)
    )
    assert len(outcomes) == 9 and span > 0
    for conversation in ("a", "b", "c"):
        for turn in (1, 2):
            assert events.index(("answered", conversation, turn - 1)) < events.index(("sent", conversation, turn))
    # Across conversations nothing waits: every first turn is sent before any answer.
    assert {e for e in events[:3]} == {("sent", c, 0) for c in ("a", "b", "c")}


def test_a_ladder_step_keeps_the_system_prompts_and_starts_new_conversations():
    """The ladder's steady state: every step sends the system prompts the mode's concurrency replay cached (one
    ``mark``) with conversations of its own (``session``), and the session never moves a request to another replica
    (the affinity key, what the edge's Lua hashes, is the same for every session)."""
    import json

    from bench.routing_trace import load, marked
    from inference_platform.catalog.edge_routing import Routing, affinity_key

    request = next(r for r in load()["shared"] if len(r.messages) == 4)  # a second turn: system, user, assistant, user
    steps = [marked(request, "envoy shared", session=f"at {m}x") for m in (0.5, 1.0)]
    replay = marked(request, "envoy shared")
    assert steps[0][0] == steps[1][0] == replay[0]  # the system prompt, as the concurrency replay sent it
    assert steps[0][1] != steps[1][1] and steps[0][1]["content"].startswith("[at 0.5x] ")
    assert steps[0][2:] == steps[1][2:] == replay[2:] == request.messages[2:]
    routing = Routing(mode="envoy")
    keys = {affinity_key(json.dumps({"messages": m}).encode(), routing) for m in (*steps, replay)}
    assert len(keys) == 1 and None not in keys
    assert affinity_key(json.dumps({"messages": marked(request, "round-robin shared")}).encode(), routing) not in keys
    # A single message (no system prompt) carries both, the mode's mark still at the very start.
    lone = marked(load()["control"][0], "m", session="s")
    assert lone[0]["content"].startswith("[m] [s] ")


def test_the_replay_gives_each_tenant_its_own_client_and_limits():
    """bench routing: the trace's tenants are the edge's clients (their own concurrent streams, the circuit breaker
    their sum), each on the stack's first tier and token limits."""
    from bench.routing import tenant_clients
    from bench.routing_trace import load
    from inference_platform.settings import stack_files
    from inference_platform.settings.derived import stack_edge_policy

    policy = stack_edge_policy(stack_files.load("dev"))
    trace = load()
    tenants = sorted({r.client for part in trace.values() for r in part})
    assert len(tenants) > 1 and len(policy.clients) == 1
    routed = tenant_clients(policy, trace)
    assert [c.client_id for c in routed.clients] == tenants
    assert {c.tier for c in routed.clients} == {policy.clients[0].tier}
    assert routed.parallel_requests == len(tenants) * policy.clients[0].tier.concurrent_streams
    assert [t.client_id for t in routed.tokens.limited] == tenants
    assert {t.windows for t in routed.tokens.limited} == {policy.tokens.limited[0].windows}
