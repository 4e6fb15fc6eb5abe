"""The public API surface (issue 17 §7, issue 20): what the edge admits, checked against the upstream facts it
relies on.

Upstream facts, each read at the version this project pins:

- The OpenAI API as the official ``openai`` client calls it: ``GET /models``, ``POST /chat/completions``,
  ``POST /completions`` under a ``.../v1`` base URL (proven with the pinned client itself through the real
  Envoy in tests/inferctl/serving/test_local_edge.py).
- Triton (``triton-inference-server/server`` branch ``r25.05``, ``src/http_server.cc``,
  ``HTTPAPIServer::Handle`` and the endpoint patterns of its constructor): its HTTP endpoints below, matched
  on the request path without its query string; none is public any more (issue 20: KServe v2 stays inside
  the cluster for metrics, health and internal checks).
- Gateway API v1.6.1, the bundle Envoy Gateway v1.9.0 installs (``envoyproxy/gateway`` tag ``v1.9.0``,
  ``charts/gateway-helm/charts/crds/crds/gatewayapi-crds.yaml``, ``go.mod``): HTTPRoute path match types
  ``Exact`` | ``PathPrefix`` | ``RegularExpression``; a rule's matches default to ``PathPrefix /``; at
  most 16 rules, 64 matches per rule and fewer than 128 matches per route; Exact/PathPrefix values
  start with ``/`` and use the characters of the CRD's pattern; ``method`` is one of the nine HTTP
  methods.
- Envoy Gateway v1.9.0 translation (``internal/gatewayapi/route.go``): an HTTPRoute ``Exact`` match is
  an exact path match and ``method`` a ``:method`` header match. ``internal/xds/translator/listener.go``
  always sets ``normalize_path`` (RFC 3986), like the local Envoy, so the path matched is the path the
  server receives.
"""

from __future__ import annotations

import re

import pytest

from inference_platform.catalog.edge_policy import (
    OPENAI_ENDPOINTS,
    EdgePolicy,
    Endpoint,
    RouteGroup,
)
from inference_platform.components.edge.controller_config import cluster_controller_config
from inference_platform.components.edge.gateway_api import gateway_summary, render_gateway_objects
from inference_platform.inferctl.serving.edge_envoy import Listener, Upstream, bootstrap_summary, render_bootstrap
from tests.components.edge.targets import TARGET

TRITON_HTTP_SOURCE = "triton-inference-server/server r25.05 src/http_server.cc"
GATEWAY_API_SOURCE = "envoyproxy/gateway v1.9.0 charts/gateway-helm/charts/crds/crds/gatewayapi-crds.yaml (v1.6.1)"
# The official client's paths under its base URL (openai-python resources: models.list, chat.completions.create,
# completions.create), each with its method.
OPENAI_CLIENT_CALLS = {("GET", "/v1/models"), ("POST", "/v1/chat/completions"), ("POST", "/v1/completions")}

# Triton's HTTP endpoints at r25.05, by what they do (our own description of HTTPAPIServer::Handle's
# dispatch; <m> a model, <v> a version, <r> a region, <repo> a repository name).
TRITON_HTTP_ENDPOINTS = {
    "server metadata": r"/v2",
    "server health": r"/v2/health/(live|ready)",
    "logging": r"/v2/logging",
    "all model statistics": r"/v2/models/stats",
    "model metadata": r"/v2/models/[^/]+(/versions/[0-9]+)?",
    "model inference": r"/v2/models/[^/]+(/versions/[0-9]+)?/(infer|generate|generate_stream)",
    "model ready": r"/v2/models/[^/]+(/versions/[0-9]+)?/ready",
    "model config": r"/v2/models/[^/]+(/versions/[0-9]+)?/config",
    "model statistics": r"/v2/models/[^/]+(/versions/[0-9]+)?/stats",
    "model trace settings": r"/v2/models/[^/]+/trace/setting",
    "repository index": r"/v2/repository(/[^/]+)?/index",
    "repository load/unload": r"/v2/repository(/[^/]+)?/models/[^/]+/(load|unload)",
    "system shared memory": r"/v2/systemsharedmemory(/region/[^/]+)?/(status|register|unregister)",
    "cuda shared memory": r"/v2/cudasharedmemory(/region/[^/]+)?/(status|register|unregister)",
    "trace settings": r"/v2/trace/setting",
}
HTTP_PATH_TYPES = ("Exact", "PathPrefix", "RegularExpression")
HTTP_METHODS = ("GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH")
MAX_RULES, MAX_MATCHES_PER_RULE, MAX_MATCHES_PER_ROUTE = 16, 64, 127
PATH_VALUE = re.compile(r"^(?:[-A-Za-z0-9/._~!$&'()*+,;=:@]|[%][0-9a-fA-F]{2})+$")


