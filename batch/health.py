"""The metrics port both roles serve: ``/metrics``, ``/healthz`` (the role's loop is alive), ``/readyz``
(the bucket and the queue answer)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

LIVE_AFTER_SECONDS = 60.0
READY_CACHE_SECONDS = 10.0


class Health:
    """Liveness from the loop's heartbeat; readiness from a cheap AWS call, cached."""

    def __init__(self, check: Callable[[], Any]) -> None:
        self._check = check
        self._beat = time.monotonic()
        self._ready_at = -READY_CACHE_SECONDS
        self._ready = False

    def beat(self) -> None:
        self._beat = time.monotonic()

    def live(self) -> bool:
        return time.monotonic() - self._beat < LIVE_AFTER_SECONDS

    async def ready(self) -> bool:
        if time.monotonic() - self._ready_at >= READY_CACHE_SECONDS:
            try:
                await asyncio.to_thread(self._check)
                self._ready = True
            except Exception:
                self._ready = False
            self._ready_at = time.monotonic()
        return self._ready

    def routes(self) -> list[web.RouteDef]:
        async def healthz(_request: web.Request) -> web.Response:
            return web.Response(status=200 if self.live() else 503, text="ok\n" if self.live() else "stalled\n")

        async def readyz(_request: web.Request) -> web.Response:
            ready = await self.ready()
            return web.Response(status=200 if ready else 503, text="ready\n" if ready else "not ready\n")

        return [web.get("/healthz", healthz), web.get("/readyz", readyz)]


def metrics_app(health: Health) -> web.Application:
    async def metrics(_request: web.Request) -> web.Response:
        response = web.Response(body=generate_latest())
        response.content_type = CONTENT_TYPE_LATEST.split(";")[0]
        return response

    app = web.Application()
    app.add_routes([web.get("/metrics", metrics), *health.routes()])
    return app
