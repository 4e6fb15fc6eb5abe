"""TEST DOUBLE: ``LLM`` and its ``RequestOutput`` on CPU, for our ``tensorrt_llm`` Triton model.

``LLM(**model.yaml minus triton_config)`` reads what the real constructor reads from the checkpoint
directory (``config.json`` and the tokenizer files) and the arguments the stand-in acts on:
``max_batch_size`` (requests generating at once; more wait), ``max_input_len`` (default 1024),
``max_seq_len`` (default the checkpoint's ``max_position_embeddings``), ``kv_cache_config``
(``enable_block_reuse`` default true, ``tokens_per_block`` default 32) and ``guided_decoding_backend``
(guided requests are refused without one, as the real executor has no grammar matcher then).
``generate_async(inputs, sampling_params, lora_request, prompt_adapter_request, streaming)`` as in
TensorRT-LLM's ``tensorrt_llm/llmapi/llm.py``; the result is async-iterable like the real one: in a stream
it yields itself after every token, else once at the end; ``outputs[0].text`` is cumulative and
``text_diff`` the part since the previous yield; ``abort()`` ends it with finish_reason ``cancelled``.

``get_stats(timeout)`` / ``get_stats_async(timeout)`` drain the iteration stats as the real ``LLM`` does (only with
``enable_iter_perf_stats``; at most ``iter_stats_max_iterations``, default 1000, kept): one per change of the block
pool, with ``kvCacheStats`` ``maxNumBlocks``, ``freeNumBlocks``, ``usedNumBlocks``, ``tokensPerBlock`` from the
stand-in's own accounting: a running request holds ceil((prompt + generated tokens) / tokens_per_block) blocks of a
pool of ``max_batch_size`` x 64 blocks (the real pool is sized from GPU memory), and frees them when it ends.

Timing comes from the environment (the Triton process's): ``CPU_LLM_FIRST_TOKEN_DELAY_MS`` before the first
token, ``CPU_LLM_TOKEN_DELAY_MS`` between tokens. With ``CPU_LLM_STATE_FILE`` set, the stand-in writes
``{"active": n, "waiting": m}`` there whenever a request starts or ends, so a test sees a slot freed.
"""

from __future__ import annotations

import asyncio
import collections
import itertools
import json
import os
import random
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from inference_platform.inference_image.testing.cpu_llm_api.blocks import BlockCache
from inference_platform.inference_image.testing.cpu_llm_api.guided import GuidedRun, GuidedVocabulary, regex_of
from inference_platform.inference_image.testing.cpu_llm_api.params import SamplingParams
from inference_platform.inference_image.testing.cpu_llm_api.text import (
    Detokenizer,
    apply_stop,
    echo_text,
    releasable,
    sampled,
)
from inference_platform.inference_image.testing.cpu_llm_api.vocabulary import token_bytes

FIRST_DELAY_ENV = "CPU_LLM_FIRST_TOKEN_DELAY_MS"
TOKEN_DELAY_ENV = "CPU_LLM_TOKEN_DELAY_MS"
STATE_FILE_ENV = "CPU_LLM_STATE_FILE"
DEFAULT_MAX_BATCH_SIZE = 2048
DEFAULT_MAX_INPUT_LEN = 1024
DEFAULT_TOKENS_PER_BLOCK = 32
BLOCKS_PER_SLOT = 64
"""The stand-in's block pool per batch slot (the real pool is sized from GPU memory)."""
DEFAULT_ITER_STATS_MAX_ITERATIONS = 1000
"""BaseLlmArgs.iter_stats_max_iterations unset: the executor keeps 1000 iterations' stats."""
_REQUEST_IDS = itertools.count(1)


@dataclass
class KvCacheMetrics:
    num_total_allocated_blocks: int = 0
    num_new_allocated_blocks: int = 0
    num_reused_blocks: int = 0
    num_missed_blocks: int = 0
    kv_cache_hit_rate: float = 0.0


@dataclass
class RequestPerfMetrics:
    kv_cache_metrics: KvCacheMetrics = field(default_factory=KvCacheMetrics)


