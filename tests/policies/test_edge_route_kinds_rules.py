"""Gateway API routes of every version and kind toward inference (issue 18 §3, issue 20): v1beta1 HTTPRoute
is allow-listed and must be authenticated like v1; a GRPCRoute of any version toward inference is refused
(KServe v2 is internal); TCPRoute, TLSRoute (v1alpha2, v1alpha3) and UDPRoute toward inference are refused;
a SecurityPolicy's apiKeyAuth without credentialRefs, extractFrom or sanitize authenticates no one."""

from __future__ import annotations

import pulumi_kubernetes as k8s
import pytest

GROUP = "gateway.networking.k8s.io"
BACKEND = {"name": "triton", "namespace": "inference", "port": 8000}
EXACT = [{"matches": [{"path": {"type": "Exact", "value": "/health"}, "method": "GET"}], "backendRefs": [BACKEND]}]
PREFIX = [{"matches": [{"path": {"type": "PathPrefix", "value": "/"}}], "backendRefs": [BACKEND]}]
GRPC_EXACT = [{"matches": [{"method": {"service": "inference.GRPCInferenceService", "method": "ServerLive"}}],
               "backendRefs": [BACKEND]}]  # fmt: skip
GRPC_SERVICE_WIDE = [{"matches": [{"method": {"service": "inference.GRPCInferenceService"}}], "backendRefs": [BACKEND]}]
CONNECTION = [{"backendRefs": [BACKEND]}]
API_KEY = {"credentialRefs": [{"name": "keys"}], "extractFrom": [{"headers": ["x-api-key"]}], "sanitize": True}


def _program(routes, api_key=API_KEY):
    """routes: (version, kind, rules); one SecurityPolicy targets them all."""

    def program():
        targets = []
        for i, (version, kind, rules) in enumerate(routes):
            name = f"{kind.lower()}-{version}-{i}"
            k8s.apiextensions.CustomResource(
                name, api_version=f"{GROUP}/{version}", kind=kind,
                metadata={"name": name, "namespace": "envoy-gateway-system"},
                spec={"parentRefs": [{"name": "edge"}], "rules": rules},
            )  # fmt: skip
            targets.append({"group": GROUP, "kind": kind, "name": name})
        spec = {"targetRefs": targets, "apiKeyAuth": api_key} if api_key is not None else {"targetRefs": targets}
        k8s.apiextensions.CustomResource(
            "security", api_version="gateway.envoyproxy.io/v1alpha1", kind="SecurityPolicy",
            metadata={"name": "edge-api-keys", "namespace": "envoy-gateway-system"}, spec=spec,
        )  # fmt: skip

    return program


OLDER_VERSIONS = [("v1beta1", "HTTPRoute", EXACT), ("v1alpha2", "GRPCRoute", GRPC_EXACT)]


def test_older_versions_authenticated_pass_and_only_the_http_route_is_allow_listed(violations):
    program = _program(OLDER_VERSIONS)
    (found,) = violations(program, "public-routes-allow-listed")
    assert found.message.startswith("GRPCRoute envoy-gateway-system/grpcroute-v1alpha2-1: gRPC toward inference")
    assert violations(program, "inference-routes-authenticated") == []


@pytest.mark.parametrize("version", ["v1", "v1alpha2"])
def test_a_grpc_route_toward_inference_fails_even_naming_one_method(violations, version):
    (found,) = violations(_program([(version, "GRPCRoute", GRPC_EXACT)]), "public-routes-allow-listed")
    assert "Triton's KServe v2 API, internal" in found.message


def test_older_versions_with_prefixes_fail(violations):
    found = violations(_program([("v1beta1", "HTTPRoute", PREFIX), ("v1alpha2", "GRPCRoute", GRPC_SERVICE_WIDE)]),
                       "public-routes-allow-listed")  # fmt: skip
    assert sorted(v.message.split(":")[0] for v in found) == [
        "GRPCRoute envoy-gateway-system/grpcroute-v1alpha2-1",
        "HTTPRoute envoy-gateway-system/httproute-v1beta1-0",
    ]


@pytest.mark.parametrize(
    ("version", "kind"),
    [("v1alpha2", "TCPRoute"), ("v1alpha2", "TLSRoute"), ("v1alpha3", "TLSRoute"), ("v1alpha2", "UDPRoute")],
)
def test_connection_routes_toward_inference_fail(violations, version, kind):
    (found,) = violations(_program([(version, kind, CONNECTION)]), "public-routes-allow-listed")
    assert f"a {kind} forwards whole connections to inference" in found.message
    # Without a SecurityPolicy aimed at them they are unauthenticated too.
    (found,) = violations(_program([(version, kind, CONNECTION)], api_key=None), "inference-routes-authenticated")
    assert f"{kind} envoy-gateway-system/" in found.message


def test_connection_routes_elsewhere_pass(violations):
    elsewhere = [{"backendRefs": [{"name": "dns", "namespace": "kube-system", "port": 53}]}]
    program = _program([("v1alpha2", "UDPRoute", elsewhere), ("v1alpha3", "TLSRoute", elsewhere)])
    assert violations(program, "public-routes-allow-listed") == []


@pytest.mark.parametrize(
    ("api_key", "words"),
    [({"extractFrom": [{"headers": ["x-api-key"]}]}, "apiKeyAuth has no credentialRefs"),
     ({"credentialRefs": [], "extractFrom": [{"headers": ["x-api-key"]}]}, "apiKeyAuth has no credentialRefs"),
     ({"credentialRefs": [{"name": "keys"}]}, "apiKeyAuth has no extractFrom"),
     ({"credentialRefs": [{"name": "keys"}], "extractFrom": [{"headers": ["x-api-key"]}]}, "apiKeyAuth without sanitize"),
     ({"credentialRefs": [{"name": "keys"}], "extractFrom": [{"headers": ["authorization"]}], "sanitize": False},
      "apiKeyAuth without sanitize: true forwards the client's key")],
)  # fmt: skip
def test_api_key_auth_without_credentials_fails(violations, api_key, words):
    found = violations(_program(OLDER_VERSIONS, api_key=api_key), "inference-routes-authenticated")
    messages = [v.message for v in found]
    assert any(m.startswith("SecurityPolicy envoy-gateway-system/edge-api-keys: " + words) for m in messages)
    # ... and the routes it names count as unauthenticated.
    assert sum("reaches inference without an authentication SecurityPolicy" in m for m in messages) == 2
