"""The public API surface (issue 17 §7): what the edge admits, checked against the upstream facts it relies on.

Upstream facts, each read at the version this project pins:

- Triton 25.05 (``triton-inference-server/server`` branch ``r25.05``, ``src/http_server.cc``,
  ``HTTPAPIServer::Handle`` and the endpoint patterns of its constructor): the HTTP endpoints below,
  matched on the request path without its query string. ``/v2/logging`` reads and sets the log
  settings, ``/v2/models/stats`` every model's statistics, ``/v2/trace/setting`` the trace settings,
  ``/v2/repository/...`` the index and load/unload, ``/v2/{system,cuda}sharedmemory/...`` shared memory.
- Triton 25.05 gRPC (``triton-inference-server/common`` branch ``r25.05``,
  ``protobuf/grpc_service.proto``): the 20 methods of ``inference.GRPCInferenceService``; the model is a
  field of each request message, never part of the path.
- Gateway API v1.6.1, the bundle Envoy Gateway v1.9.0 installs (``envoyproxy/gateway`` tag ``v1.9.0``,
  ``charts/gateway-helm/charts/crds/crds/gatewayapi-crds.yaml``, ``go.mod``): HTTPRoute path match types
  ``Exact`` | ``PathPrefix`` | ``RegularExpression``; a rule's matches default to ``PathPrefix /``; at
  most 16 rules, 64 matches per rule and fewer than 128 matches per route; Exact/PathPrefix values
  start with ``/`` and use the characters of the CRD's pattern; ``method`` is one of the nine HTTP
  methods. GRPCRoute method matches are ``Exact`` (default) or ``RegularExpression``.
- Envoy Gateway v1.9.0 translation (``internal/gatewayapi/route.go``): an HTTPRoute ``Exact`` match is
  an exact path match and ``method`` a ``:method`` header match; a GRPCRoute ``Exact`` match with service
  and method is the exact path ``/<service>/<method>``, with the service only a prefix ``/<service>``
  (every method). ``internal/xds/translator/listener.go`` always sets ``normalize_path`` (RFC 3986),
  like the local Envoy, so the path matched is the path Triton receives.
"""

from __future__ import annotations

import re

import pytest
from inference_platform.components.edge.gateway_api import gateway_summary, render_gateway_objects
from inference_platform.components.edge.policy import (
    GRPC_SERVICE,
    PUBLIC_MODELS,
    EdgePolicy,
    public_grpc_paths,
    public_http_endpoints,
)
from inference_platform.inferctl.serving.edge_envoy import Listener, Upstream, bootstrap_summary, render_bootstrap

from tests.components.edge.targets import TARGET

TRITON_HTTP_SOURCE = "triton-inference-server/server r25.05 src/http_server.cc"
TRITON_GRPC_SOURCE = "triton-inference-server/common r25.05 protobuf/grpc_service.proto"
GATEWAY_API_SOURCE = "envoyproxy/gateway v1.9.0 charts/gateway-helm/charts/crds/crds/gatewayapi-crds.yaml (v1.6.1)"

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
CLIENT_NEEDS = {"server health", "model metadata", "model inference", "model ready"}
TRITON_GRPC_METHODS = (
    "ServerLive", "ServerReady", "ModelReady", "ServerMetadata", "ModelMetadata", "ModelInfer",
    "ModelStreamInfer", "ModelConfig", "ModelStatistics", "RepositoryIndex", "RepositoryModelLoad",
    "RepositoryModelUnload", "SystemSharedMemoryStatus", "SystemSharedMemoryRegister",
    "SystemSharedMemoryUnregister", "CudaSharedMemoryStatus", "CudaSharedMemoryRegister",
    "CudaSharedMemoryUnregister", "TraceSetting", "LogSettings",
)  # fmt: skip
HTTP_PATH_TYPES = ("Exact", "PathPrefix", "RegularExpression")
HTTP_METHODS = ("GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH")
MAX_RULES, MAX_MATCHES_PER_RULE, MAX_MATCHES_PER_ROUTE = 16, 64, 127
PATH_VALUE = re.compile(r"^(?:[-A-Za-z0-9/._~!$&'()*+,;=:@]|[%][0-9a-fA-F]{2})+$")
GRPC_SERVICE_NAME = re.compile(r"^\.?[a-z_][a-z_0-9]*(\.[a-z_][a-z_0-9]*)*$", re.IGNORECASE)
GRPC_METHOD_NAME = re.compile(r"^[A-Za-z_][A-Za-z_0-9]*$")
INTERNAL_MODELS = ("tensorrt_llm", "preprocessing", "postprocessing")


def triton_endpoint(path: str) -> str | None:
    """Which Triton r25.05 endpoint serves ``path`` (None: Triton's own 404)."""
    # Handle() tries the exact /v2/models/stats and /v2/logging first, then the model pattern.
    for kind in ("all model statistics", "logging", *TRITON_HTTP_ENDPOINTS):
        if re.fullmatch(TRITON_HTTP_ENDPOINTS[kind], path):
            return kind
    return None


