"""Smoke against a server whose metadata is not Triton's: a failed check naming what is missing, never a
traceback. The server is a plain HTTP handler on 127.0.0.1 answering the KServe v2 paths smoke reads."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from inference_platform.inferctl.serving.smoke_http import HttpEndpoint, SmokeFailure, check_health

CONTRACT = {"inputs": ["text_input", "max_tokens"], "outputs": ["text_output"]}


def _server(metadata: dict) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            body = json.dumps(metadata if self.path.endswith("/ensemble") else {}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.mark.parametrize(
    ("metadata", "missing"),
    [
        ({"name": "ensemble", "outputs": [{"name": "text_output"}]}, "inputs max_tokens, text_input"),
        ({"name": "ensemble", "inputs": [{"name": "text_input"}, {"name": "max_tokens"}]}, "outputs text_output"),
    ],
)
def test_metadata_without_a_side_is_a_failed_check(metadata, missing):
    server = _server(metadata)
    try:
        endpoint = HttpEndpoint(url=f"http://127.0.0.1:{server.server_address[1]}", headers={}, timeout=5)
        with pytest.raises(SmokeFailure, match=f"ensemble metadata lacks {missing}"):
            check_health(endpoint, ["ensemble"], CONTRACT)
    finally:
        server.shutdown()
        server.server_close()
