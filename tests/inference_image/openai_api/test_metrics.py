"""The OpenAI server's metrics page (inference_image/openai_api/metrics.py): the engine's gauges relayed from Triton's
metrics page as they are (every label kept, so the endpoint picker's subset match finds them), vLLM's gauges derived
from them, and nothing relayed when Triton's page cannot be read (a stale queue length would misroute).

The live counterpart, on the real local stack under load: tests/inferctl/serving/test_serving_port_metrics.py.
"""

from __future__ import annotations

import http.server
import sys
import threading
from collections.abc import Iterator

import pytest
from prometheus_client.parser import text_string_to_metric_families

from inference_platform.catalog import server_metrics
from inference_platform.inference_image.openai_api import metrics
from inference_platform.processes import free_port
from tests.own_loop import run_on_own_loop

TRITON_PAGE = """\
# HELP nv_inference_count Number of inferences performed
# TYPE nv_inference_count counter
nv_inference_count{model="tensorrt_llm",version="1"} 12
# HELP nv_trt_llm_request_metrics LLM step requests (active, max, waiting)
# TYPE nv_trt_llm_request_metrics gauge
nv_trt_llm_request_metrics{model="tensorrt_llm",request_type="waiting",version="1"} 3
nv_trt_llm_request_metrics{model="tensorrt_llm",request_type="scheduled",version="1"} 8
nv_trt_llm_request_metrics{model="tensorrt_llm",request_type="active",version="1"} 8
# HELP nv_trt_llm_kv_cache_block_metrics KV cache blocks (max, free, used, tokens_per, fraction)
# TYPE nv_trt_llm_kv_cache_block_metrics gauge
nv_trt_llm_kv_cache_block_metrics{kv_cache_block_type="fraction",model="tensorrt_llm",version="1"} 0.25
nv_trt_llm_kv_cache_block_metrics{kv_cache_block_type="tokens_per",model="tensorrt_llm",version="1"} 32
nv_trt_llm_kv_cache_block_metrics{kv_cache_block_type="max",model="tensorrt_llm",version="1"} 4096
"""


@pytest.fixture
def triton_page() -> Iterator[str]:
    class Page(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = TRITON_PAGE.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), Page)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/metrics"
    finally:
        server.shutdown()
        server.server_close()


def _page(
    url: str | None, served: metrics.ServerMetrics | None = None
) -> dict[str, list[tuple[dict[str, str], float]]]:
    served = served or metrics.ServerMetrics("llama-3.1-8b", (0.1, 1.0), triton_metrics_url=url)
    text = run_on_own_loop(served.exposition()).decode()
    out: dict[str, list[tuple[dict[str, str], float]]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out.setdefault(sample.name, []).append((sample.labels, sample.value))
    return out


def test_the_engine_gauges_are_relayed_whole_and_vllms_derived_from_them(triton_page):
    page = _page(triton_page)
    requests = {labels["request_type"]: (labels, value) for labels, value in page["nv_trt_llm_request_metrics"]}
    assert requests["waiting"] == ({"model": "tensorrt_llm", "request_type": "waiting", "version": "1"}, 3)
    assert requests["scheduled"][1] == 8 and requests["active"][1] == 8
    blocks = {labels["kv_cache_block_type"]: value for labels, value in page["nv_trt_llm_kv_cache_block_metrics"]}
    assert blocks == {"fraction": 0.25, "tokens_per": 32, "max": 4096}
    assert "nv_inference_count" not in page  # only the engine's families: Triton's own stay on its port
    model = {server_metrics.MODEL_LABEL: "llama-3.1-8b"}
    assert page[server_metrics.WAITING] == [(model, 3)]
    assert page[server_metrics.RUNNING] == [(model, 8)]
    assert page[server_metrics.KV_USAGE] == [(model, 0.25)]


NEURON_PAGE = """\
# HELP neuron_llm_request_metrics LLM step requests (active, max, waiting)
# TYPE neuron_llm_request_metrics gauge
neuron_llm_request_metrics{model="neuron_llm",request_type="active",version="1"} 4
neuron_llm_request_metrics{model="neuron_llm",request_type="max",version="1"} 4
neuron_llm_request_metrics{model="neuron_llm",request_type="waiting",version="1"} 2
"""


def test_a_neuron_steps_gauges_are_relayed_and_its_running_batch_is_its_active_requests(monkeypatch, triton_page):
    """The npu picker reads neuron_llm_request_metrics on the serving port (catalog.endpoint_picker.neuron_plugins);
    vLLM's running and waiting come from it, and there is no KV usage to derive (static batches)."""
    monkeypatch.setattr(sys.modules[__name__], "TRITON_PAGE", NEURON_PAGE)
    page = _page(triton_page)
    requests = {labels["request_type"]: value for labels, value in page["neuron_llm_request_metrics"]}
    assert requests == {"active": 4, "max": 4, "waiting": 2}
    model = {server_metrics.MODEL_LABEL: "llama-3.1-8b"}
    assert page[server_metrics.RUNNING] == [(model, 4)]
    assert page[server_metrics.WAITING] == [(model, 2)]
    assert server_metrics.KV_USAGE not in page


def test_nothing_is_relayed_when_tritons_page_cannot_be_read():
    page = _page(f"http://127.0.0.1:{free_port()}/metrics")
    for name in (*metrics.RELAYED, server_metrics.WAITING, server_metrics.RUNNING, server_metrics.KV_USAGE):
        assert name not in page, name
    assert f"{server_metrics.TTFT_SECONDS}_count" not in page  # no request yet: the histograms have no series


def test_a_missed_read_keeps_the_last_gauges_for_a_bounded_time(monkeypatch):
    """A read that fails (Triton's page slow on a busy replica) leaves the last values up to RELAY_STALE_S, not a blank
    view of the replica the picker most needs to see; after that, nothing (too old to route on)."""
    monkeypatch.setattr(metrics, "RELAY_TTL_S", 0.0)
    page = iter([TRITON_PAGE.encode()])

    class Once(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = next(page, None)
            if body is None:  # Triton's page no longer answers
                self.send_error(503)
                return
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), Once)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/metrics"
    try:
        served = metrics.ServerMetrics("llama-3.1-8b", (0.1, 1.0), triton_metrics_url=url)
        assert _page(url, served)[server_metrics.WAITING][0][1] == 3
        assert _page(url, served)[server_metrics.WAITING][0][1] == 3  # the 503: the last read, within the bound
        monkeypatch.setattr(metrics, "RELAY_STALE_S", 0.0)
        later = _page(url, served)
        for name in (*metrics.RELAYED, server_metrics.WAITING, server_metrics.RUNNING, server_metrics.KV_USAGE):
            assert name not in later, name
    finally:
        server.shutdown()
        server.server_close()
