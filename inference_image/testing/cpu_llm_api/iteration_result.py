"""TEST DOUBLE: the LLM API's iteration statistics as a caller gets them, edge cases first.

Copied behaviour (NVIDIA/TensorRT-LLM ``tensorrt_llm/executor/result.py`` @ a678b91a, ``IterationResult``, and
``tensorrt_llm/executor/executor.py`` [1.2-era copy], ``aget_stats`` / ``_maybe_initialize_iteration_results``;
pinned in tests/inference_image/cpu_llm_api/test_upstream_behaviour.py):

- before the first request is submitted there is no result: ``get_stats_async`` returns an empty async iterable;
- the first submission creates ONE shared result; every later submission calls ``mark_undone()`` on it;
- ``get_stats_async(timeout)`` sets the shared result's timeout and returns that same object;
- iterating it returns each queued stat (a JSON string, parsed) and ends only when no stat arrives within
  ``timeout`` seconds: under steady load it never ends; after that timeout it stays ended until the next submission.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any


class IterationResult:
    def __init__(self) -> None:
        self._done = False
        self._timeout: float = 2
        self.aqueue: asyncio.Queue[str] = asyncio.Queue()

    def set_timeout(self, timeout: float) -> None:
        self._timeout = timeout

    def mark_undone(self) -> None:
        # upstream: "should be called when new prompts are submitted"
        self._done = False

    def put(self, stat: dict[str, Any]) -> None:
        """The executor's side: one iteration's stats (as JSON, as the worker sends them)."""
        self.aqueue.put_nowait(json.dumps(stat))

    def __aiter__(self) -> IterationResult:
        return self

    async def __anext__(self) -> dict[str, Any]:
        if self._done:
            raise StopAsyncIteration
        try:
            data = await asyncio.wait_for(self.aqueue.get(), timeout=self._timeout)
        except TimeoutError:
            self._done = True
            raise StopAsyncIteration from None
        parsed: dict[str, Any] = json.loads(data)
        return parsed


async def empty_async_iterable() -> AsyncIterator[dict[str, Any]]:
    """What ``aget_stats`` returns before any request (upstream prints a warning and returns this)."""
    if False:  # pragma: no cover - an async generator that yields nothing
        yield {}
