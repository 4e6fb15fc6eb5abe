"""Triton's KServe v2 HTTP API as a client: health and metadata through tritonclient, and the generate extension
(``/generate`` and the ``/generate_stream`` server-sent events) read token by token. For checks and tests of
Triton itself inside the cluster's trust boundary: the public API is OpenAI's, and ``inferctl smoke`` speaks it
(``smoke_openai``), whose endpoint and failure types this module shares."""

from __future__ import annotations

import http.client
import json
import time
from collections.abc import Iterator, Mapping
from typing import Any

from inference_platform.inferctl.serving.smoke_openai import Endpoint as HttpEndpoint
from inference_platform.inferctl.serving.smoke_openai import SmokeFailure, open_request, sse_data
from inference_platform.loadgen.latency import StreamTiming

__all__ = ["HttpEndpoint", "SmokeFailure", "check_health", "generate", "generate_stream"]


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
    with open_request(endpoint, "POST", f"/v2/models/{model}/generate", body) as response:
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
    with open_request(endpoint, "POST", f"/v2/models/{model}/generate_stream", body) as response:
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


def _gevent_context(ca_file: str | None) -> Any:
    """tritonclient's HTTP client runs on gevent: its TLS context comes from a factory."""
    import gevent.ssl

    return lambda *args, **kwargs: gevent.ssl.create_default_context(cafile=ca_file)


def _events(response: http.client.HTTPResponse) -> Iterator[dict[str, Any]]:
    """The ``data:`` payloads of a server-sent event stream, each a JSON object."""
    for data in sse_data(response):
        yield _json(data, "generate_stream event")


def _json(payload: bytes, what: str) -> dict[str, Any]:
    try:
        data = json.loads(payload)
    except json.JSONDecodeError:
        raise SmokeFailure(f"{what}: not JSON: {payload[:200]!r}") from None
    if not isinstance(data, dict):
        raise SmokeFailure(f"{what}: expected a JSON object")
    return data
