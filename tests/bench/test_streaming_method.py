"""How bench/streaming.py times the first token at concurrency (issue 27 section 6), without servers: every stream
sends its requests one after another after their drawn pauses, and each stream's first request (the ramp) is left
out; the added TTFT is a difference of medians."""

from __future__ import annotations

import asyncio

from bench.streaming import _added, _closed_loop
from tests.own_loop import run_on_own_loop


def test_each_stream_sends_in_turn_after_its_pause_and_its_first_is_not_counted(monkeypatch):
    events: list[tuple[str, float]] = []
    in_flight, most = [0], [0]
    real_sleep = asyncio.sleep

    async def sleep(seconds: float) -> None:  # the pauses the loop asks for, in order (none really waited)
        events.append(("pause", seconds))
        await real_sleep(0)

    async def send(tokens: int) -> tuple[int, float]:
        in_flight[0] += 1
        most[0] = max(most[0], in_flight[0])
        events.append(("send", tokens))
        await real_sleep(0)
        in_flight[0] -= 1
        return tokens, tokens / 1000  # a first token "after" tokens ms: which request each figure came from

    monkeypatch.setattr(asyncio, "sleep", sleep)
    ttfts = run_on_own_loop(_closed_loop(send, [[(1, 0.0), (2, 0.0), (3, 0.05)], [(4, 0.0), (5, 0.0)]]))
    assert sorted(ttfts) == [0.002, 0.003, 0.005]  # the first of each stream (1 and 4) left out
    assert most[0] == 2  # one request at a time per stream, the streams at once
    assert sorted(v for kind, v in events if kind == "pause") == [0.0, 0.0, 0.0, 0.0, 0.05]
    assert events.index(("pause", 0.05)) < events.index(("send", 3))  # its pause came before it
    # A single request is all a stream of one has.
    assert run_on_own_loop(_closed_loop(send, [[(7, 0.0)]])) == [0.007]


def test_the_added_time_is_the_paths_median_less_triton_directs():
    out: dict[str, float] = {}
    _added(
        out,
        "herd_",
        16,
        {"triton": [0.010, 0.020, 0.030], "server": [0.012, 0.022, 0.032], "edge": [0.02, 0.025, 0.04]},
    )
    assert round(out["herd_added_ttft_ms_p50_c16"], 6) == 5.0
    assert round(out["herd_server_added_ttft_ms_p50_c16"], 6) == 2.0
    assert round(out["herd_triton_ttft_ms_p50_c16"], 6) == 20.0
