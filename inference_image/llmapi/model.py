"""The ``tensorrt_llm`` Triton model: TensorRT-LLM's LLM API (PyTorch backend) behind the tensors of ``contract``.

Triton's Python backend runs this file from the rendered repository (``<repo>/tensorrt_llm/1/model.py``). It
builds ``LLM(**model.yaml)`` once, on an asyncio loop of its own thread, and hands every request to
``generate_async``: the LLM API batches in flight, so requests are not batched here (``max_batch_size: 0``).
The engine module is ``tensorrt_llm`` unless ``LLM_ENGINE_MODULE`` names another with the same ``LLM``,
``SamplingParams`` and ``GuidedDecodingParams`` (the CPU stand-in of the local stack).

Per request (decoupled, i.e. ``serving.streaming``): a stream sends each response's new text
(``CompletionOutput.text_diff``) with the cumulative token counts and ``finish_reason`` "" until the last
response; without ``streaming`` one response carries the whole text. The model's stop strings (config.pbtxt
``stop_words``) join every request's. A request whose client went away is aborted within
``cancellation_check_period_ms``; one with ``stop`` true aborts the running requests with its Triton request id.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import os
import queue
import threading
from pathlib import Path
from typing import Any

import numpy as np
import triton_python_backend_utils as pb_utils
import yaml

from inference_platform.inference_image.llmapi.kv_cache_gauges import KvCacheGauges, kv_values
from inference_platform.inference_image.runtime.request_gauges import TRT_LLM_FAMILY, RequestGauges

ENGINE_MODULE_ENV = "LLM_ENGINE_MODULE"
DEFAULT_ENGINE_MODULE = "tensorrt_llm"
DEFAULT_TOKENS_PER_BLOCK = 32
LLM_API_MAX_BATCH_SIZE = 2048
"""BaseLlmArgs.max_batch_size's default (llm_args.py, 1.2 line); the renderer always writes the setting."""
"""KvCacheConfig.tokens_per_block's default (TensorRT-LLM 1.2 ``llmapi/llm_args.py``)."""
STATS_PERIOD_S = 1.0
"""How often the KV-cache gauges take the LLM API's newest iteration stats (Prometheus scrapes every 15 s)."""
GUIDE_TYPES = ("json_object", "json_schema", "regex", "ebnf")
_SAMPLING = {
    # input tensor -> SamplingParams keyword
    "sampling_param_temperature": "temperature",
    "sampling_param_top_k": "top_k",
    "sampling_param_top_p": "top_p",
    "sampling_param_frequency_penalty": "frequency_penalty",
    "sampling_param_presence_penalty": "presence_penalty",
    "sampling_param_max_tokens": "max_tokens",
    "sampling_param_seed": "seed",
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
        self.tokens_per_block = int(
            (llm_args.get("kv_cache_config") or {}).get("tokens_per_block") or DEFAULT_TOKENS_PER_BLOCK
        )
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
        # nv_trt_llm_request_metrics, as the C++ backend published it: KEDA scales on active + waiting per replica.
        # The LLM API runs up to max_batch_size at once; the rest wait in its queue.
        self.max_active = int(llm_args.get("max_batch_size") or LLM_API_MAX_BATCH_SIZE)
        self.gauges = RequestGauges(
            pb_utils,
            family=TRT_LLM_FAMILY,
            model=args["model_name"],
            version=args["model_version"],
            max_active=self.max_active,
        )
        # nv_trt_llm_kv_cache_block_metrics (the KV-cache alert and KEDA's kvCacheTarget) from the iteration stats.
        self.kv_gauges = KvCacheGauges(pb_utils, model=args["model_name"], version=args["model_version"])
        self.lock = threading.Lock()
        """Guards ``running`` and every ``_Running.final``: the cancellation check runs only under it."""
        self.llm = self._on_loop(self._build(engine.LLM, llm_args))
        # Responses leave through one thread of their own: a send waits on the stub's IPC, which must not hold
        # up the loop the engine's results arrive on. One queue keeps each request's responses in order.
        self.outbox: queue.SimpleQueue[tuple[Any, Any, int, _Running | None] | None] = queue.SimpleQueue()
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
        return [f.result() for f in futures]

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
        """Every ``STATS_PERIOD_S``: the newest iteration's kvCacheStats to the KV-cache gauges."""
        while not self.stopping.is_set():
            newest = None
            try:
                async for stat in self.llm.get_stats_async(timeout=STATS_PERIOD_S):
                    newest = kv_values(stat) or newest
            except asyncio.CancelledError:
                raise
            except Exception as err:  # stats are advisory: a failed read must never stop serving
                pb_utils.Logger.log_warn(f"tensorrt_llm: iteration stats unreadable: {err}")
            if newest is not None:
                self.kv_gauges.update(newest)
            await asyncio.sleep(STATS_PERIOD_S)

    async def _shutdown(self) -> None:
        await asyncio.get_running_loop().run_in_executor(None, self.llm.shutdown)

    async def _serve(self, request: Any, sender: Any) -> Any:
        """Answer ``request`` (through ``sender`` when decoupled; else return the one response)."""
        try:
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
        cancelled = sender.is_cancelled if sender is not None else getattr(request, "is_cancelled", lambda: False)
        entry = _Running(result, cancelled, request.request_id())
        with self.lock:
            self.running[id(result)] = entry
            self._publish()
        try:
            last = None
            async for output in result:
                last = output
                if streaming:
                    done = output.finished
                    response = self._response(output, output.outputs[0].text_diff, done)
                    self._send(sender, response, final=done, entry=entry)
            if streaming:
                return None
            return self._send(sender, self._response(last, last.outputs[0].text, True), final=True, entry=entry)  # type: ignore[union-attr]  # the final output always comes
        except Exception as err:
            return self._send(sender, _error(err), final=True, entry=entry)
        finally:
            with self.lock:
                self.running.pop(id(result), None)
                self._publish()

    def _publish(self) -> None:
        """The request gauges from the requests in flight (called with ``lock`` held)."""
        held = len(self.running)
        self.gauges.update(waiting=max(0, held - self.max_active), active=min(held, self.max_active))

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
        stops = pb_utils.get_input_tensor_by_name(request, "sampling_param_stop")
        extra = (
            [s.decode("utf-8") if isinstance(s, bytes) else str(s) for s in stops.as_numpy().reshape(-1)]
            if stops
            else []
        )
        kwargs["stop"] = [*extra, *(w for w in self.stop_words if w not in extra)]
        guide = self._guide(request)
        if guide is not None:
            kwargs["guided_decoding"] = guide
        return prompt, kwargs, bool(_scalar(request, "streaming"))

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

    def _response(self, output: Any, text: str, done: bool) -> Any:
        out = output.outputs[0]
        prompt_tokens = len(output.prompt_token_ids)
        metrics = getattr(out, "request_perf_metrics", None)
        reused = metrics.kv_cache_metrics.num_reused_blocks if metrics is not None else 0
        tensors = {
            "text_output": np.array([text.encode("utf-8")], dtype=np.object_),
            "finish_reason": np.array([(str(out.finish_reason or "") if done else "").encode()], dtype=np.object_),
            "num_input_tokens": np.array([prompt_tokens], dtype=np.int32),
            "num_output_tokens": np.array([len(out.token_ids)], dtype=np.int32),
            "num_cached_tokens": np.array([min(prompt_tokens, reused * self.tokens_per_block)], dtype=np.int32),
        }
        return pb_utils.InferenceResponse(output_tensors=[pb_utils.Tensor(k, v) for k, v in tensors.items()])

    def _send(self, sender: Any, response: Any, *, final: bool, entry: _Running | None = None) -> Any:
        if sender is None:
            if final and entry is not None:
                entry.finish(self.lock)  # Triton releases the request once execute() returns its response
            return response
        self.outbox.put((sender, response, pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL if final else 0, entry))
        return None

    # -- off the loop -------------------------------------------------------------------------------------
    def _on_loop(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    def _stop(self, request_id: str) -> None:
        if not request_id:
            raise RequestError("stop: the request to stop needs a request id")
        with self.lock:
            matching = [e.result for e in self.running.values() if e.request_id == request_id]
        for result in matching:
            result.abort()

    def _send_loop(self) -> None:
        while (item := self.outbox.get()) is not None:
            sender, response, flags, entry = item
            if flags and entry is not None:
                entry.finish(self.lock)
            try:
                sender.send(response, flags=flags)
            except Exception as err:  # the client is gone: nothing to tell it, the next response may still go
                pb_utils.Logger.log_warn(f"tensorrt_llm: a response could not be sent: {err}")

    def _watch_cancellation(self) -> None:
        """Abort the requests whose client went away (Triton marks them cancelled), every cancel period."""
        while not self.stopping.wait(self.cancel_period):
            with self.lock:
                # Under the lock a request's final response has not gone yet (finish() waits for it), so Triton
                # has not freed the response factory that is_cancelled() reads: asking later would crash Triton.
                gone = [e.result for e in self.running.values() if not e.final and _asks_cancelled(e.cancelled)]
            for result in gone:
                self.loop.call_soon_threadsafe(result.abort)


class _Running:
    """A request generating: its result, Triton's cancellation check for it, its request id."""

    def __init__(self, result: Any, cancelled: Any, request_id: str) -> None:
        self.result = result
        self.cancelled = cancelled
        self.request_id = request_id
        self.final = False
        """True from just before its final response goes: from then on nothing may ask Triton about it."""

    def finish(self, lock: threading.Lock) -> None:
        with lock:
            self.final = True


def _asks_cancelled(cancelled: Any) -> bool:
    try:
        return bool(cancelled())
    except Exception:  # the request is already released
        return True


def _scalar(request: Any, name: str) -> Any:
    tensor = pb_utils.get_input_tensor_by_name(request, name)
    if tensor is None:
        return None
    values = tensor.as_numpy().reshape(-1)
    if values.size != 1:
        raise RequestError(f"{name}: expected one value, got {values.size}")
    return values[0].item() if hasattr(values[0], "item") else values[0]


def _text(request: Any, name: str) -> str | None:
    value = _scalar(request, name)
    if value is None:
        return None
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


def _error(err: Exception) -> Any:
    message = str(err) if isinstance(err, ValueError | TypeError) else f"{type(err).__name__}: {err}"
    return pb_utils.InferenceResponse(output_tensors=[], error=pb_utils.TritonError(message))
