"""One API-key shape for every inferctl client (review): ``verify``'s smoke checks and its load
generator send ``<header>: <key>`` with the raw key under ``authorization`` and ``x-api-key`` alike,
which is what Envoy Gateway's apiKeyAuth and Triton's restricted API compare (neither strips a
``Bearer `` prefix). A header-recording server on 127.0.0.1 sees what goes on the wire."""

from __future__ import annotations

import argparse
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from inference_platform.inferctl.verify.command import _smoke
from inference_platform.inferctl.verify.verdict import Verdict
from inference_platform.loadgen.api_key_header import api_key_headers
from inference_platform.loadgen.config import LoadConfig, Shape, SizeDistribution
from inference_platform.loadgen.runner import run
from inference_platform.offline_plan import stack_settings

pytestmark = pytest.mark.timeout(120)

KEY = "k-0123456789abcdef"
HEADERS = ("authorization", "x-api-key")


class _Recorder(BaseHTTPRequestHandler):
    seen: list[dict[str, str]]

    def _answer(self, body: bytes, content_type: str) -> None:
        type(self).seen.append({k.lower(): v for k, v in self.headers.items()})
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        # Health 200, then model metadata without the expected tensors: the smoke checks stop there.
        self._answer(json.dumps({"inputs": [], "outputs": []}).encode(), "application/json")

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        event = json.dumps({"text_output": "ok"}).encode()
        self._answer(b"data: " + event + b"\n\n", "text/event-stream")

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def recorder() -> Iterator[tuple[str, list[dict[str, str]]]]:
    handler = type("Recorder", (_Recorder,), {"seen": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", handler.seen
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def _config(url: str, header: str) -> LoadConfig:
    return LoadConfig(url=url, api_key_header=header, shape=Shape(kind="rate", rate=10.0, concurrency=2),
                      isl=SizeDistribution(mean=4), osl=SizeDistribution(mean=2), max_requests=3, duration_s=10.0,
                      timeout_s=10.0)  # fmt: skip


@pytest.mark.parametrize("header", HEADERS)
def test_the_load_generator_sends_the_raw_key(recorder, tmp_path, header):
    url, seen = recorder
    result = run(_config(url, header), tmp_path / "load", api_key=KEY)
    posts = [h for h in seen if "content-type" in h and h["content-type"] == "application/json"]
    assert len(result.records) == 3 and len(posts) == 3, (result.records, seen)
    assert all(h.get(header) == KEY for h in posts), posts


@pytest.mark.parametrize("header", HEADERS)
def test_verify_smoke_sends_the_raw_key(recorder, header):
    url, seen = recorder
    args = argparse.Namespace(protocol="triton", url=url)
    plan = {"config": _config(url, header), "api_key": KEY}
    _smoke(args, stack_settings.load("dev"), plan, Verdict(), {})
    assert seen, "the smoke checks sent nothing"
    assert all(h.get(header) == KEY for h in seen), seen


@pytest.mark.parametrize("header", HEADERS)
def test_one_helper_builds_the_header(header):
    assert api_key_headers(header, KEY) == {header: KEY}
    assert api_key_headers(header.upper(), KEY) == {header: KEY}
    assert api_key_headers(header, None) == {} == api_key_headers(header, "")
