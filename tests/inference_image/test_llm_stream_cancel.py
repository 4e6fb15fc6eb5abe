"""How ``LlmStream`` stops the LLM step when its client goes away, on either Python backend (issue 17 §8).

Upstream facts the design rests on, read at the tags (pinned here; the real-server proof on Triton 2.51
is ``test_cancellation.py``):

python_backend ``src/pb_stub.cc`` (the ``c_python_backend_utils`` bindings):
- r24.10 and r25.05: ``InferenceRequest.is_cancelled`` and ``InferenceResponseSender.is_cancelled``
  are bound (README "Request Cancellation Handling": from 23.10).
- r24.10: ``ResponseIterator`` binds only ``__iter__`` and ``__next__``: a decoupled BLS call cannot
  be cancelled through its iterator. r25.05 adds ``.def("cancel", &ResponseIterator::Cancel)``.
- ``src/pb_response_iterator.cc``, r24.10 and r25.05: ``~ResponseIterator`` calls ``Next()`` until the
  last response: dropping an unfinished iterator blocks until the LLM step has finished.
- README "Decoupled mode", r24.10 and r25.05: a request's response sender may be used from another
  thread after ``execute`` returns (so BLS serves many streams per instance on a thread pool); README
  "Async Execute": ``async def execute`` for decoupled models from 24.04.

tensorrtllm_backend ``inflight_batcher_llm/src/model_instance_state.cc``, r24.10 and r25.05:
``handleStopRequest`` turns a request whose ``stop`` input is true into ``mExecutor->cancelRequest``
for every request with the same Triton request id (and refuses one without an id); ``WaitForCancel``
polls ``TRITONBACKEND_ResponseFactoryIsCancelled`` every ``cancellation_check_period_ms``.

core ``src/ensemble_scheduler/ensemble_scheduler.cc``, r24.10, r25.05 and main: ``ScheduleSteps``
cancels only a step scheduled after the ensemble request was cancelled ("propagate the cancellation
to the next request step"); a step already running never learns of it. So every response of
``postprocessing`` passes through ``stream_gate``, whose per-response request is scheduled after the
cancel and so marked cancelled. That model has no dynamic batching: the dynamic batcher's queue drops
a cancelled request unexecuted (``src/scheduler_utils.cc``, ``PolicyQueue::ApplyPolicy``, r24.10),
while without it ``DynamicBatchScheduler::Enqueue`` hands the request straight to the model
(``src/dynamic_batch_scheduler.cc``, r24.10).
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from inference_platform.inference_image.runtime.llm_stream import CANCEL_POLL_S, CancelWatch, LlmStream

UPSTREAM = json.loads(
    (Path(__file__).resolve().parents[1] / "data" / "upstream" / "triton_cancellation_r24.10_r25.05.json").read_text()
)
"""The facts above, as read at each tag (commit SHAs recorded in the file)."""
PYTHON_BACKEND_ITERATOR_CANCEL = UPSTREAM["python_backend"]["src/pb_stub.cc"]["ResponseIterator binds cancel"]
"""Whether ``ResponseIterator`` has ``cancel()`` (python_backend ``src/pb_stub.cc`` at the tag)."""


def test_the_design_rests_on_these_upstream_facts_at_the_pinned_tags():
    stub = UPSTREAM["python_backend"]["src/pb_stub.cc"]
    # Polling the client's cancel works on both Python backends; cancelling a BLS call only on r25.05.
    assert stub["InferenceResponseSender binds is_cancelled"] == {"r24.10": True, "r25.05": True}
    assert PYTHON_BACKEND_ITERATOR_CANCEL == {"r24.10": False, "r25.05": True}
    # So the stop request (TensorRT-LLM's cancel by id) is what works at both tags.
    trtllm = UPSTREAM["tensorrtllm_backend"]["inflight_batcher_llm/src/model_instance_state.cc"]
    assert all(v for fact in trtllm.values() for v in fact.values())
    # The ensemble passes a cancel only to steps it schedules afterwards, at every tag read.
    scheduler = UPSTREAM["core"]["src/ensemble_scheduler/ensemble_scheduler.cc"]
    assert set(next(iter(scheduler.values()))) == {"r24.10", "r25.05", "main"}
    for commits in (UPSTREAM[r]["commits"] for r in ("python_backend", "core", "tensorrtllm_backend")):
        assert all(len(sha) == 40 for sha in commits.values())


class FakePb:
    """Enough of ``triton_python_backend_utils`` for LlmStream, with an LLM step that streams until stopped."""

    TRITONSERVER_RESPONSE_COMPLETE_FINAL = 1

    def __init__(self, *, iterator_cancel: bool) -> None:
        self.iterator_cancel = iterator_cancel
        self.running: dict[str, threading.Event] = {}
        self.stops: list[str] = []
        self.cancels: list[str] = []
        self.tokens_after_stop = 0
        pb = self

        class Tensor:
            def __init__(self, name, array):
                self._name, self._array = name, np.asarray(array)

            def name(self):
                return self._name

            def as_numpy(self):
                return self._array

        class TritonError:
            def __init__(self, message):
                self._message = message

            def message(self):
                return self._message

        class InferenceResponse:
            def __init__(self, output_tensors=(), error=None):
                self._tensors, self._error = list(output_tensors), error

            def output_tensors(self):
                return self._tensors

            def has_error(self):
                return self._error is not None

            def error(self):
                return self._error

        class InferenceRequest:
            def __init__(self, *, model_name, inputs, requested_output_names, request_id=""):
                self.request_id, self.inputs = request_id, {t.name(): t.as_numpy() for t in inputs}

            def exec(self, decoupled=False):
                assert decoupled
                if "stop" in self.inputs:
                    pb.stops.append(self.request_id)
                    if self.request_id in pb.running:
                        pb.running[self.request_id].set()
                    return iter([InferenceResponse()])
                stopped = pb.running.setdefault(self.request_id, threading.Event())
                responses = pb._generate(stopped)
                if not pb.iterator_cancel:
                    return (r for r in responses)  # r24.10: no cancel()
                return Cancellable(responses, stopped, self.request_id)

        class Cancellable:
            def __init__(self, responses, stopped, request_id):
                self._responses, self._stopped, self._id = responses, stopped, request_id

            def __iter__(self):
                return self

            def __next__(self):
                return next(self._responses)

            def cancel(self):
                pb.cancels.append(self._id)
                self._stopped.set()

        self.Tensor, self.TritonError = Tensor, TritonError
        self.InferenceResponse, self.InferenceRequest = InferenceResponse, InferenceRequest

    def _generate(self, stopped):
        for _ in range(500):  # 5 s of tokens unless stopped
            if stopped.wait(0.01):
                yield self.InferenceResponse()  # the flag-only end of a cancelled stream
                return
            yield self.InferenceResponse(
                [self.Tensor("output_ids", [[[ord("a")]]]), self.Tensor("sequence_length", [[1]])]
            )
        self.tokens_after_stop = -1  # ran to the end: never stopped
        yield self.InferenceResponse()


def _stream(pb, tokenizer):
    return LlmStream(
        pb, llm="tensorrt_llm", tokenizer=tokenizer, skip_special_tokens=True, decoupled=True, text_name="OUTPUT"
    )


@pytest.mark.parametrize("tag", sorted(PYTHON_BACKEND_ITERATOR_CANCEL))
def test_a_cancelled_client_stops_the_llm_step_on_either_python_backend(tokenizer, tag):
    pb = FakePb(iterator_cancel=PYTHON_BACKEND_ITERATOR_CANCEL[tag])
    gone = threading.Event()
    sent = []
    started = time.monotonic()
    for response in _stream(pb, tokenizer).responses([], streaming=True, cancelled=gone.is_set):
        sent.append(response)
        if len(sent) == 5:
            gone.set()
            left = time.monotonic()
    took = time.monotonic() - left
    assert pb.tokens_after_stop == 0, "the LLM step ran to the end"
    assert took < 10 * CANCEL_POLL_S and time.monotonic() - started < 3
    (request_id,) = pb.running
    assert pb.stops == [request_id]  # a stop request for exactly this stream's id
    assert pb.cancels == ([request_id] if PYTHON_BACKEND_ITERATOR_CANCEL[tag] else [])
    # Tokens still flow until the next poll (10 ms each here), none after the stop.
    assert len(sent) <= 5 + 3 * round(CANCEL_POLL_S / 0.01)


def test_each_stream_has_its_own_request_id(tokenizer):
    pb = FakePb(iterator_cancel=False)
    stream = _stream(pb, tokenizer)
    for _ in range(2):
        list(stream.responses([], streaming=True, cancelled=lambda: True))
    assert len(pb.running) == 2 and pb.stops == list(pb.running)


def test_the_watch_polls_while_no_token_arrives_and_fires_once():
    calls = []
    flag = threading.Event()
    with CancelWatch(flag.is_set, lambda: calls.append(time.monotonic()), period=0.01) as watch:
        time.sleep(0.05)
        flag.set()
        assert watch.fired.wait(1)
        time.sleep(0.05)
    assert len(calls) == 1


def test_a_failing_poll_ends_the_watch_without_firing():
    def gone():
        raise RuntimeError("request released")

    with CancelWatch(gone, lambda: pytest.fail("fired"), period=0.01) as watch:
        time.sleep(0.05)
    assert not watch.fired.is_set()


def test_a_stop_request_stops_only_the_running_requests_with_its_id():
    from inference_platform.inference_image.runtime.stop_requests import RunningById, is_stop_request

    running = RunningById()
    a1, a2, b = running.add("a"), running.add("a"), running.add("b")
    assert running.stop("a") == 2 and a1.stopped.is_set() and a2.stopped.is_set() and not b.stopped.is_set()
    assert running.stop("") == 0  # TensorRT-LLM refuses a stop without an id; it stops nothing
    running.remove(a1)
    running.remove(a2)
    assert running.stop("a") == 0 and running.stop("b") == 1
    assert is_stop_request({"stop": np.ones((1, 1), dtype=bool)})
    assert not is_stop_request({"stop": np.zeros((1, 1), dtype=bool)}) and not is_stop_request({"stop": None})
