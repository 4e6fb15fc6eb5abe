"""Call the LLM step through business logic scripting and turn its responses into text responses.

Shared by ``tensorrt_llm_bls`` and the ensemble's ``postprocessing``: both see every response of one
request, so streamed text is detokenized incrementally (``IncrementalText``) and a character whose
UTF-8 bytes span tokens is never split. Runs inside a Triton Python model: ``pb`` is its
``triton_python_backend_utils`` module, passed in so this module imports without Triton.

A client that goes away stops its generation. While a stream runs, ``CancelWatch`` polls whether the
client's request was cancelled (every ``CANCEL_POLL_S``, also while no token arrives) and then stops
the LLM step's request two ways: ``cancel()`` on the BLS response iterator where the Python backend
has it (r25.05, not r24.10: ``src/pb_stub.cc``), and a ``stop`` request carrying the LLM request's
id, which TensorRT-LLM's backend turns into ``cancelRequest`` for that id at both tags
(``inflight_batcher_llm/src/model_instance_state.cc``, ``handleStopRequest``) and the CPU stand-in
honours alike. The rest of the stream is drained, not sent: a dropped response iterator would wait
in its destructor for every remaining response (``src/pb_response_iterator.cc``).
"""

from __future__ import annotations

import itertools
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
from inference_platform.inference_image.runtime.detokenize import IncrementalText
from inference_platform.inference_image.runtime.tokenizer import Tokenizer

# LLM step outputs the client contracts return as they are (ensemble and BLS).
LLM_OUTPUTS = (
    "cum_log_probs",
    "output_log_probs",
    "context_logits",
    "generation_logits",
    "batch_index",
    "sequence_index",
    "kv_cache_alloc_new_blocks",
    "kv_cache_reused_blocks",
    "kv_cache_alloc_total_blocks",
    "arrival_time_ns",
    "first_scheduled_time_ns",
    "first_token_time_ns",
    "last_token_time_ns",
    "acceptance_rate",
    "total_accepted_draft_tokens",
    "total_draft_tokens",
)


CANCEL_POLL_S = 0.1
"""How often a running stream asks whether its client went away."""
_REQUEST_IDS = itertools.count()


class CancelWatch:
    """Polls ``cancelled`` every ``period`` s on a thread of its own until ``stop()``; on the first True
    it calls ``on_cancel`` once and sets ``fired``. A failing poll (the request is gone) ends the watch."""

    def __init__(self, cancelled: Callable[[], bool], on_cancel: Callable[[], None], period: float = CANCEL_POLL_S):
        self._cancelled = cancelled
        self._on_cancel = on_cancel
        self._period = period
        self._done = threading.Event()
        self.fired = threading.Event()
        self._thread = threading.Thread(target=self._run, name="cancel-watch", daemon=True)

    def __enter__(self) -> CancelWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        self._done.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=10 * self._period + 5)

    def _run(self) -> None:
        while not self._done.wait(self._period):
            try:
                if not self._cancelled():
                    continue
            except Exception:  # the request is gone: nothing left to watch
                return
            self.fired.set()
            self._on_cancel()
            return


def new_request_id(prefix: str) -> str:
    """An id for one LLM-step request, unique in the server: a ``stop`` request names it."""
    return f"{prefix}-{os.getpid()}-{next(_REQUEST_IDS)}"


def stop_llm_request(pb: Any, llm: str, request_id: str, *, decoupled: bool) -> None:
    """Stop the LLM step's running request ``request_id``: a request with ``stop`` true and that id
    (TensorRT-LLM's ``handleStopRequest``; the CPU stand-in alike), answered by one empty response."""
    stop = pb.InferenceRequest(
        model_name=llm,
        request_id=request_id,
        requested_output_names=["output_ids"],
        inputs=[
            pb.Tensor("input_ids", np.zeros((1, 1), dtype=np.int32)),
            pb.Tensor("input_lengths", np.ones((1, 1), dtype=np.int32)),
            pb.Tensor("request_output_len", np.ones((1, 1), dtype=np.int32)),
            pb.Tensor("stop", np.ones((1, 1), dtype=bool)),
        ],
    )
    for _ in stop.exec(decoupled=True) if decoupled else [stop.exec()]:
        pass