@dataclass
class CompletionOutput:
    index: int
    text: str = ""
    token_ids: list[int] = field(default_factory=list)
    cumulative_logprob: float | None = None
    logprobs: list[float] = field(default_factory=list)
    finish_reason: str | None = None
    stop_reason: int | str | None = None
    request_perf_metrics: RequestPerfMetrics | None = None
    _last_text_len: int = field(default=0, repr=False)
    _last_token_ids_len: int = field(default=0, repr=False)

    @property
    def length(self) -> int:
        return len(self.token_ids)

    @property
    def text_diff(self) -> str:
        return self.text[self._last_text_len :]

    @property
    def token_ids_diff(self) -> list[int]:
        return self.token_ids[self._last_token_ids_len :]


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
        self.special_tokens = [t.content for t in self.tokenizer.get_added_tokens_decoder().values() if t.special]
        self.eos_id, self.stop_ids = _stop_tokens(self.tokenizer, tokenizer_dir)
        self.max_batch_size = int(args.get("max_batch_size") or DEFAULT_MAX_BATCH_SIZE)
        self.max_input_len = int(args.get("max_input_len") or DEFAULT_MAX_INPUT_LEN)
        self.max_seq_len = int(args.get("max_seq_len") or config.get("max_position_embeddings") or 0)
        if self.max_seq_len <= 0:
            raise ValueError("max_seq_len is unset and the checkpoint's config.json has no max_position_embeddings")
        kv = dict(args.get("kv_cache_config") or {})
        tokens_per_block = int(kv.get("tokens_per_block") or DEFAULT_TOKENS_PER_BLOCK)
        reuse = kv.get("enable_block_reuse", True)
        self.blocks = BlockCache(tokens_per_block, self.max_batch_size * BLOCKS_PER_SLOT) if reuse else None
        self.tokens_per_block = tokens_per_block
        self.max_blocks = self.max_batch_size * BLOCKS_PER_SLOT
        self._held: dict[int, int] = {}
        """request id -> KV blocks it holds while it runs."""
        keep = int(args.get("iter_stats_max_iterations") or DEFAULT_ITER_STATS_MAX_ITERATIONS)
        self._stats: collections.deque[dict[str, Any]] | None = (
            collections.deque(maxlen=keep) if args.get("enable_iter_perf_stats") else None
        )
        self._iteration = 0
        self.guided_backend = args.get("guided_decoding_backend")
        self._guided: GuidedVocabulary | None = None
        self.first_delay = _delay(FIRST_DELAY_ENV)
        self.token_delay = _delay(TOKEN_DELAY_ENV)
        self._state_file = os.environ.get(STATE_FILE_ENV)
        self._lock = threading.Lock()
        self._active = 0
        self._waiting = 0
        self._slots: asyncio.Semaphore | None = None
        self._write_state()

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
        return RequestOutput(self, prompt, list(ids), params, streaming)

    def shutdown(self) -> None:
        self._slots = None

    def get_stats(self, timeout: float | None = 2) -> list[dict[str, Any]]:
        """The iteration stats since the last call (none without ``enable_iter_perf_stats``)."""
        with self._lock:
            if self._stats is None:
                return []
            taken = list(self._stats)
            self._stats.clear()
        return taken

    async def get_stats_async(self, timeout: float | None = 2) -> Any:
        for stat in self.get_stats(timeout):
            yield stat

    # -- the stand-in's own machinery ----------------------------------------------------------------------
    def guided_vocabulary(self) -> GuidedVocabulary:
        if self._guided is None:
            self._guided = GuidedVocabulary(token_bytes(self.tokenizer), self.eos_id)
        return self._guided

    def slots(self) -> asyncio.Semaphore:
        if self._slots is None:
            self._slots = asyncio.Semaphore(self.max_batch_size)
        return self._slots

    def count(self, *, waiting: int = 0, active: int = 0) -> None:
        with self._lock:
            self._waiting += waiting
            self._active += active
        self._write_state()

    def hold(self, request_id: int, tokens: int) -> None:
        """Request ``request_id`` now holds the blocks of ``tokens`` tokens (0: it ended and freed them)."""
        blocks = -(-tokens // self.tokens_per_block)
        with self._lock:
            if blocks:
                self._held[request_id] = blocks
            else:
                self._held.pop(request_id, None)
            if self._stats is None:
                return
            used = sum(self._held.values())
            self._iteration += 1
            self._stats.append(
                {
                    "iter": self._iteration,
                    "numActiveRequests": self._active,
                    "numQueuedRequests": self._waiting,
                    "maxNumActiveRequests": self.max_batch_size,
                    "kvCacheStats": {
                        "maxNumBlocks": self.max_blocks,
                        "freeNumBlocks": self.max_blocks - used,
                        "usedNumBlocks": used,
                        "tokensPerBlock": self.tokens_per_block,
                    },
                }
            )

    def _write_state(self) -> None:
        if not self._state_file:
            return
        with self._lock:
            state = json.dumps({"active": self._active, "waiting": self._waiting})
            tmp = f"{self._state_file}.tmp"
            Path(tmp).write_text(state, encoding="utf-8")
            os.replace(tmp, self._state_file)


@dataclass(frozen=True)
class _Step:
    """One response's worth of progress, applied to the output when the caller takes it (as the real result
    applies each response it dequeues, so ``text_diff`` is exactly that response's new text)."""

    token_ids: tuple[int, ...]
    text: str
    finish_reason: str | None = None
    stop_reason: int | str | None = None


class RequestOutput:
    def __init__(self, llm: LLM, prompt: str | None, ids: list[int], params: SamplingParams, streaming: bool) -> None:
        self.request_id = next(_REQUEST_IDS)
        self.prompt = prompt
        self.prompt_token_ids = ids
        self.streaming = streaming
        self.finished = False
        self.outputs = [CompletionOutput(index=0)]
        self._llm = llm
        self._params = params
        self._aborted = asyncio.Event()
        self._queue: asyncio.Queue[_Step | BaseException] = asyncio.Queue()
        self._task = asyncio.get_running_loop().create_task(self._run())

    def abort(self) -> None:
        self._aborted.set()

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
        out = self.outputs[0]
        out._last_text_len, out._last_token_ids_len = len(out.text), len(out.token_ids)
        out.token_ids, out.text = list(item.token_ids), item.text
        out.finish_reason, out.stop_reason = item.finish_reason, item.stop_reason
        self.finished = item.finish_reason is not None
        return self

    async def _run(self) -> None:
        llm = self._llm
        llm.count(waiting=1)
        async with llm.slots():
            llm.count(waiting=-1, active=1)
            try:
                await self._generate(llm, self._params)
            except Exception as err:  # the caller's iteration raises it, as the executor's errors do
                self._queue.put_nowait(err)
            finally:
                llm.count(active=-1)
                llm.hold(self.request_id, 0)

    def _perf_metrics(self, llm: LLM) -> None:
        reused = llm.blocks.admit(self.prompt_token_ids) if llm.blocks is not None else 0
        if not self._params.return_perf_metrics:
            return
        size = llm.blocks.tokens_per_block if llm.blocks is not None else DEFAULT_TOKENS_PER_BLOCK
        total = -(-len(self.prompt_token_ids) // size)
        self.outputs[0].request_perf_metrics = RequestPerfMetrics(
            KvCacheMetrics(
                num_total_allocated_blocks=total,
                num_new_allocated_blocks=total - reused,
                num_reused_blocks=reused,
                num_missed_blocks=total - reused,
                kv_cache_hit_rate=reused / total if total else 0.0,
            )
        )

    async def _generate(self, llm: LLM, params: SamplingParams) -> None:
        self._perf_metrics(llm)
        llm.hold(self.request_id, len(self.prompt_token_ids))
        rng = random.Random(params.seed)
        prompt_text = self.prompt or llm.tokenizer.decode(self.prompt_token_ids, skip_special_tokens=False)
        echo = echo_text(prompt_text, llm.special_tokens)
        if params.samples():
            echo = sampled(echo, rng)
        tokens = _token_source(llm, params, echo, rng)
        budget = min(params.max_tokens, llm.max_seq_len - len(self.prompt_token_ids))
        stops, stop_ids = params.stop_strings(), set(params.stop_token_ids or ()) | llm.stop_ids
        detok = Detokenizer(llm.tokenizer, params.skip_special_tokens)
        ids: list[int] = []
        text = ""
        delay = llm.first_delay
        while True:
            if await _aborted_within(self._aborted, delay):
                self._queue.put_nowait(_Step(tuple(ids), text, "cancelled"))
                return
            delay = llm.token_delay
            token = next(tokens)
            if token in stop_ids and not params.ignore_eos:
                stop_reason = None if token == llm.eos_id else token
                self._queue.put_nowait(_Step(tuple(ids), text, "stop", stop_reason))
                return
            ids.append(token)
            llm.hold(self.request_id, len(self.prompt_token_ids) + len(ids))
            text, stop = apply_stop(detok.update(ids), stops, include=params.include_stop_str_in_output)
            finish = "stop" if stop is not None else ("length" if len(ids) >= budget else None)
            if finish is not None:
                self._queue.put_nowait(_Step(tuple(ids), text, finish, stop))
            elif self.streaming:
                self._queue.put_nowait(_Step(tuple(ids), releasable(text, stops)))
            if finish is not None:
                return


async def _aborted_within(event: asyncio.Event, seconds: float) -> bool:
    """Wait ``seconds`` (a decode step); True at once if the request is aborted meanwhile."""
    if event.is_set():
        return True
    try:
        await asyncio.wait_for(event.wait(), timeout=seconds)
    except TimeoutError:
        return False
    return True


def _token_source(llm: LLM, params: SamplingParams, echo: str, rng: random.Random):
    """The tokens the stand-in emits: the guide's walk, or the echo then the EOS, over and over."""
    if params.guided_decoding is not None:
        run = GuidedRun(llm.guided_vocabulary(), regex_of(params.guided_decoding), echo, rng)
        while True:
            yield run.next_token()
    body = llm.tokenizer.encode(echo, add_special_tokens=False).ids
    while True:
        yield from body
        yield llm.eos_id


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


def _delay(name: str) -> float:
    raw = os.environ.get(name, "0")
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"{name} must be an integer number of milliseconds, got {raw!r}") from None
    if not 0 <= value <= 60_000:
        raise ValueError(f"{name} must be between 0 and 60000 ms, got {value}")
    return value / 1000
