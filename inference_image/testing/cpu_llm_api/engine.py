"""TEST DOUBLE: ``LLM`` and its results on CPU, for our ``tensorrt_llm`` Triton model, as TensorRT-LLM 1.2.1's LLM API
behaves where our product depends on it (each behaviour pinned in tests/inference_image/cpu_llm_api/
test_upstream_behaviour.py against the upstream file it copies; limits in docs/serving.md).

``LLM(**model.yaml minus triton_config)`` reads what the real constructor reads from the checkpoint directory
(``config.json`` and the tokenizer files) and the arguments the stand-in acts on: ``max_batch_size`` (requests running
at once), ``max_input_len`` (default 1024), ``max_seq_len`` (default the checkpoint's ``max_position_embeddings``),
``kv_cache_config`` (``tokens_per_block`` 32, ``enable_block_reuse`` and ``enable_partial_reuse`` true, ``max_tokens``:
the KV pool; ``kv_cache.PrefixCache``), ``scheduler_config.capacity_scheduler_policy`` (``GUARANTEED_NO_EVICT`` or
``MAX_UTILIZATION``), ``stream_interval`` (1), ``enable_iter_perf_stats`` and ``iter_stats_max_iterations`` (1000), and
``guided_decoding_backend`` (guided requests are refused without one).

``generate_async(inputs, sampling_params, lora_request, prompt_adapter_request, streaming)`` returns a
``RequestOutput`` that, as upstream's ``GenerationResult``: yields itself after each response (a stream: every
``stream_interval`` tokens; else once at the end); keeps ``best_of`` sequences and shows ``n`` of them (sorted by
cumulative logprob when ``best_of > n``); carries the exact ``cached_tokens``; and whose ``abort()`` only asks the
executor to cancel (``executor.Executor``: a request still waiting gets no final response at all).
``get_stats_async(timeout)`` is the shared ``IterationResult`` (``iteration_result``).

The stand-in has no model: it echoes the last text of the prompt (its words shuffled when decoding samples, by ONE
generator seeded 42 for the whole engine, as TorchSampler: ``seed`` is not honoured), ends with the tokenizer's EOS,
and constrains guided requests to their JSON schema or regex for real (``guided``). Timing comes from the Triton
process's environment: ``CPU_LLM_FIRST_TOKEN_DELAY_MS`` (each prefill), ``CPU_LLM_PREFILL_US_PER_TOKEN`` (each uncached
prompt token), ``CPU_LLM_TOKEN_DELAY_MS`` (each iteration). With ``CPU_LLM_STATE_FILE`` set it writes
``{"active", "waiting", "kvCache": {...}}`` there whenever the counts change.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
from datetime import timedelta
from pathlib import Path
from typing import Any

from inference_platform.inference_image.runtime.byte_level import token_bytes
from inference_platform.inference_image.testing.cpu_llm_api.executor import NO_EVICT, Executor, Snapshot, Work
from inference_platform.inference_image.testing.cpu_llm_api.guided import GuidedVocabulary
from inference_platform.inference_image.testing.cpu_llm_api.iteration_result import (
    IterationResult,
    empty_async_iterable,
)
from inference_platform.inference_image.testing.cpu_llm_api.kv_cache import PrefixCache
from inference_platform.inference_image.testing.cpu_llm_api.outputs import (
    CompletionOutput,
    KvCacheMetrics,
    RequestPerfMetrics,
    TimingMetrics,
)
from inference_platform.inference_image.testing.cpu_llm_api.params import SamplingParams
from inference_platform.inference_image.testing.cpu_llm_api.text import echo_text

FIRST_DELAY_ENV = "CPU_LLM_FIRST_TOKEN_DELAY_MS"
TOKEN_DELAY_ENV = "CPU_LLM_TOKEN_DELAY_MS"
PREFILL_ENV = "CPU_LLM_PREFILL_US_PER_TOKEN"
STATE_FILE_ENV = "CPU_LLM_STATE_FILE"
DEFAULT_MAX_BATCH_SIZE = 2048
DEFAULT_MAX_INPUT_LEN = 1024
DEFAULT_TOKENS_PER_BLOCK = 32
DEFAULT_ITER_STATS_MAX_ITERATIONS = 1000
"""BaseLlmArgs.iter_stats_max_iterations unset: the executor keeps 1000 iterations' stats."""
GLOBAL_SEED = 42
"""TorchSampler's ``self._global_seed`` (1.2-era ``_torch/pyexecutor/sampler.py``, before per-request seeds)."""
MAX_PREFILL_US_PER_TOKEN = 100_000
_REQUEST_IDS = itertools.count(1)


