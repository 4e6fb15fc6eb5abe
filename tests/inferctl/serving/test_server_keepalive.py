"""The OpenAI server keeps an idle connection open past uvicorn's default keep-alive (5 s), on the real server: the
edge closes idle backend connections after ``EDGE_UPSTREAM_IDLE_SECONDS`` and the server must not close first
(catalog.serving_contract.OPENAI_KEEPALIVE_SECONDS; with the default, a request the edge sent on a connection the
server was closing came back 503 from the local edge)."""

from __future__ import annotations

import http.client
import time
import urllib.parse

import pytest

from inference_platform.catalog.serving_contract import OPENAI_HEALTH_PATH, OPENAI_KEEPALIVE_SECONDS

pytestmark = [pytest.mark.triton, pytest.mark.timeout(240)]

UVICORN_DEFAULT_KEEPALIVE_S = 5
"""uvicorn 0.55.0 ``config.py``: ``timeout_keep_alive: int = 5`` (pinned below against the locked uvicorn)."""


def test_uvicorns_own_default_is_what_the_server_overrides():
    import inspect

    import uvicorn

    default = inspect.signature(uvicorn.Config.__init__).parameters["timeout_keep_alive"].default
    assert default == UVICORN_DEFAULT_KEEPALIVE_S < OPENAI_KEEPALIVE_SECONDS


def test_an_idle_connection_outlives_uvicorns_default_keep_alive(shared_stack):
    url = urllib.parse.urlsplit(shared_stack.openai_url)
    connection = http.client.HTTPConnection(url.hostname, url.port, timeout=10)
    try:
        connection.request("GET", OPENAI_HEALTH_PATH)
        first = connection.getresponse()
        first.read()
        assert first.status == 200 and not first.will_close
        socket_before = connection.sock
        time.sleep(UVICORN_DEFAULT_KEEPALIVE_S + 1.5)
        # A server that closed the idle connection makes this raise (RemoteDisconnected) or reconnect.
        connection.request("GET", OPENAI_HEALTH_PATH)
        second = connection.getresponse()
        second.read()
        assert second.status == 200
        assert connection.sock is socket_before
    finally:
        connection.close()
