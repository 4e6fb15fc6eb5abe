"""Coroutines in tests run on a loop of their own, never installed as the main thread's.

``asyncio.run()`` ends by setting the main thread's event loop to None; the Pulumi mock tests that follow in the
same xdist worker then get "There is no current event loop" from ``asyncio.get_event_loop()``.
tests/test_layout.py refuses ``asyncio.run(`` under tests/.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any


def run_on_own_loop(coro: Coroutine[Any, Any, Any], *, timeout: float = 30) -> Any:
    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(asyncio.wait_for(coro, timeout=timeout))
    finally:
        loop.close()
