"""Liveness that sees a dead or wedged engine, and leaves a busy one alone.

Triton's ``/v2/health/live`` says 200 while its Python model's process is dead: measured on the local Triton, after
the ``tensorrt_llm`` stub was killed every generation answered "Stub process ... is not healthy" and live and ready
stayed 200 (issue 27), so nothing would restart the pod. The pod's liveness probe therefore calls the OpenAI server's
``OPENAI_LIVE_PATH``, which asks the model itself: a ``liveness`` request (inference_image/llmapi/contract.py) that
Triton hands to the model's process and the model answers from its own event loop, never from the engine.

- no answer within ``deadline_seconds`` (the process is stopped, its loop or Triton wedged), or an error (the process
  is dead, Triton is gone): not alive;
- an answer saying the engine holds requests and has shown no progress (a response or an iteration stat) for more
  than ``stall_seconds``: not alive (the engine is wedged with work);
- otherwise alive, however busy: a saturated replica answers the ping at once and keeps making progress.

Readiness (``readiness.py``) takes the pod out of the Service first (3 failed probes); liveness, after its own
failure count, restarts the container.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable

from inference_platform.catalog.serving_contract import LIVENESS_STALL_ENV

DEFAULT_STALL_SECONDS = 60.0
"""With requests in flight, an engine that shows no progress this long is wedged (chunked prefill and every decode
step report progress far more often)."""


class LivenessCheck:
    def __init__(
        self,
        ping: Callable[[], Awaitable[tuple[int, float]]],
        *,
        deadline_seconds: float,
        stall_seconds: float = DEFAULT_STALL_SECONDS,
    ) -> None:
        if deadline_seconds <= 0 or stall_seconds <= 0:
            raise ValueError("LivenessCheck: deadline_seconds and stall_seconds must be > 0")
        self._ping = ping
        self.deadline_seconds = deadline_seconds
        self.stall_seconds = stall_seconds
        self._probe: asyncio.Future[tuple[int, float]] | None = None

    async def alive(self) -> tuple[bool, str]:
        if self._probe is None or self._probe.done():
            self._probe = asyncio.ensure_future(self._ping())
        try:
            held, stalled = await asyncio.wait_for(asyncio.shield(self._probe), self.deadline_seconds)
        except TimeoutError:
            return False, f"the model's process did not answer a liveness ping within {self.deadline_seconds:g} s"
        except Exception as err:  # Triton or the model's process is gone
            return False, f"the model's process cannot be reached: {getattr(err, 'message', err)}"
        if held and stalled > self.stall_seconds:
            return False, f"the engine holds {held} requests and has shown no progress for {stalled:.0f} s"
        return True, f"the model answers; {held} requests in flight"


def stall_from_env(environ: dict[str, str] | None = None) -> float:
    raw = (environ if environ is not None else os.environ).get(LIVENESS_STALL_ENV)
    if raw is None:
        return DEFAULT_STALL_SECONDS
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"{LIVENESS_STALL_ENV}={raw!r}: expected seconds > 0") from None
    if value <= 0:
        raise ValueError(f"{LIVENESS_STALL_ENV}={raw!r}: expected seconds > 0")
    return value
