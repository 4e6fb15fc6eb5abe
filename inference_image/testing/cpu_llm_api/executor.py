"""TEST DOUBLE: the PyTorch executor loop as a caller of the LLM API sees it, one iteration at a time.

Each iteration, as ``PyExecutor`` runs one (NVIDIA/TensorRT-LLM ``tensorrt_llm/_torch/pyexecutor/py_executor.py``,
1.2-era copies; ``executor_request_queue.py`` @ a98a9061; pinned in test_upstream_behaviour.py):

1. **cancellations**: a cancelled request still in the waiting queue is dropped from it and gets **no response**
   (``ExecutorRequestQueue.update_waiting_queue`` only filters it out), so its caller's iteration never ends; a
   cancelled active request finishes with ``finish_reason`` ``cancelled`` through the normal finish path (one final
   response);
2. **admission**, first come first served: a waiting request starts only while fewer than ``max_batch_size`` run and
   the KV pool gives it its blocks (``kv_cache.PrefixCache``; under ``GUARANTEED_NO_EVICT``, the capacity scheduler's
   default, blocks for its prompt and its whole ``max_tokens``; under ``MAX_UTILIZATION`` for its prompt, a block at a
   time after); the head of the queue waits until both allow, and those behind it wait too;
3. **the step**: every admitted request gets one token per sequence. A request entering its context phase costs the
   iteration ``CPU_LLM_FIRST_TOKEN_DELAY_MS`` plus ``CPU_LLM_PREFILL_US_PER_TOKEN`` for each prompt token the cache did
   not hold (its uncached tokens); the iteration then costs ``CPU_LLM_TOKEN_DELAY_MS``. Prefills share the iteration
   with everyone's decode step, as without chunking: a long uncached prompt delays the tokens of the whole batch.
   A guided request's grammar is compiled here, inline and without a timeout, as TensorRT-LLM's ``GuidedDecoder``
   does: a slow compile stalls every request of this engine;
4. **responses**: a stream gets a response every ``stream_interval`` tokens (``TorchLlmArgs.stream_interval``,
   default 1) and at its end; a whole answer one at its end;
5. **stats**: with ``enable_iter_perf_stats`` one iteration stat (upstream's camelCase names: ``numActiveRequests``,
   ``numQueuedRequests``, ``inflightBatchingStats.{numScheduledRequests, numContextRequests, numGenRequests,
   numPausedRequests}``, ``kvCacheStats``) goes to the shared ``IterationResult``.
"""

from __future__ import annotations

import asyncio
import collections
import json
import os
import random
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from inference_platform.inference_image.testing.cpu_llm_api.guided import GuidedRun, GuidedVocabulary, regex_of
from inference_platform.inference_image.testing.cpu_llm_api.iteration_result import IterationResult
from inference_platform.inference_image.testing.cpu_llm_api.kv_cache import Allocation, PrefixCache
from inference_platform.inference_image.testing.cpu_llm_api.outputs import Logprob
from inference_platform.inference_image.testing.cpu_llm_api.params import SamplingParams
from inference_platform.inference_image.testing.cpu_llm_api.text import Detokenizer, apply_stop, releasable, sampled

NO_EVICT = "GUARANTEED_NO_EVICT"
MAX_UTILIZATION = "MAX_UTILIZATION"


class RequestOutput(Protocol):
    """What the executor needs of a request's result (engine.RequestOutput; a Protocol, so no import circle)."""

    request_id: int
    streaming: bool

    def deliver(self, item: Snapshot | BaseException) -> None: ...


class LLM(Protocol):
    """What the executor reads of its engine (engine.LLM)."""

    tokenizer: Any
    kv: PrefixCache
    eos_id: int
    stop_ids: set[int]
    vocab_size: int
    max_batch_size: int
    stream_interval: int
    iter_perf_stats: bool
    state_file: str | None
    global_seed: int
    first_delay: float
    token_delay: float
    prefill_per_token: float

    def guided_vocabulary(self) -> GuidedVocabulary: ...


@dataclass
class Sequence:
    """One of a request's ``best_of`` sequences."""

    index: int
    tokens: Iterator[int]
    detok: Detokenizer
    ids: list[int] = field(default_factory=list)
    text: str = ""
    shown: str = ""
    logprobs: list[dict[int, Logprob]] = field(default_factory=list)
    cumulative: float = 0.0
    finish_reason: str | None = None
    stop_reason: int | str | None = None


@dataclass
class Snapshot:
    """One response: each sequence's state when it was sent (applied by the result when its caller takes it)."""

    outputs: list[tuple[list[int], str, list[dict[int, Logprob]], float | None, str | None, int | str | None]]
    finished: bool
    cached_tokens: int
    timing: tuple[float, float, float, float]
    """Monotonic instants: arrival, first scheduled, first token, last token."""


@dataclass
class Work:
    """A submitted request, from the queue to its last response."""

    result: RequestOutput
    params: SamplingParams
    prompt_ids: list[int]
    echo: str
    budget: int
    allocation: Allocation | None = None
    sequences: list[Sequence] = field(default_factory=list)
    started: bool = False
    steps: int = 0
    cached_tokens: int = 0
    arrival: float = field(default_factory=time.monotonic)
    scheduled: float = 0.0
    first_token: float = 0.0
    last_token: float = 0.0


