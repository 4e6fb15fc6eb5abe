"""The client side of ``inferctl smoke``: the OpenAI API over HTTP(S) as any client calls it, streams read as
server-sent events chunk by chunk, each chunk timed when it arrives (what a client sees, proxies included).

Standard library only (``http.client``), so it runs in the serving image's verification Job as it runs here; the
official ``openai`` client is the tests' client of the same server (tests/inferctl/serving).
"""

from __future__ import annotations

import http.client
import json
import ssl
import time
import urllib.parse
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from inference_platform.loadgen.connection_errors import describe
from inference_platform.loadgen.latency import StreamTiming


class SmokeFailure(Exception):
    """A check failed; the message says which and how."""


@dataclass(frozen=True)
class Endpoint:
    url: str
    """``http://host:port`` (the OpenAI server) or ``https://host[:port]`` (the edge)."""
    headers: Mapping[str, str]
    timeout: float
    ca_file: str | None = None
    """Default: the system trust store. CA bundle for an ``https`` URL (a local edge's own CA)."""

    @property
    def parsed(self) -> urllib.parse.SplitResult:
        return urllib.parse.urlsplit(self.url)

    @property
    def hostport(self) -> str:
        return self.parsed.netloc

    @property
    def tls(self) -> bool:
        return self.parsed.scheme == "https"


@dataclass(frozen=True)
class Streamed:
    """One streamed answer: its text, when each content chunk arrived, and the usage of its final chunk."""

    text: str
    timing: StreamTiming
    usage: dict[str, Any] | None
    finish_reason: str | None


def get(endpoint: Endpoint, path: str) -> tuple[int, Any]:
    """GET ``path``: (status, the JSON answer or the raw text when it is not JSON)."""
    with open_request(endpoint, "GET", path, None) as response:
        return response.status, _decode(response.read())


def post(endpoint: Endpoint, path: str, body: Mapping[str, Any]) -> tuple[int, Any]:
    """POST ``body`` as JSON to ``path``: (status, the JSON answer or the raw text)."""
    with open_request(endpoint, "POST", path, body) as response:
        return response.status, _decode(response.read())


def stream(endpoint: Endpoint, path: str, body: Mapping[str, Any]) -> Streamed:
    """POST a streaming request (``stream: true`` is set here) and read its events until ``[DONE]``."""
    start = time.monotonic()
    times: list[float] = []
    text: list[str] = []
    usage = finish = None
    done = False
    with open_request(endpoint, "POST", path, {**body, "stream": True}) as response:
        if response.status != 200:
            raise SmokeFailure(f"POST {path} (stream): HTTP {response.status}: {_brief(response.read())}")
        for data in sse_data(response):
            if data == b"[DONE]":
                done = True
                break
            event = _decode(data)
            if not isinstance(event, dict):
                raise SmokeFailure(f"POST {path} (stream): an event is not a JSON object: {_brief(data)}")
            if "error" in event:
                raise SmokeFailure(f"POST {path} (stream): error event: {_brief(data)}")
            usage = event.get("usage") or usage
            for choice in event.get("choices") or []:
                piece = (choice.get("delta") or {}).get("content") or choice.get("text") or ""
                if piece:
                    times.append(time.monotonic())
                    text.append(piece)
                finish = choice.get("finish_reason") or finish
    if not done:
        raise SmokeFailure(f"POST {path} (stream): the stream ended without data: [DONE]")
    tokens = usage.get("completion_tokens") if usage else None
    return Streamed(
        text="".join(text),
        timing=StreamTiming(start=start, token_times=tuple(times), output_tokens=tokens),
        usage=usage,
        finish_reason=finish,
    )


class _Answer:
    def __init__(self, connection: http.client.HTTPConnection, response: http.client.HTTPResponse) -> None:
        self.connection, self.response = connection, response

    def __enter__(self) -> http.client.HTTPResponse:
        return self.response

    def __exit__(self, *exc: object) -> None:
        self.connection.close()


def open_request(endpoint: Endpoint, method: str, path: str, body: Mapping[str, Any] | None) -> _Answer:
    """Send one request; the answer as a context manager that closes the connection."""
    parsed = endpoint.parsed
    connection: http.client.HTTPConnection
    if endpoint.tls:
        context = ssl.create_default_context(cafile=endpoint.ca_file)
        connection = http.client.HTTPSConnection(parsed.netloc, timeout=endpoint.timeout, context=context)
    else:
        connection = http.client.HTTPConnection(parsed.netloc, timeout=endpoint.timeout)
    headers = {"Accept": "application/json, text/event-stream", **endpoint.headers}
    data = None
    if body is not None:
        headers["Content-Type"] = "application/json"
        data = json.dumps(body).encode()
    try:
        connection.request(method, parsed.path.rstrip("/") + path, body=data, headers=headers)
        return _Answer(connection, connection.getresponse())
    except OSError as err:
        connection.close()
        raise SmokeFailure(f"{method} {describe(endpoint.url.rstrip('/') + path, err, endpoint.ca_file)}") from None


def sse_data(response: http.client.HTTPResponse) -> Iterator[bytes]:
    """The ``data:`` payloads of a server-sent event stream."""
    while True:
        line = response.readline()
        if not line:
            return
        line = line.strip()
        if line.startswith(b"data:"):
            yield line[5:].strip()


def _decode(payload: bytes) -> Any:
    try:
        return json.loads(payload)
    except json.JSONDecodeError:
        return payload.decode(errors="replace")


def _brief(payload: Any) -> str:
    text = payload.decode(errors="replace") if isinstance(payload, bytes) else str(payload)
    return text[:200]
