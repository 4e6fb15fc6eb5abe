"""The stand-in behaves as TensorRT-LLM 1.2.1's LLM API where our product depends on it: each test names the upstream
file it copies. None of these held for the stand-in before issue 27 (it drained stats at once, answered every cancel,
honoured seeds, had no KV capacity, n, logprobs or exact cached_tokens).

Upstream copies read (1.2 line; the 1.2.1 tree itself is too big to fetch, shared/facts/engine.md section 0):
- ``tensorrt_llm/executor/result.py`` @ a678b91a: ``IterationResult`` (one queue, ``__anext__`` ends only on a
  ``timeout`` of silence, ``mark_undone``); ``GenerationResultBase.cached_tokens``, ``outputs`` (best_of -> n by
  cumulative logprob), ``abort()`` = ``abort_request`` + a flag;
- ``tensorrt_llm/executor/executor.py`` (1.2-era copy): ``aget_stats`` returns the one shared result, an empty
  iterable before any submission; ``_maybe_initialize_iteration_results`` marks it undone on every submission;
- ``tensorrt_llm/_torch/pyexecutor/executor_request_queue.py`` @ a98a9061 ``update_waiting_queue`` and
  ``py_executor.py`` ``_handle_canceled_requests`` (1.2-era copies): a waiting cancel is filtered out with no
  response, an active one finishes ``CANCELLED``;
- ``tensorrt_llm/_torch/pyexecutor/sampler.py`` (1.2-era copies, before PR #17172): TorchSampler's one
  ``_global_seed = 42`` generator;
- ``tensorrt_llm/sampling_params.py`` @ a98a9061: ``best_of = best_of or n``; greedy ``best_of > 1`` refused unless
  ``TLLM_ALLOW_N_GREEDY_DECODING``; ``logprobs = logprobs and int(logprobs)``.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from inference_platform.inference_image.testing.cpu_llm_api import LLM, SamplingParams
from inference_platform.inference_image.testing.cpu_llm_api.checkpoint import write_checkpoint
from tests.own_loop import run_on_own_loop

RESULT = "NVIDIA/TensorRT-LLM tensorrt_llm/executor/result.py @ a678b91aafbeff265cd0b764abb59d7def624ac2"
REQUEST_QUEUE = (
    "NVIDIA/TensorRT-LLM tensorrt_llm/_torch/pyexecutor/executor_request_queue.py @ "
    "a98a9061d72f6fd39f5d055ebdd2c6878a100e2c update_waiting_queue; py_executor.py _handle_canceled_requests"
)
SAMPLER = "NVIDIA/TensorRT-LLM tensorrt_llm/_torch/pyexecutor/sampler.py (1.2 era): self._global_seed = 42"
SAMPLING_PARAMS = "NVIDIA/TensorRT-LLM tensorrt_llm/sampling_params.py @ a98a9061d72f6fd39f5d055ebdd2c6878a100e2c"
WORDS = "one two three four five six seven eight"
TOKEN_DELAY_ENV = "CPU_LLM_TOKEN_DELAY_MS"
PREFILL_ENV = "CPU_LLM_PREFILL_US_PER_TOKEN"
FIRST_DELAY_ENV = "CPU_LLM_FIRST_TOKEN_DELAY_MS"
STATE_FILE_ENV = "CPU_LLM_STATE_FILE"
ALLOW_N_GREEDY_ENV = "TLLM_ALLOW_N_GREEDY_DECODING"


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_checkpoint(tmp_path_factory.mktemp("checkpoint"))


def engine(checkpoint: Path, **args) -> LLM:
    return LLM(model=str(checkpoint), enable_iter_perf_stats=True, **args)


async def _drain(result) -> None:
    async for _ in result:
        pass


def test_iteration_stats_are_one_shared_result_that_ends_only_after_a_timeout_of_silence(checkpoint, monkeypatch):
    monkeypatch.setenv(TOKEN_DELAY_ENV, "10")
    llm = engine(checkpoint)

    async def scenario():
        before = [s async for s in llm.get_stats_async(0.05)]
        request = llm.generate_async(WORDS, SamplingParams(max_tokens=30), streaming=True)
        first = llm.get_stats_async(0.5)
        assert first is llm.get_stats_async(0.5), RESULT  # aget_stats: the same IterationResult every call
        consumer = asyncio.ensure_future(_drain(request))
        seen = [stat["iter"] async for stat in first]  # ends 0.5 s after the last iteration, not before
        await consumer
        again = [s async for s in llm.get_stats_async(0.5)]  # done: ends at once until a new submission
        await llm.generate_async(WORDS, SamplingParams(max_tokens=2)).aresult()
        after = [s["iter"] async for s in llm.get_stats_async(0.2)]
        return before, seen, again, after

    before, seen, again, after = run_on_own_loop(scenario())
    assert before == [], RESULT  # no submission yet: an empty iterable
    # One uninterrupted iteration saw every executor iteration of the request (30 tokens), in order.
    assert len(seen) >= 30 and seen == list(range(seen[0], seen[0] + len(seen))), RESULT
    assert again == [], RESULT
    assert after and after[0] == seen[-1] + 1, RESULT  # mark_undone on the next submission


def test_a_cancel_while_waiting_gets_no_response_and_a_cancel_while_running_finishes_cancelled(checkpoint, monkeypatch):
    monkeypatch.setenv(TOKEN_DELAY_ENV, "5")
    llm = engine(checkpoint, max_batch_size=1)

    async def scenario():
        running = llm.generate_async("x" * 50, SamplingParams(max_tokens=50), streaming=True)
        queued = llm.generate_async("y", SamplingParams(max_tokens=5), streaming=True)
        await running.__anext__()
        queued.abort()
        waiting_on = asyncio.ensure_future(queued.__anext__())
        running.abort()
        await _drain(running)
        # The executor has handled both cancels (the running one ended); the queued one's caller still waits.
        done, _ = await asyncio.wait({waiting_on}, timeout=0.5)
        waiting_on.cancel()
        return running.outputs[0].finish_reason, running.finished, bool(done)

    reason, finished, answered = run_on_own_loop(scenario())
    assert (reason, finished) == ("cancelled", True), REQUEST_QUEUE
    assert answered is False, REQUEST_QUEUE


def test_requests_beyond_the_batch_or_the_kv_pool_wait_in_order(checkpoint, monkeypatch, tmp_path):
    state = tmp_path / "state.json"
    monkeypatch.setenv(TOKEN_DELAY_ENV, "5")
    monkeypatch.setenv(STATE_FILE_ENV, str(state))
    # A pool of 4 blocks of 8 tokens: one request of 10 prompt + 20 generated tokens (4 blocks) fills it.
    llm = engine(checkpoint, max_batch_size=4, kv_cache_config={"tokens_per_block": 8, "max_tokens": 32})

    async def scenario():
        first = llm.generate_async("a" * 9, SamplingParams(max_tokens=20), streaming=True)
        second = llm.generate_async("b" * 9, SamplingParams(max_tokens=20), streaming=True)
        await first.__anext__()
        during = json.loads(state.read_text())
        await _drain(first)
        await _drain(second)
        return during, json.loads(state.read_text())

    during, after = run_on_own_loop(scenario())
    assert (during["active"], during["waiting"]) == (1, 1)  # batch room, but no KV room
    assert during["kvCache"]["maxNumBlocks"] == 4 and during["kvCache"]["usedNumBlocks"] == 4
    assert (after["active"], after["waiting"]) == (0, 0)
    with pytest.raises(ValueError, match="KV-cache blocks"):
        run_on_own_loop(_submit(llm, "c" * 9, 40))  # can never fit: refused, not queued forever


async def _submit(llm: LLM, prompt: str, max_tokens: int):
    return llm.generate_async(prompt, SamplingParams(max_tokens=max_tokens))


def test_prefill_counts_only_the_uncached_prompt_tokens_and_cached_tokens_is_exact(checkpoint, monkeypatch):
    monkeypatch.setenv(PREFILL_ENV, "10")
    llm = engine(checkpoint, kv_cache_config={"tokens_per_block": 8})
    base = "a" * 40  # BOS + 40 bytes = 41 tokens

    async def one(prompt: str):
        result = llm.generate_async(prompt, SamplingParams(max_tokens=1, return_perf_metrics=True))
        stats = llm.get_stats_async(0.2)
        await result.aresult()
        contexts = [s["inflightBatchingStats"]["numCtxTokens"] async for s in stats]
        kv = result.outputs[0].request_perf_metrics.kv_cache_metrics
        return result.cached_tokens, kv.num_reused_blocks, sum(contexts)

    cold = run_on_own_loop(one(base))
    warm = run_on_own_loop(one(base))
    partial = run_on_own_loop(one(base[:20] + "b" * 20))
    assert cold == (0, 0, 41)
    assert warm == (40, 5, 1), RESULT  # 5 full blocks; the last token is always computed
    # Blocks 0-1 (BOS + 15 a's) whole, and 5 more a's of block 2 partially reused: 21 tokens, not 2 x 8.
    assert partial == (21, 3, 20), RESULT


def test_an_iteration_costs_the_token_delay_plus_each_entering_prefill_over_its_uncached_tokens(
    checkpoint, monkeypatch
):
    """What the routing work (issue 29) measures against: the executor's sleep per iteration, recorded (not timed),
    is CPU_LLM_TOKEN_DELAY_MS, plus CPU_LLM_FIRST_TOKEN_DELAY_MS and CPU_LLM_PREFILL_US_PER_TOKEN x the uncached
    prompt tokens of each request entering its context phase in it."""
    monkeypatch.setenv(TOKEN_DELAY_ENV, "2")
    monkeypatch.setenv(FIRST_DELAY_ENV, "7")
    monkeypatch.setenv(PREFILL_ENV, "1000")
    llm = engine(checkpoint, kv_cache_config={"tokens_per_block": 8})
    base = "a" * 40  # BOS + 40 bytes = 41 tokens
    slept: list[float] = []
    real_sleep = asyncio.sleep

    async def recorded(delay: float, *args: object) -> None:
        slept.append(delay)
        await real_sleep(0)

    async def one(prompt: str, max_tokens: int) -> list[float]:
        slept.clear()
        await llm.generate_async(prompt, SamplingParams(max_tokens=max_tokens, ignore_eos=True)).aresult()
        return list(slept)

    monkeypatch.setattr(asyncio, "sleep", recorded)
    cold, warm, partial = (run_on_own_loop(one(p, 3)) for p in (base, base, base[:20] + "b" * 20))
    assert cold == pytest.approx([0.002 + 0.007 + 41 * 0.001, 0.002, 0.002])
    assert warm == pytest.approx([0.002 + 0.007 + 1 * 0.001, 0.002, 0.002])  # 40 of 41 cached
    assert partial == pytest.approx([0.002 + 0.007 + 20 * 0.001, 0.002, 0.002])  # 21 cached
    stats = llm.kv_cache_stats()
    # The stand-in's own counters beside TensorRT-LLM's: prompt tokens looked up and served from the cache.
    assert (stats["queriedTokens"], stats["cachedTokens"]) == (3 * 41, 40 + 21)
    assert (stats["reusedBlocks"], stats["missedBlocks"]) == (5 + 3, 5 + 0 + 3)


def test_seed_does_not_make_sampling_repeatable_one_generator_serves_the_engine(checkpoint):
    def texts(llm: LLM) -> list[str]:
        async def scenario():
            out = []
            for _ in range(3):
                result = llm.generate_async(WORDS, SamplingParams(max_tokens=100, temperature=0.8, seed=7))
                out.append((await result.aresult()).outputs[0].text)
            return out

        return run_on_own_loop(scenario())

    first = texts(engine(checkpoint))
    assert len(set(first)) > 1, SAMPLER  # the same seed, different samples
    assert texts(engine(checkpoint)) == first, SAMPLER  # a fresh engine replays its generator (seeded 42)


def test_n_and_best_of_as_the_llm_api_does_them(checkpoint, monkeypatch):
    llm = engine(checkpoint)

    async def outputs(**params):
        result = llm.generate_async(WORDS, SamplingParams(max_tokens=100, **params))
        return (await result.aresult()).outputs

    two = run_on_own_loop(outputs(n=2, temperature=0.9))
    assert [o.index for o in two] == [0, 1] and all(o.finish_reason == "stop" for o in two)
    best = run_on_own_loop(outputs(n=2, best_of=4, temperature=0.9))
    ranked = [o.cumulative_logprob for o in best]
    assert len(best) == 2 and ranked == sorted(ranked, reverse=True), RESULT
    with pytest.raises(ValueError, match="Greedy decoding in the LLM API does not allow multiple returns"):
        SamplingParams(n=2)  # greedy: no sampling knob
    with pytest.raises(ValueError, match=r"best_of \(1\) cannot be less than n \(2\)"):
        SamplingParams(n=2, best_of=1, temperature=1.0)
    monkeypatch.setenv(ALLOW_N_GREEDY_ENV, "1")
    assert SamplingParams(n=2).best_of == 2, SAMPLING_PARAMS


def test_logprobs_are_top_k_per_token_and_zero_means_none(checkpoint):
    llm = engine(checkpoint)

    async def output(**params):
        result = llm.generate_async("abc", SamplingParams(max_tokens=3, **params))
        return (await result.aresult()).outputs[0]

    assert run_on_own_loop(output(logprobs=0)).logprobs == [], SAMPLING_PARAMS
    top = run_on_own_loop(output(logprobs=3))
    assert len(top.logprobs) == len(top.token_ids) == 3
    for token, position in zip(top.token_ids, top.logprobs, strict=True):
        assert len(position) == 3 and position[token].rank == 1
        assert sorted(p.rank for p in position.values()) == [1, 2, 3]
        assert all(p.logprob <= 0 for p in position.values())
    assert SamplingParams(logprobs=True).logprobs == 1, SAMPLING_PARAMS


def test_a_stream_answers_every_stream_interval_tokens_and_min_tokens_holds_the_end(checkpoint):
    llm = engine(checkpoint, stream_interval=4)

    async def diffs(prompt: str, **params):
        result = llm.generate_async(prompt, SamplingParams(**params), streaming=True)
        return [len(o.outputs[0].token_ids_diff) async for o in result]

    assert run_on_own_loop(diffs("a" * 10, max_tokens=10)) == [4, 4, 2]
    # "ab" then its end token: min_tokens 5 masks the end until five tokens came.
    held = run_on_own_loop(diffs("ab", max_tokens=20, min_tokens=5))
    assert sum(held) == 6  # a b a b a b, then the end (ab twice would stop at 2 without min_tokens)
