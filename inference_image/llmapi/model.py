"""The ``tensorrt_llm`` Triton model: TensorRT-LLM's LLM API (PyTorch backend) behind the tensors of ``contract``.

Triton's Python backend runs this file from the rendered repository (``<repo>/tensorrt_llm/1/model.py``). It
builds ``LLM(**model.yaml)`` once, on an asyncio loop of its own thread, and hands every request to
``generate_async``: the LLM API batches in flight, so requests are not batched here (``max_batch_size: 0``).
The engine module is ``tensorrt_llm`` unless ``LLM_ENGINE_MODULE`` names another with the same ``LLM``,
``SamplingParams`` and ``GuidedDecodingParams`` (the CPU stand-in of the local stack).

Per request (decoupled, i.e. ``serving.streaming``): a stream sends each response's new text per returned sequence
(``CompletionOutput.text_diff``) with the cumulative token counts and ``finish_reason`` "" until a sequence ends;
without ``streaming`` one response carries the whole texts. The model's stop strings (config.pbtxt ``stop_words``)
join every request's. ``num_cached_tokens`` is the engine's exact count (``GenerationResult.cached_tokens``).

What TensorRT-LLM 1.2.1 does and this model answers for (shared/facts/engine.md sections 2 and 3):

- **Cancellation.** ``abort()`` of a request still in the executor's waiting queue produces no final response at all
  (``ExecutorRequestQueue.update_waiting_queue`` only filters it out). So, as upstream's own LLM-API model does
  (``cancellation_loop``), this model answers a request whose client went away (polled every
  ``cancellation_check_period_ms``) or that a ``stop`` request names with its own final CANCELLED response, forgets it
  (its gauges drop at once) and stops awaiting its result; nothing more is ever sent for it.
- **Iteration stats.** ``get_stats_async`` is one shared iterator that ends only after ``timeout`` of silence: under
  steady load it never ends. The KV-cache and scheduling gauges are therefore set while iterating, at most once per
  ``STATS_PERIOD_S``, never only when the iteration ends; when it ends with nothing in flight the engine holds no
  blocks, and the gauges say so.
- **Liveness.** A ``liveness`` request is answered by this model's event loop with the requests it holds and the
  seconds since the engine last showed progress (a response or an iteration stat): the OpenAI server's liveness
  route (inference_image/liveness.py) fails when Triton cannot reach this process or the engine stalls with work.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import json
import os
import queue
import threading
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
import triton_python_backend_utils as pb_utils
import yaml

from inference_platform.inference_image.llmapi.coalesce import coalesce
from inference_platform.inference_image.llmapi.kv_cache_gauges import KvCacheGauges, engine_values, idle_values
from inference_platform.inference_image.runtime.request_gauges import TRT_LLM_FAMILY, RequestGauges

ENGINE_MODULE_ENV = "LLM_ENGINE_MODULE"
DEFAULT_ENGINE_MODULE = "tensorrt_llm"
DEFAULT_TOKENS_PER_BLOCK = 32
"""KvCacheConfig.tokens_per_block's default (TensorRT-LLM 1.2 ``llmapi/llm_args.py``)."""
LLM_API_MAX_BATCH_SIZE = 2048
"""BaseLlmArgs.max_batch_size's default (llm_args.py, 1.2 line); the renderer always writes the setting."""
STATS_PERIOD_S = 1.0
"""The gauges take the newest iteration stats at most this often (Prometheus scrapes every 15 s, the EPP every 50 ms
but reads a value at most 2 s old)."""
STATS_TIMEOUT_S = 2.0
"""``get_stats_async(timeout)``: upstream's own default; the iteration ends after this long without a stat."""
ENGINE_REQUEST_TYPES = ("scheduled", "context")
"""nv_trt_llm_request_metrics values read from the engine's iteration stats (llm-d's EPP reads ``scheduled``)."""
GUIDE_TYPES = ("json_object", "json_schema", "regex", "ebnf")
_SAMPLING = {
    # input tensor -> SamplingParams keyword
    "sampling_param_temperature": "temperature",
    "sampling_param_top_k": "top_k",
    "sampling_param_top_p": "top_p",
    "sampling_param_frequency_penalty": "frequency_penalty",
    "sampling_param_presence_penalty": "presence_penalty",
    "sampling_param_repetition_penalty": "repetition_penalty",
    "sampling_param_max_tokens": "max_tokens",
    "sampling_param_min_tokens": "min_tokens",
    "sampling_param_seed": "seed",
    "sampling_param_ignore_eos": "ignore_eos",
    "sampling_param_include_stop_str_in_output": "include_stop_str_in_output",
    "sampling_param_skip_special_tokens": "skip_special_tokens",
    "sampling_param_n": "n",
    "sampling_param_best_of": "best_of",
    "sampling_param_logprobs": "logprobs",
    "sampling_param_exclude_input_from_output": "exclude_input_from_output",
    "sampling_param_add_special_tokens": "add_special_tokens",
}


