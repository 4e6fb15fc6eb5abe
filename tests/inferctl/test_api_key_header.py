"""One API-key shape for every client of ours (issue 20): ``verify``'s smoke checks and its load generator send
``Authorization: Bearer <key>`` (the OpenAI convention; the edge's api_key_auth strips ``Bearer ``) and any other
header raw. A header-recording server on 127.0.0.1 sees what goes on the wire: it is a LABELLED STAND-IN for the
OpenAI server, answering each route in OpenAI's shape with fixed text (the wire format of the key is what is
checked, not what a model says)."""

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
from inference_platform.settings import stack_files

pytestmark = pytest.mark.timeout(120)

KEY = "k-0123456789abcdef"
MODEL = "m"
USAGE = {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}


class _Recorder(BaseHTTPRequestHandler):
    seen: list[dict[str, str]]

    def _answer(self, body: bytes, content_type: str, status: int = 200) -> None:
        type(self).seen.append({"path": self.path, **{k.lower(): v for k, v in self.headers.items()}})
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        listed = {"object": "list", "data": [{"id": MODEL, "object": "model"}]}
        self._answer(json.dumps(listed if self.path == "/v1/models" else {}).encode(), "application/json")

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        if body.get("model") != MODEL:
            error = {"error": {"message": "no such model", "type": "invalid_request_error", "code": "model_not_found"}}
            self._answer(json.dumps(error).encode(), "application/json", 404)
        elif body.get("stream"):
            chunks = [{"choices": [{"index": 0, "delta": {"content": t}}]} for t in ("o", "k")]
            chunks.append({"choices": [], "usage": USAGE})
            events = b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks) + b"data: [DONE]\n\n"
            self._answer(events, "text/event-stream")
        else:
            # A schema-valid object when JSON is asked for (the smoke checks validate it).
            text = json.dumps({"answer": "ok", "confidence": 1, "tags": ["t"]}) if "response_format" in body else "ok"
            answer = {"message": {"role": "assistant", "content": text}, "text": text, "index": 0}
            self._answer(json.dumps({"choices": [answer], "usage": USAGE}).encode(), "application/json")

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
    return LoadConfig(url=url, model=MODEL, api_key_header=header, shape=Shape(kind="rate", rate=10.0, concurrency=2),
                      isl=SizeDistribution(mean=4), osl=SizeDistribution(mean=2), max_requests=3, duration_s=10.0,
                      timeout_s=10.0)  # fmt: skip


WIRE = {"authorization": f"Bearer {KEY}", "x-api-key": KEY}


@pytest.mark.parametrize("header", sorted(WIRE))
def test_the_load_generator_sends_the_key_in_its_headers_shape(recorder, tmp_path, header):
    url, seen = recorder
    result = run(_config(url, header), tmp_path / "load", api_key=KEY)
    posts = [h for h in seen if h.get("content-type") == "application/json"]
    assert len(result.records) == 3 and all(r.ok for r in result.records), result.records
    assert len(posts) == 3 and all(h["path"] == "/v1/chat/completions" for h in posts), seen
    assert all(h.get(header) == WIRE[header] for h in posts), posts
    # Counted by the final chunk's usage, timed per chunk.
    assert all(r.output_tokens == USAGE["completion_tokens"] and r.ttft_ms is not None for r in result.records)


def test_verify_smoke_sends_a_bearer_key_on_every_request(recorder):
    url, seen = recorder
    args = argparse.Namespace(url=url)
    plan = {"config": _config(url, "authorization"), "api_key": KEY}
    verdict = Verdict()
    assert _smoke(args, stack_files.load("dev"), plan, verdict, {}) is True, verdict.lines()
    paths = {h["path"] for h in seen}
    assert {"/health", "/v1/models", "/v1/chat/completions", "/v1/completions"} <= paths
    assert all(h.get("authorization") == f"Bearer {KEY}" for h in seen), seen


@pytest.mark.parametrize("header", sorted(WIRE))
def test_one_helper_builds_the_header(header):
    assert api_key_headers(header, KEY) == {header: WIRE[header]}
    assert api_key_headers(header.upper(), KEY) == {header: WIRE[header]}
    assert api_key_headers(header, None) == {} == api_key_headers(header, "")
