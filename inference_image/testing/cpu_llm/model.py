"""TEST DOUBLE: Triton Python model standing in for the TensorRT-LLM step on CPU.

It loads the production-rendered ``tensorrt_llm/config.pbtxt`` with only the backend line swapped to
``python``, and reads and checks every C++-only parameter (``trtllm_parameters``), so a missing or
misspelt parameter fails the load here as it would (or would silently misbehave) on a GPU. The
production ensemble, preprocessing, postprocessing and BLS run against it unchanged. Requests
run concurrently (one thread each, up to max_batch_size) like in-flight batching; each token waits
``token_delay_ms`` (the first ``first_token_delay_ms``), and a cancelled request stops at once.

A request with ``stop`` true is TensorRT-LLM's cancel by request id (``handleStopRequest`` in
tensorrtllm_backend's ``inflight_batcher_llm/src/model_instance_state.cc``, r24.10 and r25.05): every
running request with the same Triton request id stops, and the stop request itself gets one empty
response; without an id it is refused, as there.
"""

from __future__ import annotations

import json
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import triton_python_backend_utils as pb_utils
from inference_platform.inference_image.runtime.generation import FinishReason, SequenceState
from inference_platform.inference_image.runtime.llm_outputs import output_arrays
from inference_platform.inference_image.runtime.llm_request import LLM_INPUTS, RequestError, parse_request
from inference_platform.inference_image.runtime.params import ModelConfigError, Parameters
from inference_platform.inference_image.runtime.stop_requests import NO_ID, RunningById, is_stop_request
from inference_platform.inference_image.runtime.tokenizer import load_tokenizer
from inference_platform.inference_image.testing.cpu_llm import trtllm_parameters
from inference_platform.inference_image.testing.cpu_llm.echo import body_tokens, echo, refusal
from inference_platform.inference_image.testing.cpu_llm.metrics import StandInMetrics
from inference_platform.inference_image.testing.cpu_llm.options import STAND_IN_FILE

