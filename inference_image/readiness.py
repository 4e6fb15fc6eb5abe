"""Readiness that means the engine can generate, not only that Triton answers.

Triton's ``/v2/health/ready`` stays 200 while the LLM step is hung (the model is loaded; nothing checks that
it still produces tokens). The OpenAI server's health endpoint (``OPENAI_HEALTH_PATH``, the pod's readiness
probe) awaits ``GenerationCheck.ready()`` instead:

- a token streamed to any client within ``fresh_seconds`` is proof enough (``note_token``): a replica busy
  serving is ready without an extra request, so saturation alone never takes it out of the Service;
- otherwise one 1-token generation runs (at most one at a time; concurrent probes share it) and must finish
  within ``deadline_seconds``, below the probe's own timeout so the answer is ours and not the kubelet's.

A hung engine produces no tokens and does not answer the probe's generation: the pod goes unready after the
probe's failure threshold and leaves the Service, while liveness (Triton's process) is judged separately.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Awaitable, Callable

from inference_platform.catalog.serving_contract import READINESS_DEADLINE_ENV

DEADLINE_ENV = READINESS_DEADLINE_ENV
"""Set on the server container by the rollout (components/serving/pod.py): the probe timeout less a margin."""
DEFAULT_DEADLINE_SECONDS = 4.0
DEFAULT_FRESH_SECONDS = 10.0


class GenerationCheck:
    def __init__(
        self,
        generate_one_token: Callable[[], Awaitable[object]],
        *,
        deadline_seconds: float = DEFAULT_DEADLINE_SECONDS,
        fresh_seconds: float = DEFAULT_FRESH_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if deadline_seconds <= 0 or fresh_seconds < 0:
            raise ValueError("GenerationCheck: deadline_seconds > 0 and fresh_seconds >= 0")
        self._generate = generate_one_token
        self.deadline_seconds = deadline_seconds
        self.fresh_seconds = fresh_seconds
        self._clock = clock
        self._last_token: float | None = None
        self._probe: asyncio.Task | None = None

    def note_token(self) -> None:
        """Call whenever the engine hands the server a token (any request)."""
        self._last_token = self._clock()

    def _finished(self, probe: asyncio.Task) -> None:
        if not probe.cancelled() and probe.exception() is None:
            self.note_token()

    async def ready(self) -> tuple[bool, str]:
        if self._last_token is not None and self._clock() - self._last_token <= self.fresh_seconds:
            return True, "the engine produced a token recently"
        if self._probe is None or self._probe.done():
            self._probe = asyncio.ensure_future(self._generate())
            # A generation that finishes after its probe gave up still proves the engine generates: without
            # this, every later probe found it done, unrecorded, and started another one, so an engine whose
            # first token takes longer than the deadline never became ready.
            self._probe.add_done_callback(self._finished)
        try:
            await asyncio.wait_for(asyncio.shield(self._probe), self.deadline_seconds)
        except TimeoutError:
            # The generation keeps its chance to finish: the next probe waits on the same one, not a new one.
            return False, f"a 1-token generation did not finish within {self.deadline_seconds:g} s"
        except Exception as exc:  # any engine failure means "cannot generate"
            return False, f"a 1-token generation failed: {exc}"
        self.note_token()
        return True, "a 1-token generation finished"


def deadline_from_env(environ: dict[str, str] | None = None) -> float:
    raw = (environ if environ is not None else os.environ).get(DEADLINE_ENV)
    if raw is None:
        return DEFAULT_DEADLINE_SECONDS
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"{DEADLINE_ENV}={raw!r}: expected seconds > 0") from None
    if value <= 0:
        raise ValueError(f"{DEADLINE_ENV}={raw!r}: expected seconds > 0")
    return value
