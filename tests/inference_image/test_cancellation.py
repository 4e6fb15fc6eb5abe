"""A client that goes away frees its LLM slot within a second, on the real local Triton (issue 17 §8).

The stand-in generates 1,000 tokens at 20 ms each (20 s; ``min_tokens`` keeps it from ending early).
Each client reads a few tokens, then closes its HTTP stream or cancels its gRPC stream, through the
ensemble and through BLS; the stand-in's in-flight count (``nv_trt_llm_request_metrics{request_type=
"active"}``, its running requests) must drop to 0 within a second. Before, the LLM step ran on to
``max_tokens`` (about 20 s) after the client had gone.
"""

from __future__ import annotations

import http.client
import json
import queue
import re
import socket
import statistics
import time
import urllib.parse
import urllib.request

import numpy as np
import pytest
from inference_platform.inference_image.testing.cpu_llm.options import StandIn
from inference_platform.offline_plan import stack_settings

from tests.inferctl.serving.conftest import start_stand_in_server

pytestmark = [pytest.mark.triton, pytest.mark.timeout(300)]

TOKENS = 1000
SLOW = StandIn(first_token_delay_ms=10, token_delay_ms=20)
FREED_WITHIN_S = 1.0
ENTRY_POINTS = ("ensemble", "tensorrt_llm_bls")
_ACTIVE = re.compile(r'^nv_trt_llm_request_metrics\{(?=[^}]*request_type="active")[^}]*\} (\S+)$', re.MULTILINE)
FREED: dict[str, float] = {}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with start_stand_in_server(stack_settings.load("dev").serving, tmp_path_factory.mktemp("cancel"), SLOW) as running:
        yield running
    if FREED:
        print("\nslot freed after the client left (s): " + ", ".join(f"{k} {v:.2f}" for k, v in FREED.items()))
        print(f"median {statistics.median(FREED.values()):.2f} s")


def active(server) -> int:
    with urllib.request.urlopen(server.metrics_url, timeout=5) as response:
        text = response.read().decode()
    found = _ACTIVE.findall(text)
    assert found, "the stand-in publishes nv_trt_llm_request_metrics{request_type=active}"
    return round(sum(float(v) for v in found))


def _wait_active(server, wanted: int, timeout: float) -> float:
    """Seconds until the stand-in runs ``wanted`` requests (fails after ``timeout``)."""
    start = time.monotonic()
    while (count := active(server)) != wanted:
        if time.monotonic() - start > timeout:
            pytest.fail(f"{count} requests still generating {timeout:.0f} s later (expected {wanted})")
        time.sleep(0.02)
    return time.monotonic() - start


def _body() -> dict:
    return {"text_input": "cancel me", "max_tokens": TOKENS, "min_tokens": TOKENS, "stream": True}


def _http_stream_then_close(server, model: str) -> None:
    url = urllib.parse.urlsplit(server.http_url)
    connection = http.client.HTTPConnection(url.hostname, url.port, timeout=30)
    connection.request(
        "POST", f"/v2/models/{model}/generate_stream", json.dumps(_body()), {"Content-Type": "application/json"}
    )
    response = connection.getresponse()
    assert response.status == 200
    events = 0
    while events < 3:
        line = response.readline()
        assert line, "the stream ended early"
        events += line.startswith(b"data:")
    _wait_active(server, 1, 10)
    # The client goes away: its socket closes under the open stream.
    assert connection.sock is not None
    connection.sock.shutdown(socket.SHUT_RDWR)
    connection.close()


def _grpc_stream_then_cancel(server, model: str) -> None:
    import tritonclient.grpc as grpcclient

    results: queue.Queue = queue.Queue()
    client = grpcclient.InferenceServerClient(server.grpc_url)
    inputs = []
    for name, value, datatype in (
        ("text_input", np.array([[b"cancel me"]], dtype=object), "BYTES"),
        ("max_tokens", np.array([[TOKENS]], dtype=np.int32), "INT32"),
        ("min_tokens", np.array([[TOKENS]], dtype=np.int32), "INT32"),
        ("stream", np.array([[True]], dtype=bool), "BOOL"),
    ):
        tensor = grpcclient.InferInput(name, list(value.shape), datatype)
        tensor.set_data_from_numpy(value)
        inputs.append(tensor)
    client.start_stream(callback=lambda result, error: results.put((result, error)))
    try:
        client.async_stream_infer(model, inputs, request_id="cancelled-client")
        for _ in range(3):
            _result, error = results.get(timeout=30)
            assert error is None, error
        _wait_active(server, 1, 10)
    finally:
        client.stop_stream(cancel_requests=True)
        client.close()


@pytest.mark.parametrize("model", ENTRY_POINTS)
@pytest.mark.parametrize(
    "leave", [_http_stream_then_close, _grpc_stream_then_cancel], ids=["http-closed", "grpc-cancelled"]
)
def test_a_client_that_goes_away_frees_its_slot_within_a_second(server, model, leave):
    _wait_active(server, 0, 30)  # nothing left over from another test
    leave(server, model)
    freed = _wait_active(server, 0, 30)
    FREED[f"{model}/{leave.__name__.split('_')[1]}"] = freed
    assert freed <= FREED_WITHIN_S, f"{model}: the LLM step ran on {freed:.2f} s after its client left"
