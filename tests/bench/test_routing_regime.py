"""The regime the routing benchmark replays in (bench/routing.py ``fleet_kv_tokens``): the trace's shared prefixes
outgrow one replica's KV pool and fit the fleet's, sized as the stack's autoscaler sizes a fleet."""

from __future__ import annotations

from bench.routing import TOKENS_PER_BLOCK, fleet_kv_tokens
from bench.routing_trace import TraceRequest, distinct_prefix_chars, load
from inference_platform.settings import stack_files


def _request(*contents: str) -> TraceRequest:
    roles = ["system", *(["user", "assistant"] * len(contents))][: len(contents)]
    return TraceRequest(
        "shared", "t", "c", [{"role": r, "content": c} for r, c in zip(roles, contents, strict=True)], 4
    )


def test_each_distinct_prefix_counts_once_at_message_granularity():
    requests = [
        _request("S" * 100, "q1" * 5),  # 100 + 10
        _request("S" * 100, "q1" * 5, "a1" * 5, "q2" * 5),  # the history it resends: + 20
        _request("S" * 100, "r1" * 5),  # another conversation on the same system prompt: + 10
        _request("T" * 50, "q1" * 5),  # another system prompt: the same question is a new prefix there: + 60
    ]
    assert distinct_prefix_chars(requests) == 100 + 10 + 20 + 10 + 60
    assert distinct_prefix_chars(requests * 2) == distinct_prefix_chars(requests)


def test_the_recorded_trace_outgrows_one_replicas_pool_and_fits_the_fleets():
    shared = load()["shared"]
    target = stack_files.load("dev").autoscaling.kv_cache_target
    distinct = distinct_prefix_chars(shared)
    pool = fleet_kv_tokens(shared, replicas=3, kv_target=target)
    assert pool % TOKENS_PER_BLOCK == 0
    assert pool < distinct / 2  # round robin cannot hold the prefixes in any replica
    assert 3 * pool * target >= distinct  # the fleet holds them at the autoscaler's target use
    assert 3 * (pool - TOKENS_PER_BLOCK) * target < distinct  # and is no larger than that (whole blocks)
    # The system prompts alone outgrow one replica's pool too: affinity is what keeps each one cached.
    systems = {r.messages[0]["content"] for r in shared}
    assert sum(len(s) for s in systems) > pool
