"""Public route rules (issue 17 §7): a route toward inference admits only the edge policy's exact public
endpoints; a path prefix (``/`` or ``/v2``), a regex, a defaulted match or a service-wide gRPC match fails."""

from __future__ import annotations

import pulumi_kubernetes as k8s
import pytest
from inference_platform.components.edge.gateway_api import GatewayTarget, render_gateway_objects
from inference_platform.components.edge.policy import GRPC_SERVICE, EdgePolicy

RULE = "public-routes-allow-listed"
TARGET = GatewayTarget(
    namespace="envoy-gateway-system",
    name="edge",
    service="triton",
    service_namespace="inference",
    http_port=8000,
    grpc_port=8001,
    credentials_secret="keys",
)
BACKEND = {"name": "triton", "namespace": "inference", "port": 8000}


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
                {"path": {"type": "Exact", "value": "/v2/models/ensemble/generate_stream"}, "method": "POST"},
                {"path": {"type": "Exact", "value": "/v2/health/ready"}},
            ],
            "backendRefs": [BACKEND],
        }
    ]
    assert violations(_route("HTTPRoute", rules), RULE) == []
    grpc = [
        {"matches": [{"method": {"service": GRPC_SERVICE, "method": "ModelStreamInfer"}}], "backendRefs": [BACKEND]}
    ]
    assert violations(_route("GRPCRoute", grpc), RULE) == []


def test_a_route_elsewhere_is_not_judged(violations):
    rules = [
        {"matches": [{"path": {"type": "PathPrefix", "value": "/"}}], "backendRefs": [{"name": "docs", "port": 80}]}
    ]
    assert violations(_route("HTTPRoute", rules, namespace="tools"), RULE) == []


@pytest.mark.parametrize(
    ("matches", "words"),
    [
        ([{"path": {"type": "PathPrefix", "value": "/v2"}}], "PathPrefix /v2 admits paths beyond the public API"),
        ([{"path": {"type": "PathPrefix", "value": "/"}}], "PathPrefix / admits paths beyond"),
        ([{"path": {"value": "/v2/models"}}], "PathPrefix /v2/models admits"),  # the type defaults to PathPrefix
        ([{"path": {"type": "RegularExpression", "value": "/v2/models/.*"}}], "RegularExpression /v2/models/.* admits"),
        ([{"method": "POST"}], "PathPrefix / admits"),  # a match without a path is PathPrefix /
        (None, "PathPrefix / admits"),  # a rule without matches is PathPrefix /
        ([{"path": {"type": "Exact", "value": "/v2/logging"}}], "Exact /v2/logging is not a public endpoint"),
        ([{"path": {"type": "Exact", "value": "/v2/models/tensorrt_llm/generate"}}], "is not a public endpoint"),
    ],
)
def test_an_http_route_admitting_more_than_the_public_api_fails(violations, matches, words):
    rule = {"backendRefs": [BACKEND], **({"matches": matches} if matches is not None else {})}
    (found,) = violations(_route("HTTPRoute", [rule]), RULE)
    assert "HTTPRoute envoy-gateway-system/edge-route" in found.message and words in found.message, found.message


@pytest.mark.parametrize(
    ("matches", "words"),
    [
        ([{"method": {"type": "Exact", "service": GRPC_SERVICE}}], f"service {GRPC_SERVICE} method * admits"),
        ([{"method": {"type": "RegularExpression", "service": GRPC_SERVICE, "method": ".*"}}], "RegularExpression"),
        (None, "a match without a method admits every gRPC method"),
        ([{"method": {"service": GRPC_SERVICE, "method": "LogSettings"}}], "LogSettings is not a public gRPC method"),
        ([{"method": {"service": GRPC_SERVICE, "method": "RepositoryModelUnload"}}], "is not a public gRPC method"),
    ],
)
def test_a_grpc_route_admitting_more_than_the_public_methods_fails(violations, matches, words):
    rule = {"backendRefs": [BACKEND], **({"matches": matches} if matches is not None else {})}
    (found,) = violations(_route("GRPCRoute", [rule]), RULE)
    assert "GRPCRoute envoy-gateway-system/edge-route" in found.message and words in found.message, found.message


def test_the_allowed_models_are_configurable(violations):
    rules = [{"matches": [{"path": {"type": "Exact", "value": "/v2/models/chat/generate"}}], "backendRefs": [BACKEND]}]
    assert len(violations(_route("HTTPRoute", rules), RULE)) == 1
    assert violations(_route("HTTPRoute", rules), RULE, {"publicModels": ["chat"]}) == []