class RequestError(ValueError):
    """A request this model refuses; the message names the input."""


class TritonPythonModel:
    def initialize(self, args: dict[str, Any]) -> None:
        config = json.loads(args["model_config"])
        params = {k: v.get("string_value", "") for k, v in config.get("parameters", {}).items()}
        version_dir = Path(args["model_repository"]) / args["model_version"]
        llm_args = yaml.safe_load((version_dir / params.get("llm_config", "model.yaml")).read_text(encoding="utf-8"))
        self.stop_words = list(json.loads(params.get("stop_words") or "[]"))
        self.cancel_period = int(params.get("cancellation_check_period_ms") or 100) / 1000
        self.vocab_size = _vocab_size(llm_args)
        self.decoupled = pb_utils.using_decoupled_model_transaction_policy(config)
        name = os.environ.get(ENGINE_MODULE_ENV, DEFAULT_ENGINE_MODULE)
        engine = importlib.import_module(name)
        self.sampling_params = engine.SamplingParams
        guided = getattr(engine, "GuidedDecodingParams", None)
        self.guided_params = guided or importlib.import_module(f"{name}.llmapi").GuidedDecodingParams
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="llm-api", daemon=True)
        self.thread.start()
        self.running: dict[int, _Running] = {}
        """id(result) -> the request generating it."""
        self.last_progress = time.monotonic()
        """When the engine last answered anything (a response or an iteration stat)."""
        # nv_trt_llm_request_metrics, as the C++ backend published it: KEDA scales on active + waiting per replica.
        # The LLM API runs up to max_batch_size at once; the rest wait in its queue.
        self.max_active = int(llm_args.get("max_batch_size") or LLM_API_MAX_BATCH_SIZE)
        self.gauges = RequestGauges(
            pb_utils,
            family=TRT_LLM_FAMILY,
            model=args["model_name"],
            version=args["model_version"],
            max_active=self.max_active,
            engine_types=ENGINE_REQUEST_TYPES,
        )
        # nv_trt_llm_kv_cache_block_metrics (the KV-cache alert, KEDA's kvCacheTarget, llm-d's EPP) from the stats.
        self.kv_gauges = KvCacheGauges(pb_utils, model=args["model_name"], version=args["model_version"])
        # The block size is the configuration's (KvCacheConfig.tokens_per_block), known before the engine's first
        # iteration stats: published now, so a router sizing its prefix blocks from it (llm-d's EPP reads
        # tokens_per) never reads 0. The pool's size (max) waits for the engine, which sizes it from free memory.
        self.kv_gauges.update({"tokens_per": float(_tokens_per_block(llm_args))})
        self.lock = threading.Lock()
        """Guards ``running`` and every ``_Running.closed``: the cancellation check runs only under it."""
        self.llm = self._on_loop(self._build(engine.LLM, llm_args))
        # Responses leave through one thread of their own: a send waits on the stub's IPC, which must not hold
        # up the loop the engine's results arrive on. One queue keeps each request's responses in order.
        self.outbox: queue.SimpleQueue[tuple[Any, Any, int] | None] = queue.SimpleQueue()
        self.sender = threading.Thread(target=self._send_loop, name="llm-send", daemon=True)
        self.sender.start()
        self.stopping = threading.Event()
        self.watch = threading.Thread(target=self._watch_cancellation, name="llm-cancel", daemon=True)
        self.watch.start()
        self.stats_task = asyncio.run_coroutine_threadsafe(self._poll_stats(), self.loop)

    def execute(self, requests: list[Any]) -> list[Any] | None:
        if self.decoupled:
            for request in requests:
                asyncio.run_coroutine_threadsafe(self._serve(request, request.get_response_sender()), self.loop)
            return None
        futures = [asyncio.run_coroutine_threadsafe(self._serve(request, None), self.loop) for request in requests]
        return [_result_or_cancelled(f) for f in futures]

    def finalize(self) -> None:
        self.stopping.set()
        self.stats_task.cancel()
        with self.lock:
            running = list(self.running.values())
        for entry in running:
            self.loop.call_soon_threadsafe(entry.result.abort)
        self._on_loop(self._shutdown())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=30)
        self.outbox.put(None)
        self.sender.join(timeout=30)

    # -- on the loop --------------------------------------------------------------------------------------
    async def _build(self, llm_class: Any, llm_args: dict[str, Any]) -> Any:
        return await asyncio.get_running_loop().run_in_executor(None, lambda: llm_class(**llm_args))

    async def _poll_stats(self) -> None:
        """The engine gauges from the iteration stats, while the shared iterator runs (it ends only after
        ``STATS_TIMEOUT_S`` without a stat), at most once per ``STATS_PERIOD_S``."""
        published = 0.0
        last: dict[str, float] | None = None
        while not self.stopping.is_set():
            pending = None
            try:
                async for stat in self.llm.get_stats_async(timeout=STATS_TIMEOUT_S):
                    self.last_progress = time.monotonic()
                    pending = engine_values(stat) or pending
                    if pending is not None and self.last_progress - published >= STATS_PERIOD_S:
                        self._publish_engine(pending)
                        last, pending, published = pending, None, self.last_progress
            except asyncio.CancelledError:
                raise
            except Exception as err:  # stats are advisory: a failed read must never stop serving
                pb_utils.Logger.log_warn(f"tensorrt_llm: iteration stats unreadable: {err}")
            if pending is not None:
                self._publish_engine(pending)
                last, published = pending, time.monotonic()
            with self.lock:
                idle = not self.running
            if idle and last is not None and last != (zero := idle_values(last)):
                self._publish_engine(zero)  # the iteration ended with nothing in flight: no blocks held
                last = zero
            await asyncio.sleep(STATS_PERIOD_S)

    def _publish_engine(self, values: dict[str, float]) -> None:
        self.kv_gauges.update({k: v for k, v in values.items() if k not in ENGINE_REQUEST_TYPES})
        self.gauges.update_engine({k: v for k, v in values.items() if k in ENGINE_REQUEST_TYPES})

    async def _shutdown(self) -> None:
        await asyncio.get_running_loop().run_in_executor(None, self.llm.shutdown)

    async def _serve(self, request: Any, sender: Any) -> Any:
        """Answer ``request`` (through ``sender`` when decoupled; else return the one response)."""
        try:
            if _scalar(request, "liveness"):
                return self._send(sender, self._liveness(), final=True)
            if _scalar(request, "stop"):
                self._stop(request.request_id())
                return self._send(sender, pb_utils.InferenceResponse(output_tensors=[]), final=True)
            prompt, kwargs, streaming = self._parse(request)
            if streaming and not self.decoupled:
                raise RequestError("streaming: needs the decoupled transaction policy (serving.streaming: true)")
            result = self.llm.generate_async(
                prompt, sampling_params=self.sampling_params(**kwargs), streaming=streaming
            )
        except Exception as err:  # a refused request gets one error response, never a hang
            return self._send(sender, _error(err), final=True)
        want_logprobs = bool(kwargs.get("logprobs"))
        cancelled = sender.is_cancelled if sender is not None else getattr(request, "is_cancelled", lambda: False)
        entry = _Running(result, cancelled, request.request_id(), asyncio.current_task(), sender)
        with self.lock:
            if not self.running:
                self.last_progress = time.monotonic()  # idle until now is no stall
            self.running[id(result)] = entry
            self._publish()
        try:
            last = None
            async for output in result:
                self.last_progress = time.monotonic()
                last = output
                if streaming:
                    done = output.finished
                    response = self._response(output, done, streaming=True, logprobs=want_logprobs)
                    self._send(sender, response, final=done, entry=entry)
            if streaming:
                return None
            response = self._response(last, True, streaming=False, logprobs=want_logprobs)
            return self._send(sender, response, final=True, entry=entry)
        except asyncio.CancelledError:
            # Only _cancel() cancels this task: it has answered CANCELLED already and forgotten the request.
            return _cancelled_response()
        except Exception as err:
            return self._send(sender, _error(err), final=True, entry=entry)
        finally:
            self._forget(entry)

    def _forget(self, entry: _Running) -> None:
        with self.lock:
            if self.running.pop(id(entry.result), None) is not None:
                self._publish()

    def _cancel(self, entry: _Running) -> None:
        """On the loop: abort the engine request, answer CANCELLED ourselves (a waiting request gets nothing from
        the engine), forget it and stop awaiting it. ``entry.closed`` is already set: nothing else goes out."""
        with contextlib.suppress(Exception):  # an engine that already finished it may refuse the abort
            entry.result.abort()
        self._forget(entry)
        if entry.sender is not None:
            self.outbox.put((entry.sender, _cancelled_response(), pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL))
        if entry.task is not None and entry.task is not asyncio.current_task():
            entry.task.cancel()

    def _publish(self) -> None:
        """The request gauges from the requests in flight (called with ``lock`` held)."""
        held = len(self.running)
        self.gauges.update(waiting=max(0, held - self.max_active), active=min(held, self.max_active))

    def _liveness(self) -> Any:
        with self.lock:
            held = len(self.running)
        stalled = time.monotonic() - self.last_progress if held else 0.0
        tensors = {
            "liveness_in_flight": np.array([held], dtype=np.int32),
            "liveness_stalled_s": np.array([stalled], dtype=np.float32),
        }
        return pb_utils.InferenceResponse(output_tensors=[pb_utils.Tensor(k, v) for k, v in tensors.items()])

    def _parse(self, request: Any) -> tuple[str, dict[str, Any], bool]:
        text = pb_utils.get_input_tensor_by_name(request, "text_input")
        if text is None:
            raise RequestError("text_input: required")
        values = text.as_numpy().reshape(-1)
        if values.size != 1:
            raise RequestError(f"text_input: one prompt per request, got {values.size}")
        prompt = values[0].decode("utf-8") if isinstance(values[0], bytes) else str(values[0])
        kwargs: dict[str, Any] = {"exclude_input_from_output": True, "return_perf_metrics": True}
        for tensor, keyword in _SAMPLING.items():
            value = _scalar(request, tensor)
            if value is not None:
                kwargs[keyword] = value
        stops = _vector(request, "sampling_param_stop")
        extra = [s.decode("utf-8") if isinstance(s, bytes) else str(s) for s in stops]
        kwargs["stop"] = [*extra, *(w for w in self.stop_words if w not in extra)]
        stop_ids = _vector(request, "sampling_param_stop_token_ids")
        if stop_ids:
            kwargs["stop_token_ids"] = [int(i) for i in stop_ids]
        bias = _text(request, "sampling_param_logit_bias")
        if bias:
            kwargs["embedding_bias"] = self._embedding_bias(bias)
        guide = self._guide(request)
        if guide is not None:
            kwargs["guided_decoding"] = guide
        return prompt, kwargs, bool(_scalar(request, "streaming"))

    def _embedding_bias(self, text: str) -> list[float]:
        """OpenAI's logit_bias ({token id: bias}) as SamplingParams.embedding_bias: one float per vocabulary entry."""
        if not self.vocab_size:
            raise RequestError("sampling_param_logit_bias: the checkpoint's config.json has no vocab_size")
        try:
            sparse = {int(k): float(v) for k, v in json.loads(text).items()}
        except (ValueError, TypeError, AttributeError):
            raise RequestError("sampling_param_logit_bias: expected a JSON object of token id -> bias") from None
        dense = [0.0] * self.vocab_size
        for token, value in sparse.items():
            if not 0 <= token < self.vocab_size:
                raise RequestError(f"sampling_param_logit_bias: token {token} is outside the vocabulary")
            dense[token] = value
        return dense

    def _guide(self, request: Any) -> Any:
        kind = _text(request, "guided_decoding_guide_type")
        guide = _text(request, "guided_decoding_guide")
        if kind is None:
            if guide is not None:
                raise RequestError("guided_decoding_guide: given without guided_decoding_guide_type")
            return None
        if kind not in GUIDE_TYPES:
            raise RequestError(f"guided_decoding_guide_type: got {kind!r}; expected {', '.join(GUIDE_TYPES)}")
        if kind == "json_object":
            if guide is not None:
                raise RequestError("guided_decoding_guide: json_object takes no guide")
            return self.guided_params(json_object=True)
        if not guide:
            raise RequestError(f"guided_decoding_guide: required for guided_decoding_guide_type {kind}")
        keyword = {"json_schema": "json", "regex": "regex", "ebnf": "grammar"}[kind]
        return self.guided_params(**{keyword: guide})

    def _response(self, output: Any, done: bool, *, streaming: bool, logprobs: bool) -> Any:
        outs = output.outputs
        texts = [(o.text_diff if streaming else o.text).encode("utf-8") for o in outs]
        reasons = [str(o.finish_reason or "").encode() if (done or o.finish_reason) else b"" for o in outs]
        tensors = {
            "text_output": np.array(texts, dtype=np.object_),
            "finish_reason": np.array(reasons, dtype=np.object_),
            "num_input_tokens": np.array([len(output.prompt_token_ids)], dtype=np.int32),
            "num_output_tokens": np.array([len(o.token_ids) for o in outs], dtype=np.int32),
            "num_cached_tokens": np.array([int(getattr(output, "cached_tokens", 0) or 0)], dtype=np.int32),
        }
        if logprobs:
            tensors["logprobs"] = np.array([_logprobs_json(o, streaming).encode() for o in outs], dtype=np.object_)
        queued = _queue_seconds(outs[0]) if done else None
        if queued is not None:
            tensors["queue_time_s"] = np.array([queued], dtype=np.float32)
        # The tensors, built into a response only when sent: responses that queue up are merged first (coalesce.py).
        return tensors

    def _send(self, sender: Any, response: Any, *, final: bool, entry: _Running | None = None) -> Any:
        if entry is not None:
            with self.lock:
                if entry.closed:
                    return None  # cancelled: its final CANCELLED answer is already out
                entry.closed = final
        if sender is None:
            return _built(response)
        self.outbox.put((sender, response, pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL if final else 0))
        return None

    # -- off the loop -------------------------------------------------------------------------------------
    def _on_loop(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    def _stop(self, request_id: str) -> None:
        if not request_id:
            raise RequestError("stop: the request to stop needs a request id")
        with self.lock:
            matching = [e for e in self.running.values() if e.request_id == request_id and not e.closed]
            for entry in matching:
                entry.closed = True
        for entry in matching:
            self._cancel(entry)

    def _send_loop(self) -> None:
        stopping = False
        while not stopping and (item := self.outbox.get()) is not None:
            # What queued while the last send waited goes out merged, per request (coalesce.py says why).
            batch = [item]
            while True:
                try:
                    more = self.outbox.get_nowait()
                except queue.Empty:
                    break
                if more is None:
                    stopping = True
                    break
                batch.append(more)
            for sender, payload, flags in coalesce(batch):
                try:
                    sender.send(_built(payload), flags=flags)
                except Exception as err:  # the client is gone: nothing to tell it, the next response may still go
                    pb_utils.Logger.log_warn(f"tensorrt_llm: a response could not be sent: {err}")

    def _watch_cancellation(self) -> None:
        """Every cancel period: the requests whose client went away (Triton marks them cancelled) are cancelled."""
        while not self.stopping.wait(self.cancel_period):
            with self.lock:
                # Under the lock no final response of these has been queued (closed is set when one is), so Triton
                # has not freed the response factory that is_cancelled() reads: asking later would crash Triton.
                gone = [e for e in self.running.values() if not e.closed and _asks_cancelled(e.cancelled)]
                for entry in gone:
                    entry.closed = True
            for entry in gone:
                self.loop.call_soon_threadsafe(self._cancel, entry)


class _Running:
    """A request generating: its result, Triton's cancellation check, its request id, its task and sender."""

    def __init__(self, result: Any, cancelled: Any, request_id: str, task: Any, sender: Any) -> None:
        self.result = result
        self.cancelled = cancelled
        self.request_id = request_id
        self.task = task
        self.sender = sender
        self.closed = False
        """True once its final response is queued (or it is cancelled): nothing more goes out, nobody asks Triton."""


def _asks_cancelled(cancelled: Any) -> bool:
    try:
        return bool(cancelled())
    except Exception:  # the request is already released
        return True


def _result_or_cancelled(future: Any) -> Any:
    try:
        return future.result()
    except asyncio.CancelledError:
        return _cancelled_response()


def _built(payload: Any) -> Any:
    """A response from its tensors (``_response``); an already built one (an error, a cancellation) as it is."""
    if isinstance(payload, dict):
        return pb_utils.InferenceResponse(output_tensors=[pb_utils.Tensor(k, v) for k, v in payload.items()])
    return payload


def _cancelled_response() -> Any:
    # Upstream's LLM-API model: TritonError("Request cancelled by client", TritonError.CANCELLED), final.
    return pb_utils.InferenceResponse(
        output_tensors=[], error=pb_utils.TritonError("Request cancelled by client", pb_utils.TritonError.CANCELLED)
    )


def _scalar(request: Any, name: str) -> Any:
    tensor = pb_utils.get_input_tensor_by_name(request, name)
    if tensor is None:
        return None
    values = tensor.as_numpy().reshape(-1)
    if values.size != 1:
        raise RequestError(f"{name}: expected one value, got {values.size}")
    return values[0].item() if hasattr(values[0], "item") else values[0]


def _vector(request: Any, name: str) -> list[Any]:
    tensor = pb_utils.get_input_tensor_by_name(request, name)
    if tensor is None:
        return []
    return [v.item() if hasattr(v, "item") else v for v in tensor.as_numpy().reshape(-1)]


def _text(request: Any, name: str) -> str | None:
    value = _scalar(request, name)
    if value is None:
        return None
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


def _logprobs_json(output: Any, streaming: bool) -> str:
    """The new positions' top logprobs of one sequence: ``{"ids": [...], "top": [[[id, logprob, rank], ...]]}``."""
    ids = list(output.token_ids_diff if streaming else output.token_ids)
    positions = list(output.logprobs_diff if streaming else output.logprobs)
    top = []
    for token, position in zip(ids, positions, strict=False):
        if isinstance(position, dict):
            top.append([[int(t), float(p.logprob), p.rank] for t, p in position.items()])
        else:  # a bare float: the sampled token's logprob only
            top.append([[int(token), float(position), None]])
    return json.dumps({"ids": ids, "top": top}, separators=(",", ":"))


def _queue_seconds(output: Any) -> float | None:
    metrics = getattr(output, "request_perf_metrics", None)
    timing = getattr(metrics, "timing_metrics", None)
    if timing is None:
        return None
    arrival, scheduled = timing.arrival_time, timing.first_scheduled_time
    if isinstance(arrival, timedelta) and isinstance(scheduled, timedelta) and scheduled >= arrival > timedelta(0):
        return (scheduled - arrival).total_seconds()
    return None


def _tokens_per_block(llm_args: dict[str, Any]) -> int:
    kv = llm_args.get("kv_cache_config") or {}
    value = kv.get("tokens_per_block") if isinstance(kv, dict) else None
    return int(value) if isinstance(value, int) and value > 0 else DEFAULT_TOKENS_PER_BLOCK


def _vocab_size(llm_args: dict[str, Any]) -> int:
    try:
        config = json.loads((Path(str(llm_args.get("model", ""))) / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return 0
    value = config.get("vocab_size") or (config.get("text_config") or {}).get("vocab_size")
    return int(value) if isinstance(value, int) else 0


def _error(err: Exception) -> Any:
    message = str(err) if isinstance(err, ValueError | TypeError) else f"{type(err).__name__}: {err}"
    return pb_utils.InferenceResponse(output_tensors=[], error=pb_utils.TritonError(message))
