"""Readiness means the engine can generate: a hung engine goes unready within the deadline, a busy one stays
ready without extra requests, and concurrent probes share one generation."""

from __future__ import annotations

import asyncio

import pytest

from inference_platform.inference_image import readiness
from tests.own_loop import run_on_own_loop


def run(coro):
    return run_on_own_loop(coro)


def test_a_hung_engine_is_unready_within_the_deadline():
    hung = asyncio.Event()

    async def generate():
        await hung.wait()  # never set: the engine never answers

    async def probe():
        check = readiness.GenerationCheck(generate, deadline_seconds=0.3, fresh_seconds=0)
        # The check's own deadline must end it: the generous outer bound only turns a hang into a failure.
        return await asyncio.wait_for(check.ready(), timeout=60)

    ok, reason = run(probe())
    assert not ok and "did not finish within 0.3 s" in reason


def test_an_engine_that_generates_is_ready_and_a_failure_says_why():
    async def fine():
        await asyncio.sleep(0.01)

    async def broken():
        raise RuntimeError("CUDA error: an illegal memory access")

    assert run(readiness.GenerationCheck(fine).ready()) == (True, "a 1-token generation finished")
    ok, reason = run(readiness.GenerationCheck(broken).ready())
    assert not ok and "illegal memory access" in reason


def test_a_replica_producing_tokens_is_ready_without_a_probe_generation():
    calls = []
    now = [100.0]

    async def generate():
        calls.append(1)

    check = readiness.GenerationCheck(generate, fresh_seconds=10, clock=lambda: now[0])
    check.note_token()
    now[0] += 9
    assert run(check.ready()) == (True, "the engine produced a token recently") and not calls
    now[0] += 2  # stale: the probe generates again
    assert run(check.ready())[0] and calls == [1]


def test_a_generation_that_finishes_between_probes_makes_the_next_one_ready():
    """The engine's first token took longer than the deadline, and the generation finished while no probe waited
    (kubelet probes every periodSeconds): that finish is the proof. Before, the next probe found the generation
    done but unrecorded and started another, which again outlived the deadline: a slow engine never became ready
    (tests/inferctl/serving/test_readiness_live.py failed this way under load)."""
    started = []

    async def slow():
        started.append(1)
        await asyncio.sleep(0.3)

    async def probes():
        check = readiness.GenerationCheck(slow, deadline_seconds=0.1, fresh_seconds=10)
        first = await check.ready()
        await asyncio.sleep(0.4)  # it finishes between probes
        return first, await check.ready()

    first, second = run(probes())
    assert not first[0] and second == (True, "the engine produced a token recently")
    assert started == [1]


def test_probes_share_one_slow_generation_instead_of_piling_up():
    started = []

    async def slow():
        started.append(1)
        await asyncio.sleep(0.4)

    async def probes():
        check = readiness.GenerationCheck(slow, deadline_seconds=0.1, fresh_seconds=0)
        first = await check.ready()  # times out; the generation goes on
        second = await asyncio.gather(check.ready(), check.ready())  # wait on that same generation
        shared = len(started)
        await asyncio.sleep(0.4)  # it finishes; the next probe starts a fresh one
        await check.ready()
        return first, second, shared

    first, second, shared = run(probes())
    assert not first[0] and not any(ok for ok, _ in second)
    assert shared == 1 and len(started) == 2


@pytest.mark.parametrize(("raw", "value"), [(None, readiness.DEFAULT_DEADLINE_SECONDS), ("2.5", 2.5)])
def test_the_deadline_comes_from_the_rollout(raw, value):
    env = {} if raw is None else {readiness.DEADLINE_ENV: raw}
    assert readiness.deadline_from_env(env) == value


@pytest.mark.parametrize("raw", ["0", "-1", "soon"])
def test_a_bad_deadline_names_the_variable(raw):
    with pytest.raises(ValueError, match=readiness.DEADLINE_ENV):
        readiness.deadline_from_env({readiness.DEADLINE_ENV: raw})