def triton_endpoint(path: str) -> str | None:
    """Which Triton r25.05 endpoint serves ``path`` (None: Triton's own 404)."""
    # Handle() tries the exact /v2/models/stats and /v2/logging first, then the model pattern.
    for kind in ("all model statistics", "logging", *TRITON_HTTP_ENDPOINTS):
        if re.fullmatch(TRITON_HTTP_ENDPOINTS[kind], path):
            return kind
    return None


def bootstrap(policy: EdgePolicy, extra: dict | None = None) -> dict:
    return render_bootstrap(
        policy,
        keys={},
        listener=Listener(
            address="127.0.0.1", port=1, certificate=None, private_key=None, admin_port=2, access_log=None
        ),
        upstream=Upstream(address="127.0.0.1", port=3),
        extra_upstreams=extra,
        controller=cluster_controller_config(policy),
    )


def test_the_public_endpoints_are_the_openai_calls_of_the_official_client_and_health():
    admitted = {(e.method, e.path) for e in EdgePolicy(clients=()).http_endpoints}
    assert admitted == OPENAI_CLIENT_CALLS | {("GET", "/health")}
    assert all(e.match == "Exact" for e in OPENAI_ENDPOINTS)
    # Nothing of Triton's own API is public, health included (the OpenAI server answers for the engine).
    assert not any(triton_endpoint(path) for _, path in admitted), TRITON_HTTP_SOURCE


def test_a_served_models_retrieve_path_is_admitted_exactly_in_both_renderings():
    policy = EdgePolicy(clients=(), served_models=("Llama-3.1-8B", "meta-llama/Llama-3.1-8B"))
    expected = sorted(
        [(e.method, f"Exact {e.path}") for e in OPENAI_ENDPOINTS]
        + [("GET", "Exact /v1/models/Llama-3.1-8B"), ("GET", "Exact /v1/models/meta-llama/Llama-3.1-8B")]
    )
    for summary in (gateway_summary(render_gateway_objects(policy, TARGET)), bootstrap_summary(bootstrap(policy))):
        assert summary["http_endpoints"] == expected
    for bad in ("", "a/../b", "a//b", "x y", "../v2"):
        with pytest.raises(ValueError, match="cannot be part of a path"):
            EdgePolicy(clients=(), served_models=(bad,))


@pytest.mark.parametrize("kind", sorted(TRITON_HTTP_ENDPOINTS))
def test_no_triton_endpoint_is_admitted(kind):
    admitted = {e.path for e in EdgePolicy(clients=()).http_endpoints}
    assert not any(re.fullmatch(TRITON_HTTP_ENDPOINTS[kind], path) for path in admitted), kind


def test_the_routes_fit_the_gateway_api_crd_schema():
    objects = render_gateway_objects(EdgePolicy(clients=()), TARGET)
    assert not any(o["kind"] == "GRPCRoute" for o in objects)
    (route,) = [o for o in objects if o["kind"] == "HTTPRoute"]
    rules = route["spec"]["rules"]
    assert 1 <= len(rules) <= MAX_RULES, GATEWAY_API_SOURCE
    assert all(1 <= len(r["matches"]) <= MAX_MATCHES_PER_RULE for r in rules)
    assert sum(len(r["matches"]) for r in rules) <= MAX_MATCHES_PER_ROUTE
    for match in (m for r in rules for m in r["matches"]):
        assert match["path"]["type"] == "Exact" and match["path"]["type"] in HTTP_PATH_TYPES
        value = match["path"]["value"]
        assert value.startswith("/") and PATH_VALUE.match(value) and len(value) <= 1024
        assert not any(bad in value for bad in ("//", "/./", "/../", "#", "%2f", "%2F"))
        assert match["method"] in HTTP_METHODS
    assert rules[0]["backendRefs"] == [{"name": TARGET.service, "namespace": TARGET.service_namespace, "port": 9000}]