def bootstrap(policy: EdgePolicy) -> dict:
    return render_bootstrap(
        policy,
        keys={},
        listener=Listener(
            address="127.0.0.1", port=1, certificate=None, private_key=None, admin_port=2, access_log=None
        ),
        upstream=Upstream(address="127.0.0.1", http_port=3, grpc_port=4),
    )


def test_every_admitted_http_endpoint_is_an_inference_or_health_endpoint_of_a_public_model():
    endpoints = public_http_endpoints()
    assert {triton_endpoint(e.path) for e in endpoints} == CLIENT_NEEDS, TRITON_HTTP_SOURCE
    for e in endpoints:
        model = e.path.split("/")[3] if e.path.startswith("/v2/models/") else None
        assert model in (None, *PUBLIC_MODELS)
        # Inference is POST; metadata, readiness and health are GET (KServe v2).
        assert e.method == ("POST" if triton_endpoint(e.path) == "model inference" else "GET")
    assert not any(model in e.path.split("/") for e in endpoints for model in INTERNAL_MODELS)
    # No versioned paths: clients call the served version.
    assert not any("/versions/" in e.path for e in endpoints)


def test_admitted_grpc_methods_are_grpc_service_methods_and_the_rest_are_refused():
    admitted = {p.rsplit("/", 1)[1] for p in public_grpc_paths()}
    assert len(TRITON_GRPC_METHODS) == 20 and admitted <= set(TRITON_GRPC_METHODS), TRITON_GRPC_SOURCE
    assert admitted == {"ModelInfer", "ModelStreamInfer", "ModelMetadata", "ModelReady", "ServerLive", "ServerReady"}
    assert all(p.startswith(f"/{GRPC_SERVICE}/") for p in public_grpc_paths())


def test_the_routes_fit_the_gateway_api_crd_schema():
    objects = {o["kind"]: o for o in render_gateway_objects(EdgePolicy(clients=()), TARGET)}
    for kind in ("HTTPRoute", "GRPCRoute"):
        rules = objects[kind]["spec"]["rules"]
        assert 1 <= len(rules) <= MAX_RULES, GATEWAY_API_SOURCE
        assert all(1 <= len(r["matches"]) <= MAX_MATCHES_PER_RULE for r in rules)
        assert sum(len(r["matches"]) for r in rules) <= MAX_MATCHES_PER_ROUTE
    for match in (m for r in objects["HTTPRoute"]["spec"]["rules"] for m in r["matches"]):
        assert match["path"]["type"] == "Exact" and match["path"]["type"] in HTTP_PATH_TYPES
        value = match["path"]["value"]
        assert value.startswith("/") and PATH_VALUE.match(value) and len(value) <= 1024
        assert not any(bad in value for bad in ("//", "/./", "/../", "#", "%2f", "%2F"))
        assert match["method"] in HTTP_METHODS
    for match in (m for r in objects["GRPCRoute"]["spec"]["rules"] for m in r["matches"]):
        method = match["method"]
        assert method["type"] == "Exact" and method["service"] and method["method"]
        assert GRPC_SERVICE_NAME.match(method["service"]) and GRPC_METHOD_NAME.match(method["method"])


def test_both_renderings_admit_exactly_the_allow_list():
    policy = EdgePolicy(clients=())
    expected_http = sorted((e.method, f"Exact {e.path}") for e in public_http_endpoints())
    expected_grpc = sorted(f"Exact {p}" for p in public_grpc_paths())
    for summary in (gateway_summary(render_gateway_objects(policy, TARGET)), bootstrap_summary(bootstrap(policy))):
        assert summary["http_endpoints"] == expected_http
        assert summary["grpc_paths"] == expected_grpc


@pytest.mark.parametrize(
    "path",
    [
        "/v2",
        "/v2/logging",
        "/v2/models/stats",
        "/v2/trace/setting",
        "/v2/models/ensemble/trace/setting",
        "/v2/models/ensemble/config",
        "/v2/models/ensemble/stats",
        "/v2/models/ensemble/versions/1/generate",
        "/v2/models/tensorrt_llm/generate",
        "/v2/models/tensorrt_llm/infer",
        "/v2/models/preprocessing",
        "/v2/repository/index",
        "/v2/repository/models/x/unload",
        "/v2/repository/models/x/load",
        "/v2/systemsharedmemory/status",
        "/v2/systemsharedmemory/region/r/register",
        "/v2/cudasharedmemory/status",
    ],
)
def test_each_other_triton_endpoint_is_outside_the_allow_list(path):
    assert triton_endpoint(path) is not None, f"{path} is no Triton endpoint in {TRITON_HTTP_SOURCE}"
    assert path not in {e.path for e in public_http_endpoints()}


def test_a_model_name_that_cannot_be_a_path_segment_is_refused():
    for bad in ("", "a/b", " ensemble"):
        with pytest.raises(ValueError, match="cannot be part of a path"):
            public_http_endpoints((bad,))
