"""The batch API's error middleware on a request aiohttp itself refuses: a body past the application's
client_max_size (a JSON body read whole, e.g. POST /v1/batches) is a 413 in the OpenAI error shape, not a 500.

aiohttp's HTTPRequestEntityTooLarge keeps no ``max_size`` attribute (only its text): the middleware read one
and failed inside its own handler, which mypy found (issue 26 §7)."""

from __future__ import annotations

import asyncio
import json

from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from inference_platform.batch.api import _errors

LIMIT = 1024


async def _echo(request: web.Request) -> web.Response:
    return web.json_response(await request.json())


async def _post(body: bytes) -> tuple[int, str]:
    app = web.Application(client_max_size=LIMIT, middlewares=[_errors])
    app.router.add_post("/v1/batches", _echo)
    async with TestClient(TestServer(app)) as client:
        response = await client.post("/v1/batches", data=body, headers={"Content-Type": "application/json"})
        return response.status, await response.text()


def test_a_body_past_client_max_size_is_a_413_naming_the_limit():
    status, text = asyncio.run(_post(b'{"pad": "' + b"x" * (2 * LIMIT) + b'"}'))
    assert status == 413, text
    error = json.loads(text)["error"]
    assert error["code"] == "file_too_large"
    assert f"larger than {LIMIT} bytes" in error["message"]


def test_a_body_within_the_limit_passes():
    status, text = asyncio.run(_post(b'{"pad": "x"}'))
    assert (status, json.loads(text)) == (200, {"pad": "x"})