def test_both_renderings_admit_exactly_the_allow_list():
    policy = EdgePolicy(clients=())
    expected = sorted((e.method, f"Exact {e.path}") for e in OPENAI_ENDPOINTS)
    for summary in (gateway_summary(render_gateway_objects(policy, TARGET)), bootstrap_summary(bootstrap(policy))):
        assert summary["http_endpoints"] == expected
        assert list(summary["routes"]) == ["inference"]


def test_a_second_backend_gets_its_own_route_grant_and_limit_in_both_renderings():
    """The batch lane's shape (issue 22): prefixes to another namespace's Service, its own body limit."""
    import dataclasses

    from inference_platform.components.edge.gateway_api import Backend

    batch = RouteGroup(
        key="batch",
        endpoints=(Endpoint("POST", "/v1/files", "PathPrefix"), Endpoint("GET", "/v1/batches", "PathPrefix")),
        max_request_bytes=200 * 1024 * 1024,
    )
    policy = EdgePolicy(clients=(), extra_routes=(batch,))
    target = dataclasses.replace(
        TARGET, backends=(Backend(key="batch", service="batch-api", namespace="batch", port=8080),)
    )
    objects = render_gateway_objects(policy, target)
    names = {(o["kind"], o["metadata"]["name"], o["metadata"]["namespace"]) for o in objects}
    assert ("HTTPRoute", "inference-edge-batch", "envoy-gateway-system") in names
    assert ("BackendTrafficPolicy", "inference-edge-batch-body", "envoy-gateway-system") in names
    assert ("ReferenceGrant", "inference-edge-routes-batch", "batch") in names
    # The OpenAI route keeps its names (URNs): the new group adds, it does not rename.
    assert {("HTTPRoute", "inference-edge-http", "envoy-gateway-system"),
            ("BackendTrafficPolicy", "inference-edge-http-body", "envoy-gateway-system"),
            ("ReferenceGrant", "inference-edge-routes", "inference")} <= names  # fmt: skip
    gateway = gateway_summary(objects)
    assert gateway == bootstrap_summary(bootstrap(policy, {"batch": Upstream(address="127.0.0.1", port=4)}))
    assert gateway["routes"]["batch"] == {
        "endpoints": [("GET", "PathPrefix /v1/batches"), ("POST", "PathPrefix /v1/files")],
        "max_request_bytes": 200 * 1024 * 1024,
    }
    with pytest.raises(ValueError, match="no backend for route group"):
        render_gateway_objects(policy, TARGET)
    with pytest.raises(ValueError, match="no upstream for route group"):
        bootstrap(policy)
    with pytest.raises(ValueError, match="distinct"):
        EdgePolicy(
            clients=(), extra_routes=(RouteGroup(key="inference", endpoints=batch.endpoints, max_request_bytes=None),)
        )


@pytest.mark.parametrize(
    "path",
    [
        "/v2",
        "/v2/health/ready",
        "/v2/logging",
        "/v2/models/stats",
        "/v2/trace/setting",
        "/v2/models/ensemble/generate",
        "/v2/models/ensemble/config",
        "/v2/models/tensorrt_llm/generate_stream",
        "/v2/models/tensorrt_llm/infer",
        "/v2/repository/index",
        "/v2/repository/models/x/unload",
        "/v2/systemsharedmemory/status",
        "/v2/cudasharedmemory/status",
    ],
)
def test_each_triton_endpoint_is_outside_the_allow_list(path):
    assert triton_endpoint(path) is not None, f"{path} is no Triton endpoint in {TRITON_HTTP_SOURCE}"
    assert path not in {e.path for e in EdgePolicy(clients=()).http_endpoints}


def test_a_route_group_that_is_no_absolute_path_match_is_refused():
    for key, endpoint in (("Batch", Endpoint("GET", "/v1/files")), ("batch", Endpoint("GET", "v1/files"))):
        with pytest.raises(ValueError):
            RouteGroup(key=key, endpoints=(endpoint,), max_request_bytes=None)
