"""Cancel by request id, for the Neuron model (``neuron/model.py``): the request contract TensorRT-LLM's Triton
models keep.

A request whose ``stop`` input is true stops every running request with the same Triton request id and is
answered by one empty response; one without an id is refused. That is the contract of TensorRT-LLM's C++ backend
(tensorrtllm_backend ``inflight_batcher_llm/src/model_instance_state.cc``, ``handleStopRequest``, r24.10 and
r25.05) and of upstream's LLM-API model (``handle_stop_request``: every engine request of that Triton id aborted,
answered CANCELLED). The Neuron model keeps it so that one OpenAI server can stop a stream on either image.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

NO_ID = "stop: the request to stop needs a request id"


def is_stop_request(tensors: Mapping[str, Any]) -> bool:
    """Whether the step's input tensors ask to stop another request (``stop`` true)."""
    stop = tensors.get("stop")
    return stop is not None and stop.size == 1 and bool(stop.reshape(-1)[0])


class Handle:
    """One running request: ``stopped`` is set by a stop request naming its id."""

    def __init__(self, request_id: str) -> None:
        self.request_id = request_id
        self.stopped = threading.Event()


class RunningById:
    """Running requests by Triton request id (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_id: dict[str, set[Handle]] = {}

    def add(self, request_id: str) -> Handle:
        handle = Handle(request_id)
        with self._lock:
            self._by_id.setdefault(request_id, set()).add(handle)
        return handle

    def remove(self, handle: Handle) -> None:
        with self._lock:
            handles = self._by_id.get(handle.request_id, set())
            handles.discard(handle)
            if not handles:
                self._by_id.pop(handle.request_id, None)

    def count(self) -> int:
        """Running requests."""
        with self._lock:
            return sum(len(handles) for handles in self._by_id.values())

    def stop(self, request_id: str) -> int:
        """Stop the running requests with ``request_id``; how many there were."""
        if not request_id:
            return 0
        with self._lock:
            handles = list(self._by_id.get(request_id, ()))
        for handle in handles:
            handle.stopped.set()
        return len(handles)
