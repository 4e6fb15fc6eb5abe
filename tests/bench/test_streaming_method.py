"""How bench/streaming.py times the first token at concurrency (issue 27 section 6), without servers: every stream
sends its requests one after another after their drawn pauses, and each stream's first request (the ramp) is left
out; the added TTFT is a difference of medians; each path goes first in turn, and the client's work per event is the
same on every path."""

from __future__ import annotations

import asyncio
import types

import bench.streaming
from bench.streaming import _added, _closed_loop, _first_and_last, _rotated
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


def test_every_path_goes_first_in_turn():
    assert [_rotated(("direct", "served"), turn) for turn in range(3)] == [
        ("direct", "served"),
        ("served", "direct"),
        ("direct", "served"),
    ]
    assert [_rotated(("triton", "server", "edge"), turn)[0] for turn in range(4)] == [
        "triton",
        "server",
        "edge",
        "triton",
    ]


def test_the_client_keeps_the_first_events_time_and_the_last_event_only(monkeypatch):
    clock = iter(range(100))  # the bench's own clock only (the loop keeps the real one)
    monkeypatch.setattr(bench.streaming, "time", types.SimpleNamespace(perf_counter=lambda: float(next(clock))))

    async def lines(*raw: bytes):
        for line in raw:
            yield line

    first, last = run_on_own_loop(
        _first_and_last(
            lines(b": usage {}\n", b"\n", b'data: {"n": 1}\n', b'data: {"n": 2}\n', b"data: [DONE]\n"), b"data: {"
        )
    )
    assert (first, last) == (0.0, b'data: {"n": 2}\n')  # the clock read once, at the first event; [DONE] is not one
    assert run_on_own_loop(_first_and_last(lines(b": comment\n"), b"data:")) == (None, None)
