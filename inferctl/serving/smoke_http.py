"""HTTP side of ``inferctl smoke``: health and metadata through tritonclient, and the generate
extension (``/generate`` and the ``/generate_stream`` server-sent events) read token by token."""

from __future__ import annotations

import http.client
import json
import ssl
import time
import urllib.parse
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from inference_platform.loadgen.latency import StreamTiming


class SmokeFailure(Exception):
    """A check failed; the message says which and how."""


@dataclass(frozen=True)
class HttpEndpoint:
    url: str
    """``http://host:port`` or ``https://host[:port]``."""
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


def check_health(endpoint: HttpEndpoint, models: list[str], contract: Mapping[str, list[str]]) -> list[str]:
    """Live, ready, every model ready, and the ensemble's metadata holding the client contract."""
    import tritonclient.http as httpclient
    from tritonclient.utils import InferenceServerException

    client = httpclient.InferenceServerClient(
        endpoint.hostport,
        ssl=endpoint.tls,
        ssl_context_factory=_gevent_context(endpoint.ca_file) if endpoint.tls else None,
        connection_timeout=endpoint.timeout,
        network_timeout=endpoint.timeout,
    )
    headers = dict(endpoint.headers)
    try:
        if not client.is_server_live(headers=headers):
            raise SmokeFailure("/v2/health/live is not 200")
        if not client.is_server_ready(headers=headers):
            raise SmokeFailure("/v2/health/ready is not 200")
        notes = ["server live and ready"]
        for model in models:
            if not client.is_model_ready(model, headers=headers):
                raise SmokeFailure(f"model {model} is not ready")
        notes.append(f"models ready: {', '.join(models)}")
        metadata = client.get_model_metadata("ensemble", headers=headers)
    except InferenceServerException as err:
        raise SmokeFailure(f"health/metadata: {err.message()}") from None
    except OSError as err:
        raise SmokeFailure(f"cannot reach {endpoint.url}: {err}") from None
    finally:
        client.close()
    # A server (or a proxy in front of it) may answer with metadata missing a side: that is a failed check.
    found = {
        side: {t.get("name") for t in metadata.get(side) or [] if isinstance(t, dict)} for side in ("inputs", "outputs")
    }
    for side, names in contract.items():
        missing = sorted(set(names) - found[side])
        if missing:
            raise SmokeFailure(f"ensemble metadata lacks {side} {', '.join(missing)}")
    notes.append(f"ensemble metadata: {len(found['inputs'])} inputs, {len(found['outputs'])} outputs")
    return notes


def generate(endpoint: HttpEndpoint, model: str, body: Mapping[str, Any]) -> dict[str, Any]:
    """POST /v2/models/<model>/generate; the JSON answer (errors raise SmokeFailure)."""
    with _post(endpoint, f"/v2/models/{model}/generate", body) as response:
        payload = response.read()
        data = _json(payload, "generate")
        if response.status != 200 or "error" in data:
            raise SmokeFailure(f"{model}/generate: HTTP {response.status}: {data.get('error', payload[:200])}")
    return data


def generate_stream(endpoint: HttpEndpoint, model: str, body: Mapping[str, Any]) -> tuple[str, StreamTiming]:
    """POST /v2/models/<model>/generate_stream; the concatenated text and when each token arrived."""
    start = time.monotonic()
    text: list[str] = []
    times: list[float] = []
    with _post(endpoint, f"/v2/models/{model}/generate_stream", body) as response:
        if response.status != 200:
            raise SmokeFailure(f"{model}/generate_stream: HTTP {response.status}: {response.read()[:200]!r}")
        for event in _events(response):
            if "error" in event:
                raise SmokeFailure(f"{model}/generate_stream: {event['error']}")
            piece = event.get("text_output", "")
            if piece:
                times.append(time.monotonic())
                text.append(piece)
    return "".join(text), StreamTiming(start=start, token_times=tuple(times))


class _Response:
    def __init__(self, connection: http.client.HTTPConnection, response: http.client.HTTPResponse) -> None:
        self.connection = connection
        self.response = response

    def __enter__(self) -> http.client.HTTPResponse:
        return self.response

    def __exit__(self, *exc: object) -> None:
        self.connection.close()


def _post(endpoint: HttpEndpoint, path: str, body: Mapping[str, Any]) -> _Response:
    parsed = endpoint.parsed
    connection: http.client.HTTPConnection
    if endpoint.tls:
        connection = http.client.HTTPSConnection(
            parsed.netloc, timeout=endpoint.timeout, context=ssl.create_default_context(cafile=endpoint.ca_file)
        )
    else:
        connection = http.client.HTTPConnection(parsed.netloc, timeout=endpoint.timeout)
    headers = {"Content-Type": "application/json", **endpoint.headers}
    try:
        connection.request("POST", parsed.path.rstrip("/") + path, body=json.dumps(body), headers=headers)
        return _Response(connection, connection.getresponse())
    except OSError as err:
        connection.close()
        raise SmokeFailure(f"POST {path}: {err}") from None


def _gevent_context(ca_file: str | None) -> Any:
    """tritonclient's HTTP client runs on gevent: its TLS context comes from a factory."""
    import gevent.ssl

    return lambda *args, **kwargs: gevent.ssl.create_default_context(cafile=ca_file)


def _events(response: http.client.HTTPResponse) -> Iterator[dict[str, Any]]:
    """Server-sent events: ``data: <json>`` lines, separated by blank lines."""
    while True:
        line = response.readline()
        if not line:
            return
        line = line.strip()
        if line.startswith(b"data:"):
            yield _json(line[5:].strip(), "generate_stream event")


def _json(payload: bytes, what: str) -> dict[str, Any]:
    try:
        data = json.loads(payload)
    except json.JSONDecodeError:
        raise SmokeFailure(f"{what}: not JSON: {payload[:200]!r}") from None
    if not isinstance(data, dict):
        raise SmokeFailure(f"{what}: expected a JSON object")
    return data