class LlmStream:
    """One LLM model's requests, detokenized; ``text_name`` is the output tensor carrying the text."""

    def __init__(
        self,
        pb: Any,
        *,
        llm: str,
        tokenizer: Tokenizer,
        skip_special_tokens: bool,
        decoupled: bool,
        text_name: str,
        id_name: str | None = None,
    ) -> None:
        """``id_name``: an output tensor that carries the LLM request's id in every response (or none)."""
        self._pb = pb
        self._id_name = id_name
        self._llm = llm
        self._tokenizer = tokenizer
        self._skip = skip_special_tokens
        self._decoupled = decoupled
        self._text_name = text_name

    def responses(
        self, llm_inputs: Sequence[Any], *, streaming: bool, cancelled: Callable[[], bool] = lambda: False
    ) -> Iterator[Any]:
        """Text responses for one request to the LLM step (one per streamed LLM response, else one)."""
        pb = self._pb
        if streaming and not self._decoupled:
            raise ValueError("stream=true needs the decoupled transaction policy (serving.streaming: true)")
        request_id = new_request_id(self._text_name.lower())
        request = pb.InferenceRequest(
            model_name=self._llm,
            request_id=request_id,
            requested_output_names=["output_ids", "sequence_length", *LLM_OUTPUTS],
            inputs=list(llm_inputs),
        )
        text = IncrementalText(self._tokenizer, skip_special_tokens=self._skip)
        if not self._decoupled:
            yield from self._texts([request.exec()], text, streaming=streaming, request_id=request_id)
            return
        llm_responses = request.exec(decoupled=True)
        with CancelWatch(cancelled, lambda: self.cancel(llm_responses, request_id)) as watch:
            try:
                for response in self._texts(llm_responses, text, streaming=streaming, request_id=request_id):
                    if not watch.fired.is_set():
                        yield response
            except RuntimeError:
                if not watch.fired.is_set():
                    raise  # a cancelled step may end on an error: nobody is left to read it
            if watch.fired.is_set():
                return
        if streaming:
            rest = text.flush()
            if rest:
                yield self._response(rest, {}, request_id)

    def cancel(self, llm_responses: Any, request_id: str) -> None:
        """Stop the LLM step's request ``request_id`` whose responses ``llm_responses`` iterates."""
        cancel = getattr(llm_responses, "cancel", None)  # python_backend r25.05+, not r24.10
        if cancel is not None:
            cancel()
        self.stop(request_id)

    def stop(self, request_id: str) -> None:
        """Send the LLM step a ``stop`` request for ``request_id`` (TensorRT-LLM's cancel by request id)."""
        stop_llm_request(self._pb, self._llm, request_id, decoupled=self._decoupled)

    def _texts(self, llm_responses: Any, text: IncrementalText, *, streaming: bool, request_id: str) -> Iterator[Any]:
        for llm_response in llm_responses:
            if llm_response.has_error():
                raise RuntimeError(llm_response.error().message())
            outputs = {t.name(): t.as_numpy() for t in llm_response.output_tensors()}
            if "output_ids" not in outputs:
                continue  # the flag-only end of a stream
            length = int(outputs["sequence_length"].reshape(-1)[0])
            ids = outputs["output_ids"].reshape(-1)[:length].tolist()
            if streaming:
                yield self._response(text.add(ids), outputs, request_id)
            else:
                yield self._response(self._tokenizer.decode(ids, skip_special_tokens=self._skip), outputs, request_id)

    def serve(self, request: Any, sender: Any, llm_inputs: Callable[[], tuple[Sequence[Any], bool]]) -> list[Any]:
        """Answer one Triton request: stream to ``sender`` (decoupled) or return the one response.

        ``llm_inputs`` builds (inputs, streaming) and may raise; every failure becomes the client's
        error response and a stream is always closed, so no client waits forever.
        """
        pb = self._pb
        out = []
        try:
            inputs, streaming = llm_inputs()
            cancelled = sender.is_cancelled if sender is not None else (lambda: False)
            for response in self.responses(inputs, streaming=streaming, cancelled=cancelled):
                if sender is not None:
                    sender.send(response)
                else:
                    out.append(response)
        except Exception as err:  # every failure becomes the client's error response
            error = pb.InferenceResponse(output_tensors=[], error=pb.TritonError(str(err)))
            if sender is None:
                out.append(error)
            else:
                sender.send(error)
        if sender is not None:
            sender.send(flags=pb.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
        return out

    def _response(self, text: str, outputs: dict[str, Any], request_id: str) -> Any:
        pb = self._pb
        tensors = [pb.Tensor(self._text_name, np.array([[text.encode("utf-8")]], dtype=object))]
        tensors += [pb.Tensor(name, outputs[name]) for name in LLM_OUTPUTS if name in outputs]
        if self._id_name is not None:
            tensors.append(pb.Tensor(self._id_name, np.array([[request_id.encode("utf-8")]], dtype=object)))
        return pb.InferenceResponse(output_tensors=tensors)
