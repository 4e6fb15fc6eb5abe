"""Public route rules (issue 17 §7, issue 20): a route toward inference admits only the edge policy's exact
OpenAI endpoints with their methods; a path prefix (``/`` or ``/v1``), a regex, a defaulted match, a KServe v2
path or any GRPCRoute fails."""

from __future__ import annotations

import pulumi_kubernetes as k8s
import pytest

from inference_platform.catalog.edge_policy import EdgePolicy
from inference_platform.components.edge.gateway_api import GatewayTarget, render_gateway_objects

RULE = "public-routes-allow-listed"
TARGET = GatewayTarget(
    namespace="envoy-gateway-system",
    name="edge",
    service="triton",
    service_namespace="inference",
    port=9000,
    credentials_secret="keys",
)
BACKEND = {"name": "triton", "namespace": "inference", "port": 9000}
GRPC_SERVICE = "inference.GRPCInferenceService"


def _route(kind, rules, name="edge-route", namespace="envoy-gateway-system"):
    def program():
        k8s.apiextensions.CustomResource(
            name, api_version="gateway.networking.k8s.io/v1", kind=kind,
            metadata={"name": name, "namespace": namespace},
            spec={"parentRefs": [{"name": "edge"}], "rules": rules},
        )  # fmt: skip

    return program


def _rendered():
    def program():
        for obj in render_gateway_objects(EdgePolicy(clients=()), TARGET):
            if obj["kind"] in ("HTTPRoute", "GRPCRoute"):
                k8s.apiextensions.CustomResource(
                    obj["metadata"]["name"], api_version=obj["apiVersion"], kind=obj["kind"],
                    metadata=obj["metadata"], spec=obj["spec"],
                )  # fmt: skip

    return program


def test_the_rendered_routes_pass(violations):
    assert violations(_rendered(), RULE) == []


def test_exact_public_endpoints_pass(violations):
    rules = [
        {
            "matches": [
                {"path": {"type": "Exact", "value": "/v1/chat/completions"}, "method": "POST"},
                {"path": {"type": "Exact", "value": "/v1/models"}, "method": "GET"},
                {"path": {"type": "Exact", "value": "/health"}, "method": "GET"},
                {"path": {"type": "Exact", "value": "/v1/models/meta-llama/Llama-3.1-8B"}, "method": "GET"},
            ],
            "backendRefs": [BACKEND],
        }
    ]
    assert violations(_route("HTTPRoute", rules), RULE) == []


def test_a_route_elsewhere_is_not_judged(violations):
    rules = [
        {"matches": [{"path": {"type": "PathPrefix", "value": "/"}}], "backendRefs": [{"name": "docs", "port": 80}]}
    ]
    assert violations(_route("HTTPRoute", rules, namespace="tools"), RULE) == []


@pytest.mark.parametrize(
    ("matches", "words"),
    [
        ([{"path": {"type": "PathPrefix", "value": "/v1"}}], "PathPrefix /v1 admits paths beyond the public API"),
        ([{"path": {"type": "PathPrefix", "value": "/"}}], "PathPrefix / admits paths beyond"),
        ([{"path": {"value": "/v1/models"}}], "PathPrefix /v1/models admits"),  # the type defaults to PathPrefix
        ([{"path": {"type": "RegularExpression", "value": "/v1/.*"}}], "RegularExpression /v1/.* admits"),
        ([{"method": "POST"}], "PathPrefix / admits"),  # a match without a path is PathPrefix /
        (None, "PathPrefix / admits"),  # a rule without matches is PathPrefix /
        # KServe v2 stays internal, its inference endpoints first of all (they reach every model).
        ([{"path": {"type": "Exact", "value": "/v2/health/ready"}}], "Exact /v2/health/ready is not a public"),
        ([{"path": {"type": "Exact", "value": "/v2/models/tensorrt_llm/generate"}}], "is not a public endpoint"),
        (
            [{"path": {"type": "Exact", "value": "/v1/chat/completions"}}],
            "admits method any; the public API takes POST",
        ),
        ([{"path": {"type": "Exact", "value": "/v1/models"}, "method": "DELETE"}], "admits method DELETE"),
        ([{"path": {"type": "Exact", "value": "/v1/models/x"}, "method": "POST"}], "admits method POST"),
        ([{"path": {"type": "Exact", "value": "/v1/models/a/../v2"}, "method": "GET"}], "is not a public endpoint"),
    ],
)
def test_an_http_route_admitting_more_than_the_public_api_fails(violations, matches, words):
    rule = {"backendRefs": [BACKEND], **({"matches": matches} if matches is not None else {})}
    (found,) = violations(_route("HTTPRoute", [rule]), RULE)
    assert "HTTPRoute envoy-gateway-system/edge-route" in found.message and words in found.message, found.message


@pytest.mark.parametrize(
    "matches",
    [
        [{"method": {"type": "Exact", "service": GRPC_SERVICE}}],
        [{"method": {"type": "RegularExpression", "service": GRPC_SERVICE, "method": ".*"}}],
        None,
        [{"method": {"service": GRPC_SERVICE, "method": "ModelStreamInfer"}}],
        [{"method": {"service": GRPC_SERVICE, "method": "ServerReady"}}],
    ],
)
def test_any_grpc_route_toward_inference_fails(violations, matches):
    rule = {"backendRefs": [BACKEND], **({"matches": matches} if matches is not None else {})}
    (found,) = violations(_route("GRPCRoute", [rule]), RULE)
    assert "GRPCRoute envoy-gateway-system/edge-route: gRPC toward inference is Triton's KServe v2 API" in found.message