class LLM:
    def __init__(self, model: str, tokenizer: str | None = None, **args: Any) -> None:
        from tokenizers import Tokenizer

        self.args = {"model": model, "tokenizer": tokenizer, **args}
        checkpoint = Path(model)
        tokenizer_dir = Path(tokenizer) if tokenizer else checkpoint
        for path in (checkpoint / "config.json", tokenizer_dir / "tokenizer.json"):
            if not path.is_file():
                raise ValueError(f"model {model!r}: {path} is missing (not a Hugging Face checkpoint directory)")
        config = json.loads((checkpoint / "config.json").read_text(encoding="utf-8"))
        self.tokenizer = Tokenizer.from_file(str(tokenizer_dir / "tokenizer.json"))
        self.vocab_size = self.tokenizer.get_vocab_size(with_added_tokens=True)
        self.special_tokens = [t.content for t in self.tokenizer.get_added_tokens_decoder().values() if t.special]
        self.eos_id, self.stop_ids = _stop_tokens(self.tokenizer, tokenizer_dir)
        self.max_batch_size = int(args.get("max_batch_size") or DEFAULT_MAX_BATCH_SIZE)
        self.max_input_len = int(args.get("max_input_len") or DEFAULT_MAX_INPUT_LEN)
        self.max_seq_len = int(args.get("max_seq_len") or config.get("max_position_embeddings") or 0)
        if self.max_seq_len <= 0:
            raise ValueError("max_seq_len is unset and the checkpoint's config.json has no max_position_embeddings")
        kv = dict(args.get("kv_cache_config") or {})
        tokens_per_block = int(kv.get("tokens_per_block") or DEFAULT_TOKENS_PER_BLOCK)
        pool_tokens = int(kv.get("max_tokens") or self.max_batch_size * self.max_seq_len)
        self.kv = PrefixCache(
            tokens_per_block=tokens_per_block,
            capacity_blocks=max(1, pool_tokens // tokens_per_block),
            reuse=bool(kv.get("enable_block_reuse", True)),
            partial_reuse=bool(kv.get("enable_partial_reuse", True)),
        )
        scheduler = dict(args.get("scheduler_config") or {})
        self.policy = str(scheduler.get("capacity_scheduler_policy") or NO_EVICT).upper()
        self.stream_interval = int(args.get("stream_interval") or 1)
        self.iter_perf_stats = bool(args.get("enable_iter_perf_stats"))
        self.keep_stats = int(args.get("iter_stats_max_iterations") or DEFAULT_ITER_STATS_MAX_ITERATIONS)
        self.guided_backend = args.get("guided_decoding_backend")
        self._guided: GuidedVocabulary | None = None
        self.global_seed = GLOBAL_SEED
        self.first_delay = _delay(FIRST_DELAY_ENV)
        self.token_delay = _delay(TOKEN_DELAY_ENV)
        self.prefill_per_token = _microseconds(PREFILL_ENV)
        self.state_file = os.environ.get(STATE_FILE_ENV)
        self._iteration_result: IterationResult | None = None
        self._executor: Executor | None = None

    def generate_async(
        self,
        inputs: str | list[int],
        sampling_params: SamplingParams | None = None,
        lora_request: Any = None,
        prompt_adapter_request: Any = None,
        streaming: bool = False,
        **kwargs: Any,
    ) -> RequestOutput:
        if lora_request is not None or prompt_adapter_request is not None:
            raise TypeError("the CPU stand-in serves no LoRA/prompt adapters (pass streaming= by keyword)")
        params = sampling_params or SamplingParams()
        if isinstance(inputs, str):
            prompt, ids = inputs, self.tokenizer.encode(inputs, add_special_tokens=params.add_special_tokens).ids
        else:
            prompt, ids = None, [int(i) for i in inputs]
        if len(ids) > self.max_input_len:
            raise ValueError(f"prompt length ({len(ids)}) exceeds max_input_len ({self.max_input_len})")
        if params.guided_decoding is not None and not self.guided_backend:
            raise ValueError("guided decoding needs guided_decoding_backend in the LLM arguments")
        budget = max(1, min(params.max_tokens, self.max_seq_len - len(ids)))
        generated = budget * (params.best_of or params.n) if self.policy == NO_EVICT else 0
        needed = self.kv.blocks_for(len(ids) + generated)
        if needed > self.kv.capacity_blocks:
            raise ValueError(f"the request needs {needed} KV-cache blocks; the pool has {self.kv.capacity_blocks}")
        executor = self._running_executor()
        # GenerationExecutor._maybe_initialize_iteration_results: the first submission creates the shared stats
        # result, every later one marks it undone.
        if self._iteration_result is None:
            self._iteration_result = IterationResult()
            executor.stats = self._iteration_result
        else:
            self._iteration_result.mark_undone()
        result = RequestOutput(self, prompt, list(ids), params, streaming)
        text = prompt if prompt is not None else self.tokenizer.decode(list(ids), skip_special_tokens=False)
        executor.submit(Work(result, params, list(ids), echo_text(text, self.special_tokens), budget))
        return result

    def get_stats_async(self, timeout: float = 2) -> Any:
        """The shared ``IterationResult`` with its timeout set (an empty iterable before the first request)."""
        if self._iteration_result is None:
            return empty_async_iterable()
        self._iteration_result.set_timeout(timeout)
        return self._iteration_result

    def shutdown(self) -> None:
        if self._executor is not None:
            self._executor.stop()

    # -- the stand-in's own machinery ----------------------------------------------------------------------
    def guided_vocabulary(self) -> GuidedVocabulary:
        if self._guided is None:
            self._guided = GuidedVocabulary(token_bytes(self.tokenizer), self.eos_id)
        return self._guided

    def cancel(self, request_id: int) -> None:
        if self._executor is not None:
            self._executor.cancel(request_id)

    def kv_cache_stats(self) -> dict[str, Any]:
        """The KV pool's sizes and counters (the same as each iteration's ``kvCacheStats``)."""
        return self.kv.stats()

    def _running_executor(self) -> Executor:
        """The executor on this event loop. The real LLM runs on a loop of its own; a test that drives one stand-in
        from several loops gets a new executor (same KV cache and generator) on each."""
        loop = asyncio.get_running_loop()
        old = self._executor
        if old is not None and old.loop is loop:
            return old
        executor = Executor(self, policy=self.policy, stats=None, keep_stats=self.keep_stats)
        if old is not None:
            executor.rng = old.rng
            old.stop()
        if self._iteration_result is not None:
            self._iteration_result.aqueue = asyncio.Queue()
            executor.stats = self._iteration_result
        self._executor = executor
        return executor


class RequestOutput:
    """A submitted request's result, as upstream's ``GenerationResult`` (``tensorrt_llm/executor/result.py``)."""

    def __init__(self, llm: LLM, prompt: str | None, ids: list[int], params: SamplingParams, streaming: bool) -> None:
        self.request_id = next(_REQUEST_IDS)
        self.prompt = prompt
        self.prompt_token_ids = ids
        self.streaming = streaming
        self.sampling_params = params
        self.finished = False
        self.cached_tokens = 0
        self._llm = llm
        self._aborted = False
        self._outputs = [CompletionOutput(index=i) for i in range(params.best_of or params.n)]
        self._queue: asyncio.Queue[Snapshot | BaseException] = asyncio.Queue()

    @property
    def outputs(self) -> list[CompletionOutput]:
        params = self.sampling_params
        if params.n == (params.best_of or params.n):
            return self._outputs[: params.n]
        ranked = sorted(
            self._outputs,
            key=lambda o: o.cumulative_logprob if o.cumulative_logprob is not None else float("-inf"),
            reverse=True,
        )
        for i, out in enumerate(ranked):
            out.index = i
        return ranked[: params.n]

    def abort(self) -> None:
        """Ask the executor to cancel (upstream: ``abort_request``); the iteration does not end by itself."""
        self._llm.cancel(self.request_id)
        self._aborted = True

    def aborted(self) -> bool:
        return self._aborted

    def deliver(self, item: Snapshot | BaseException) -> None:
        """The executor's side: one response (or the request's error)."""
        self._queue.put_nowait(item)

    async def aresult(self) -> RequestOutput:
        async for _ in self:
            pass
        return self

    def __aiter__(self) -> RequestOutput:
        return self

    async def __anext__(self) -> RequestOutput:
        if self.finished:
            raise StopAsyncIteration
        item = await self._queue.get()
        if isinstance(item, BaseException):
            self.finished = True
            raise item
        self._apply(item)
        return self

    def _apply(self, snap: Snapshot) -> None:
        self.cached_tokens = snap.cached_tokens
        perf = self._perf(snap.timing) if self.sampling_params.return_perf_metrics else None
        for out, (ids, text, logprobs, cumulative, finish, stop) in zip(self._outputs, snap.outputs, strict=False):
            out._last_text_len, out._last_token_ids_len = len(out.text), len(out.token_ids)
            out._last_logprobs_len = len(out.logprobs)
            out.token_ids, out.text, out.logprobs = ids, text, logprobs
            out.cumulative_logprob = cumulative
            out.finish_reason, out.stop_reason = finish, stop
            out.request_perf_metrics = perf
        self.finished = snap.finished

    def _perf(self, timing: tuple[float, float, float, float]) -> RequestPerfMetrics:
        size = self._llm.kv.tokens_per_block
        total = -(-len(self.prompt_token_ids) // size)
        reused = min(total, -(-self.cached_tokens // size))
        return RequestPerfMetrics(
            KvCacheMetrics(
                num_total_allocated_blocks=total,
                num_new_allocated_blocks=total - reused,
                num_reused_blocks=reused,
                num_missed_blocks=total - reused,
                kv_cache_hit_rate=reused / total if total else 0.0,
            ),
            TimingMetrics(*(timedelta(seconds=t) for t in timing)),
        )


def _stop_tokens(tokenizer: Any, directory: Path) -> tuple[int, set[int]]:
    """The EOS (tokenizer_config.json ``eos_token``) and every id generation_config.json ends on."""
    config = _json(directory / "tokenizer_config.json")
    eos = config.get("eos_token")
    eos = eos.get("content") if isinstance(eos, dict) else eos
    eos_id = tokenizer.token_to_id(eos) if isinstance(eos, str) else None
    generation = _json(directory / "generation_config.json").get("eos_token_id")
    ids = set(generation if isinstance(generation, list) else [generation] if isinstance(generation, int) else [])
    if eos_id is None:
        if not ids:
            raise ValueError(f"{directory}: no eos_token in tokenizer_config.json or generation_config.json")
        eos_id = min(ids)
    return eos_id, ids | {eos_id}


def _json(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    data = json.loads(path.read_text(encoding="utf-8"))
    return data if isinstance(data, dict) else {}


def _microseconds(name: str) -> float:
    raw = os.environ.get(name, "0")
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"{name} must be an integer number of microseconds, got {raw!r}") from None
    if not 0 <= value <= MAX_PREFILL_US_PER_TOKEN:
        raise ValueError(f"{name} must be between 0 and {MAX_PREFILL_US_PER_TOKEN} us, got {value}")
    return value / 1_000_000


def _delay(name: str) -> float:
    raw = os.environ.get(name, "0")
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"{name} must be an integer number of milliseconds, got {raw!r}") from None
    if not 0 <= value <= 60_000:
        raise ValueError(f"{name} must be between 0 and 60000 ms, got {value}")
    return value / 1000