# A TensorRT-LLM engine directory always holds its build config; the stand-in insists on it too, so a
# partly downloaded engine fails the same way with the stand-in as with the real backend.
ENGINE_CONFIG = "config.json"


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        params = Parameters(config)
        if "gpt_model_type" in params.raw:
            # The production tensorrt_llm config: every C++ parameter is read and checked.
            production = trtllm_parameters.read(params.model, params.raw)
            engine_dir, tokenizer_dir = production.engine_dir, production.tokenizer_dir
            self.guided_backend = production.guided_decoding_backend
            self.exclude_default = production.exclude_input_in_output
            self.max_beam_width = production.max_beam_width
            delays = _stand_in_delays(Path(args["model_repository"]) / args["model_version"] / STAND_IN_FILE)
        else:
            # The Neuron step's stand-in renders its own config (config.pbtxt.tmpl here).
            engine_dir = Path(params.text("gpt_model_path"))
            tokenizer_dir = Path(params.text("tokenizer_dir"))
            self.guided_backend = params.text("guided_decoding_backend", default="none")
            self.exclude_default = params.flag("exclude_input_in_output", default=False)
            self.max_beam_width = params.integer("max_beam_width", default=1, minimum=1)
            delays = {key: params.integer(key, default=0) for key in ("first_token_delay_ms", "token_delay_ms")}
        if not (engine_dir / ENGINE_CONFIG).is_file():
            raise ModelConfigError(f"engine directory {engine_dir} has no {ENGINE_CONFIG}")
        self.tokenizer = load_tokenizer(str(tokenizer_dir))
        self.first_delay = delays["first_token_delay_ms"] / 1000
        self.token_delay = delays["token_delay_ms"] / 1000
        self.decoupled = pb_utils.using_decoupled_model_transaction_policy(config)
        self.pool = ThreadPoolExecutor(max_workers=max(1, int(config.get("max_batch_size", 1))))
        self.stopping = threading.Event()
        self._running = RunningById()
        self.metrics = StandInMetrics(
            pb_utils,
            model=args["model_name"],
            version=args["model_version"],
            max_batch_size=max(1, int(config.get("max_batch_size", 1))),
        )

    def execute(self, requests):
        work = []
        for r in requests:
            tensors, sender = _tensors(r), r.get_response_sender() if self.decoupled else None
            if is_stop_request(tensors):
                work.append((None, sender, self._stop_by_id(r.request_id())))
            else:
                self.metrics.queued()
                work.append((tensors, sender, self._running.add(r.request_id())))
        if self.decoupled:
            for tensors, sender, handle in work:
                if tensors is None:
                    _send_final(sender, handle)
                else:
                    self.pool.submit(self._stream, tensors, sender, handle)
            return None
        futures = [None if t is None else self.pool.submit(self._complete, t, h) for t, _, h in work]
        return [h if f is None else f.result() for f, (_, _, h) in zip(futures, work, strict=True)]

    def finalize(self):
        self.stopping.set()
        self.pool.shutdown(wait=True, cancel_futures=True)

    def _stop_by_id(self, request_id):
        """Stop the running requests with ``request_id``; the stop request's own (empty) response."""
        if not request_id:
            return _error(RequestError(NO_ID))
        self._running.stop(request_id)
        return pb_utils.InferenceResponse(output_tensors=[])

    def _stream(self, tensors, sender, handle):
        stopped = handle.stopped.is_set
        try:
            cancelled = lambda: stopped() or sender.is_cancelled()  # noqa: E731
            for response, final in self._run(tensors, cancelled=cancelled, handle=handle):
                flags = pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL if final else 0
                if response is None:
                    sender.send(flags=flags)
                else:
                    sender.send(response, flags=flags)
        except Exception as err:  # any failure must still close the stream, or the client hangs
            sender.send(_error(err), flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)

    def _complete(self, tensors, handle):
        try:
            responses = [
                r for r, _ in self._run(tensors, cancelled=handle.stopped.is_set, handle=handle) if r is not None
            ]
            return responses[-1]
        except Exception as err:
            return _error(err)

    def _run(self, tensors, *, cancelled, handle):
        """(response or None, final) pairs; None with final=True closes a stream with nothing new."""
        key = self.metrics.start()
        try:
            yield from self._generate(tensors, cancelled=cancelled, key=key)
        finally:
            self._running.remove(handle)
            self.metrics.finish(key)

    def _generate(self, tensors, *, cancelled, key):
        request = parse_request(tensors)
        self.metrics.prompt(key, len(request.input_ids))
        reason = refusal(request, max_beam_width=self.max_beam_width, guided_backend=self.guided_backend)
        if reason:
            raise RequestError(reason)
        if request.streaming and not self.decoupled:
            raise RequestError("streaming needs the decoupled transaction policy (serving.streaming: true)")
        state = SequenceState(request, exclude_input_default=self.exclude_default)
        delay = self.first_delay
        for token in echo(request, body_tokens(request, self.tokenizer)):
            if self.stopping.wait(delay) or cancelled():
                state.finish(FinishReason.CANCELLED)
                yield None, True
                return
            delay = self.token_delay
            self.metrics.token(key)
            chunk = state.push(token)
            if chunk is not None:
                yield _response(chunk, state)
            if state.done:
                return


def _send_final(sender, response):
    sender.send(response, flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)


def _response(chunk, state):
    if state.request.streaming and chunk.final and not chunk.tokens:
        return None, True
    tensors = [pb_utils.Tensor(name, array) for name, array in output_arrays(chunk, state).items()]
    return pb_utils.InferenceResponse(output_tensors=tensors), chunk.final


def _tensors(request):
    found = {}
    for name in LLM_INPUTS:
        tensor = pb_utils.get_input_tensor_by_name(request, name)
        found[name] = None if tensor is None else tensor.as_numpy()
    return found


def _stand_in_delays(path):
    try:
        delays = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise ModelConfigError(f"stand-in settings {path}: {err}") from None
    return {key: int(delays[key]) for key in ("first_token_delay_ms", "token_delay_ms")}


def _error(err):
    message = str(err) if isinstance(err, RequestError | ValueError) else f"{type(err).__name__}: {err}"
    return pb_utils.InferenceResponse(output_tensors=[], error=pb_utils.TritonError(message))