class Executor:
    def __init__(self, llm: LLM, *, policy: str, stats: IterationResult | None, keep_stats: int) -> None:
        self.llm = llm
        self.policy = policy
        self.stats = stats
        self.keep_stats = keep_stats
        self.waiting: collections.deque[Work] = collections.deque()
        self.active: list[Work] = []
        self.cancelled: set[int] = set()
        self.rng = random.Random(llm.global_seed)
        """TorchSampler's one generator (``self._global_seed = 42``): SamplingParams.seed is not consulted."""
        self.loop = asyncio.get_running_loop()
        self._wake = asyncio.Event()
        self._iteration = 0
        self._task: asyncio.Task[None] | None = None
        self._counts: tuple[int, int] | None = None

    def submit(self, work: Work) -> None:
        self.waiting.append(work)
        self._ensure_running()
        self._wake.set()

    def cancel(self, request_id: int) -> None:
        self.cancelled.add(request_id)
        self._wake.set()

    def stop(self) -> None:
        if self._task is not None and not self.loop.is_closed():
            self.loop.call_soon_threadsafe(self._task.cancel)

    # -- the loop ---------------------------------------------------------------------------------------------
    def _ensure_running(self) -> None:
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        llm = self.llm
        while True:
            self._handle_cancels()
            contexts = self._admit()
            self._write_state()
            if not self.active:
                self._wake.clear()
                await self._wake.wait()
                continue
            delay = llm.token_delay
            for work in contexts:
                uncached = len(work.prompt_ids) - work.cached_tokens
                delay += llm.first_delay + uncached * llm.prefill_per_token
                self._start(work)
            await asyncio.sleep(delay)
            self._handle_cancels()
            for work in list(self.active):
                self._step(work)
            self._iteration += 1
            self._record(contexts)
            self._write_state()

    def _handle_cancels(self) -> None:
        if not self.cancelled:
            return
        # ExecutorRequestQueue.update_waiting_queue: a waiting request leaves the queue without any response.
        self.waiting = collections.deque(w for w in self.waiting if w.result.request_id not in self.cancelled)
        for work in list(self.active):
            if work.result.request_id in self.cancelled:
                # finish_by_reason(FinishReason.CANCELLED): the normal finish path, one final response.
                for seq in work.sequences:
                    if seq.finish_reason is None:
                        seq.finish_reason = "cancelled"
                self._finish(work)
        self.cancelled.clear()

    def _admit(self) -> list[Work]:
        started = []
        llm = self.llm
        while self.waiting and len(self.active) < llm.max_batch_size:
            work = self.waiting[0]
            generated = work.budget * (work.params.best_of or work.params.n)
            reserve = len(work.prompt_ids) + (generated if self.policy == NO_EVICT else 0)
            allocation = llm.kv.admit(work.prompt_ids, reserve)
            if allocation is None:
                break  # FCFS: the head waits for KV blocks, and everyone behind it
            self.waiting.popleft()
            work.allocation = allocation
            work.cached_tokens = allocation.cached_tokens
            work.scheduled = time.monotonic()
            self.active.append(work)
            started.append(work)
        return started

    def _start(self, work: Work) -> None:
        """The context phase: the sequences and their token sources (a guided one compiles its grammar now)."""
        llm, params = self.llm, work.params
        try:
            for index in range(params.best_of or params.n):
                echo = sampled(work.echo, self.rng) if params.samples() else work.echo
                detok = Detokenizer(llm.tokenizer, params.skip_special_tokens)
                work.sequences.append(Sequence(index=index, tokens=self._source(params, echo), detok=detok))
        except Exception as err:  # one request fails, the engine goes on (upstream: "Guided decoding error")
            self._fail(work, ValueError(f"Guided decoding error: {err}"))
            return
        work.started = True

    def _source(self, params: SamplingParams, echo: str) -> Iterator[int]:
        llm = self.llm
        if params.guided_decoding is not None:
            run = GuidedRun(llm.guided_vocabulary(), regex_of(params.guided_decoding), echo, self.rng)

            def guided() -> Iterator[int]:
                while True:
                    yield run.next_token()

            return guided()
        body = llm.tokenizer.encode(echo, add_special_tokens=False).ids

        def echoed() -> Iterator[int]:
            while True:
                yield from body
                yield llm.eos_id

        return echoed()

    def _step(self, work: Work) -> None:
        if not work.started:
            return
        params, llm = work.params, self.llm
        if self.policy == MAX_UTILIZATION and work.allocation is not None:
            held = len(work.allocation.shared) + work.allocation.own_blocks
            need = llm.kv.blocks_for(len(work.prompt_ids) + work.steps + 1)
            if need > held and not llm.kv.grow(work.allocation):
                return  # paused: no block for its next token this iteration
        work.steps += 1
        work.last_token = time.monotonic()
        work.first_token = work.first_token or work.last_token
        stops = params.stop_strings()
        user_stops = set(params.stop_token_ids or ())
        ends = set() if params.ignore_eos else llm.stop_ids
        min_tokens = params.min_tokens or 0
        for seq in work.sequences:
            if seq.finish_reason is not None:
                continue
            token = next(seq.tokens)
            # TorchSampler masks the end tokens until min_tokens; the stand-in takes its next token instead.
            while (token in ends or token in user_stops) and len(seq.ids) < min_tokens:
                token = next(seq.tokens)
            if token in user_stops or token in ends:
                seq.finish_reason = "stop"
                seq.stop_reason = token if token in user_stops or token != llm.eos_id else None
                continue
            seq.ids.append(token)
            if params.logprobs:
                seq.logprobs.append(_logprobs(token, len(seq.ids), params.logprobs, llm.vocab_size))
            seq.cumulative += _sampled_logprob(token, len(seq.ids))
            text, stop = apply_stop(seq.detok.update(seq.ids), stops, include=params.include_stop_str_in_output)
            seq.text = text
            if stop is not None:
                seq.finish_reason, seq.stop_reason = "stop", stop
            elif len(seq.ids) >= work.budget:
                seq.finish_reason = "length"
            seq.shown = text if seq.finish_reason else releasable(text, stops)
        if all(seq.finish_reason is not None for seq in work.sequences):
            self._finish(work)
        elif work.result.streaming and work.steps % llm.stream_interval == 0:
            work.result.deliver(self._snapshot(work, finished=False))

    def _finish(self, work: Work) -> None:
        if work in self.active:
            self.active.remove(work)
        if work.allocation is not None:
            longest = max(work.sequences, key=lambda s: len(s.ids), default=None)
            self.llm.kv.release(work.allocation, work.prompt_ids + (longest.ids if longest else []))
            work.allocation = None
        for seq in work.sequences:
            seq.shown = seq.text
        work.result.deliver(self._snapshot(work, finished=True))

    def _fail(self, work: Work, err: BaseException) -> None:
        if work in self.active:
            self.active.remove(work)
        if work.allocation is not None:
            self.llm.kv.release(work.allocation, [])
            work.allocation = None
        work.result.deliver(err)

    def _snapshot(self, work: Work, *, finished: bool) -> Snapshot:
        cumulative = bool(work.params.logprobs) or (work.params.best_of or 1) > work.params.n
        return Snapshot(
            outputs=[
                (
                    list(seq.ids),
                    seq.shown,
                    list(seq.logprobs),
                    seq.cumulative if cumulative else None,
                    seq.finish_reason if finished else None,
                    seq.stop_reason if finished else None,
                )
                for seq in work.sequences
            ],
            finished=finished,
            cached_tokens=work.cached_tokens,
            timing=(work.arrival, work.scheduled, work.first_token, work.last_token),
        )

    def _record(self, started: list[Work]) -> None:
        if self.stats is None or not self.llm.iter_perf_stats:
            return
        kv = self.llm.kv.stats()
        contexts = len(started)
        scheduled = len({id(w) for w in self.active} | {id(w) for w in started})
        stat = {
            "iter": self._iteration,
            "numActiveRequests": len(self.active),
            "numQueuedRequests": len(self.waiting),
            "maxNumActiveRequests": self.llm.max_batch_size,
            "maxBatchSizeRuntime": self.llm.max_batch_size,
            "inflightBatchingStats": {
                "numScheduledRequests": scheduled,
                "numContextRequests": contexts,
                "numGenRequests": max(0, scheduled - contexts),
                "numPausedRequests": 0,
                "numCtxTokens": sum(len(w.prompt_ids) - w.cached_tokens for w in started),
            },
            "kvCacheStats": kv,
        }
        queue = self.stats.aqueue
        while queue.qsize() >= self.keep_stats:
            queue.get_nowait()  # the oldest goes: at most iter_stats_max_iterations kept
        self.stats.put(stat)

    def _write_state(self) -> None:
        """``{"active", "waiting", "kvCache"}`` to ``CPU_LLM_STATE_FILE`` when the counts change."""
        path = self.llm.state_file
        counts = (len(self.active), len(self.waiting))
        if not path or counts == self._counts:
            return
        self._counts = counts
        state = {"active": counts[0], "waiting": counts[1], "kvCache": self.llm.kv.stats()}
        tmp = f"{path}.tmp"
        Path(tmp).write_text(json.dumps(state), encoding="utf-8")
        os.replace(tmp, path)


def _sampled_logprob(token: int, position: int) -> float:
    """The stand-in's logprob of the token it emits (it has no model): a fixed function, always rank 1."""
    return -0.05 - 0.01 * ((token + position) % 7)


def _logprobs(token: int, position: int, k: int, vocab: int) -> dict[int, Logprob]:
    """``k`` top entries for one position, the emitted token first (rank 1), as TokenLogprobs holds them."""
    out = {token: Logprob(_sampled_logprob(token, position), 1)}
    other = token
    for rank in range(2, k + 1):
        other = (other + 1) % vocab
        out[other] = Logprob(-1.0 * rank - 0.01 * (other % 7), rank)
    return out
