"""Requests the batch API refuses get the OpenAI error shape, not a 500 (both found by mypy, issue 26 §7):

- a body past the application's client_max_size (a JSON body read whole, e.g. POST /v1/batches) is a 413:
  aiohttp's HTTPRequestEntityTooLarge keeps no ``max_size`` attribute (only its text), and the middleware read
  one, failing inside its own handler;
- a nested multipart part in an upload is a 400: aiohttp hands it over as a MultipartReader, which has no
  ``name``, and the upload read one."""

from __future__ import annotations

import json
from types import SimpleNamespace

from aiohttp import MultipartWriter, web
from aiohttp.test_utils import TestClient, TestServer

from inference_platform.batch.api import BatchApi, _errors
from tests.own_loop import run_on_own_loop

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
    status, text = run_on_own_loop(_post(b'{"pad": "' + b"x" * (2 * LIMIT) + b'"}'))
    assert status == 413, text
    error = json.loads(text)["error"]
    assert error["code"] == "file_too_large"
    assert f"larger than {LIMIT} bytes" in error["message"]


def test_a_body_within_the_limit_passes():
    status, text = run_on_own_loop(_post(b'{"pad": "x"}'))
    assert (status, json.loads(text)) == (200, {"pad": "x"})


async def _upload_nested_multipart() -> tuple[int, str]:
    # Only what the upload reads before it stores anything: the client header and the file limit.
    api = BatchApi(SimpleNamespace(client_id_header="x-client-id", max_file_bytes=LIMIT), store=None, sqs=None)
    inner = MultipartWriter("mixed")
    inner.append('{"custom_id": "1"}\n')
    outer = MultipartWriter("form-data")
    outer.append(inner)
    async with TestClient(TestServer(api.app())) as client:
        response = await client.post("/v1/files", data=outer, headers={"x-client-id": "team-a"})
        return response.status, await response.text()


def test_a_nested_multipart_part_is_an_invalid_upload_not_a_500():
    # aiohttp hands a nested multipart part over as a MultipartReader, which has no name (the upload read one).
    status, text = run_on_own_loop(_upload_nested_multipart())
    assert status == 400, text
    assert json.loads(text)["error"]["code"] == "invalid_upload"
