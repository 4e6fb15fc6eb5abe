"""The Gateway API / Envoy Gateway objects rendered from the edge policy: required fields of each custom
resource, every inference route under an API-key policy, and agreement with the local Envoy bootstrap
(the stand-in for Envoy Gateway's translation) on clients, limits and timeouts."""

from __future__ import annotations

import dataclasses
import json
import subprocess
from pathlib import Path

import pytest

from inference_platform.catalog.envoy_gateway_gates import (
    enabled,
    feature,
    features_used,
    filter_features,
    merged_config,
)
from inference_platform.components.edge.controller_config import cluster_controller_config, controller_values
from inference_platform.components.edge.gateway_api import gateway_summary, render_gateway_objects
from inference_platform.inferctl.serving.edge_envoy import Listener, Upstream, bootstrap_summary, render_bootstrap
from inference_platform.inferctl.serving.local_edge import envoy_binary, generate_keys
from inference_platform.settings import load_settings
from tests.components.edge.targets import TARGET as SHARED_TARGET

TAGS = {"owner": "team", "costCenter": "cc-1"}
TARGET = dataclasses.replace(SHARED_TARGET, hostname="api.dev.example.com")
EDGES = {
    "defaults": {},
    "tiers": {
        "idleTimeoutSeconds": 900,
        "auth": {"clients": {"batch": {"tier": "bulk"}, "chat": {"tier": "interactive"}, "eval": {"tier": "bulk"}}},
        "rateLimits": {
            "tiers": {
                "interactive": {"requestsPerMinute": 120, "concurrentStreams": 8},
                "bulk": {"requestsPerMinute": 30, "concurrentStreams": 2},
            }
        },
        "circuitBreaker": {"maxConnections": 64, "maxPendingRequests": 4},
    },
    "explicit-parallel": {"circuitBreaker": {"maxParallelRequests": 40}},
    "auth-off": {"auth": {"enabled": False}},
}
# Required fields of each custom resource (Gateway API v1 and Envoy Gateway v1alpha1 CRD schemas).
REQUIRED = {
    "Gateway": [("spec", "gatewayClassName"), ("spec", "listeners")],
    "EnvoyProxy": [("spec", "provider", "type")],
    "ReferenceGrant": [("spec", "from"), ("spec", "to")],
    "HTTPRoute": [("spec", "parentRefs"), ("spec", "rules")],
    "SecurityPolicy": [("spec", "targetRefs"), ("spec", "apiKeyAuth", "credentialRefs"), ("spec", "apiKeyAuth")],
    "BackendTrafficPolicy": [("spec", "targetRefs")],
    "ClientTrafficPolicy": [("spec", "targetRefs")],
    "EnvoyExtensionPolicy": [("spec", "targetRefs"), ("spec", "lua")],
}
LISTENER_FIELDS = ("name", "port", "protocol")
BACKEND_REF_FIELDS = ("name", "port")


def policy(edge):
    return load_settings({"tags": TAGS, "edge": edge}, project="p", stack="s", region="us-west-2").edge.policy()


def bootstrap(pol, tmp: Path = Path("/nonexistent"), **more):
    more.setdefault("controller", cluster_controller_config(pol))
    return render_bootstrap(
        pol,
        keys=generate_keys(pol),
        listener=Listener(
            address="127.0.0.1",
            port=8443,
            certificate=tmp / "server.pem",
            private_key=tmp / "server.key",
            admin_port=9901,
            access_log=tmp / "access.log",
        ),
        upstream=Upstream(address="127.0.0.1", port=9000),
        **more,
    )


@pytest.mark.parametrize("case", sorted(EDGES))
def test_both_renderings_agree_on_clients_limits_and_timeouts(case):
    pol = policy(EDGES[case])
    gateway = gateway_summary(render_gateway_objects(pol, TARGET))
    envoy = bootstrap_summary(bootstrap(pol))
    assert gateway == envoy
    assert envoy["requests_per_minute"] == pol.limits()
    assert envoy["stream_idle_timeout"] == f"{pol.idle_timeout_seconds}s"
    # Issue 28 R6: the ALB's connections outlive its idle timeout at the proxy (AWS: else occasional 502s).
    assert int(envoy["downstream_idle_timeout"].removesuffix("s")) > pol.idle_timeout_seconds
    assert envoy["route_timeouts"] == ["0s"]  # no whole-request clock (Envoy's default is 15 s)
    assert envoy["retry_on"] == ["connect-failure,reset-before-request"]
    # Issue 18 §4: the OpenAI route's bodies limited, slow headers timed out.
    assert envoy["routes"]["inference"]["max_request_bytes"] == pol.max_request_bytes
    assert envoy["request_headers_timeout"] == f"{pol.request_headers_timeout_seconds}s"
    # Ambiguous credentials (two keys, in either header) refused before authentication, by the same script.
    assert envoy["credential_lua"] == pol.credential_lua
    assert envoy["credential_lua_before_auth"] is pol.auth_enabled
    # Issue 20: the key read from the configured header, then Authorization, and stripped either way.
    if pol.auth_enabled:
        assert envoy["credential_headers"] == ["x-api-key", "authorization"]
        assert envoy["credentials_stripped"] is True and envoy["secured_routes"] == ["inference"]


@pytest.mark.parametrize("max_input_tokens", [2048, 8192, 131_072])
def test_both_renderings_agree_on_the_body_limit_of_the_stacks_max_input_len(max_input_tokens):
    settings = load_settings({"tags": TAGS}, project="p", stack="s", region="us-west-2")
    pol = settings.edge.policy(max_input_tokens=max_input_tokens)
    gateway = gateway_summary(render_gateway_objects(pol, TARGET))
    assert gateway == bootstrap_summary(bootstrap(pol))
    assert gateway["routes"]["inference"]["max_request_bytes"] == max_input_tokens * 32 + 65_536


def test_tiers_give_each_client_its_tier_limit_and_size_the_parallel_budget():
    summary = gateway_summary(render_gateway_objects(policy(EDGES["tiers"]), TARGET))
    assert summary["requests_per_minute"] == {"batch": 30, "chat": 120, "eval": 30}
    assert summary["max_parallel_requests"] == 2 + 8 + 2
    assert summary["stream_idle_timeout"] == "900s" and summary["max_pending_requests"] == 4


@pytest.mark.parametrize("case", sorted(EDGES))
def test_custom_resources_have_their_required_fields(case):
    objects = render_gateway_objects(policy(EDGES[case]), TARGET)
    for obj in objects:
        assert obj["apiVersion"] and obj["metadata"]["name"]
        expected_ns = "inference" if obj["kind"] == "ReferenceGrant" else "envoy-gateway-system"
        assert obj["metadata"]["namespace"] == expected_ns
        for path in REQUIRED[obj["kind"]]:
            node = obj
            for part in path:
                assert part in node, f"{obj['kind']} {obj['metadata']['name']}: {'.'.join(path)} missing"
                node = node[part]
            assert node not in (None, [], {}, ""), f"{obj['kind']}: {'.'.join(path)} empty"
        for ref in obj["spec"].get("targetRefs", []):
            assert set(ref) == {"group", "kind", "name"}
    gateway = next(o for o in objects if o["kind"] == "Gateway")
    for listener in gateway["spec"]["listeners"]:
        assert all(listener.get(f) for f in LISTENER_FIELDS)
    for route in (o for o in objects if o["kind"].endswith("Route")):
        for rule in route["spec"]["rules"]:
            assert all(all(ref.get(f) for f in BACKEND_REF_FIELDS) for ref in rule["backendRefs"])


def test_every_inference_route_has_an_api_key_policy_and_never_the_key_in_a_manifest():
    pol = policy({})
    objects = render_gateway_objects(pol, TARGET)
    routes = {(o["kind"], o["metadata"]["name"]) for o in objects if o["kind"].endswith("Route")}
    assert routes == {("HTTPRoute", "inference-edge-http")}
    security = next(o for o in objects if o["kind"] == "SecurityPolicy")["spec"]
    assert {(r["kind"], r["name"]) for r in security["targetRefs"]} == routes
    assert security["apiKeyAuth"]["sanitize"] is True
    assert security["apiKeyAuth"]["extractFrom"] == [{"headers": ["x-api-key", "authorization"]}]
    assert security["apiKeyAuth"]["credentialRefs"] == [{"group": "", "kind": "Secret", "name": "inference-api-keys"}]
    keys = generate_keys(pol)
    assert not any(key in json.dumps(objects) for key in keys.values())


def test_without_auth_there_is_no_security_policy_and_no_per_client_limit():
    objects = render_gateway_objects(policy(EDGES["auth-off"]), TARGET)
    kinds = [o["kind"] for o in objects]
    assert "SecurityPolicy" not in kinds
    assert "rateLimit" not in next(o for o in objects if o["kind"] == "BackendTrafficPolicy")["spec"]


def test_the_real_envoy_accepts_the_rendered_bootstrap(tmp_path):
    from inference_platform.inferctl.serving.edge_tls import write_local_certificates

    certs = write_local_certificates(tmp_path / "tls")
    for case in sorted(EDGES):
        config = bootstrap(policy(EDGES[case]), tmp_path)
        listener = config["static_resources"]["listeners"][0]
        tls = listener["filter_chains"][0]["transport_socket"]["typed_config"]["common_tls_context"]
        tls["tls_certificates"] = [
            {
                "certificate_chain": {"filename": str(certs.certificate)},
                "private_key": {"filename": str(certs.private_key)},
            }
        ]
        path = tmp_path / f"{case}.json"
        path.write_text(json.dumps(config))
        result = subprocess.run(
            [str(envoy_binary()), "--mode", "validate", "-c", str(path), "--disable-hot-restart"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert result.returncode == 0 and "OK" in result.stdout, (case, result.stdout[-2000:], result.stderr[-2000:])


def test_a_client_without_a_key_is_refused():
    pol = policy({})
    with pytest.raises(ValueError, match="no API key for client"):
        render_bootstrap(
            pol,
            keys={},
            listener=Listener(
                address="127.0.0.1",
                port=1,
                certificate=Path("c"),
                private_key=Path("k"),
                admin_port=2,
                access_log=Path("a"),
            ),
            upstream=Upstream(address="127.0.0.1", port=3),
            controller=cluster_controller_config(pol),
        )


def _features(pol):
    hcm = bootstrap(pol)["static_resources"]["listeners"][0]["filter_chains"][0]["filters"][0]["typed_config"]
    return filter_features(f["name"] for f in hcm["http_filters"])


@pytest.mark.parametrize("case", sorted(EDGES))
def test_the_local_envoy_runs_only_features_the_clusters_controller_enables(case):
    """Issue 28 R12: the local bootstrap's gated filters are the Gateway objects' features, and the controller
    values the cluster installs enable each (the local proof and the cluster cannot part ways on Lua again)."""
    pol = policy(EDGES[case])
    objects = render_gateway_objects(pol, TARGET)
    local = _features(pol)
    # The local stand-in runs the request limits as local_ratelimit, and the token limits (issue 30) as global
    # limits against the rate-limit service's stand-in: the rest must be the same features.
    assert local == features_used(objects) - (set() if pol.metered else {"global rate limit"})
    config = merged_config(controller_values("r:6379", features=features_used(objects))["config"]["envoyGateway"])
    assert all(enabled(feature(name), config) for name in local)


def test_the_local_envoy_refuses_lua_the_controller_leaves_off():
    pol = policy({})
    assert pol.credential_lua is not None
    # What the gateway's values held before issue 28: the chart's extensionApis {} (Lua off in v1.9.0).
    old = {"rateLimit": {"backend": {"type": "Redis", "redis": {"url": "r:6379"}}, "failClosed": True}}
    with pytest.raises(ValueError, match=r"would refuse this edge: Lua \(envoy.filters.http.lua\) is off.*HTTP 500"):
        bootstrap(pol, controller=old)
    with pytest.raises(ValueError, match="must not have the same value"):
        bootstrap(pol, controller={"extensionApis": {"enableLua": True, "disableLua": True}})
    bootstrap(pol, controller={"extensionApis": {"enableLua": True}, "rateLimit": old["rateLimit"]})
    # Without authentication there is no Lua, and nothing to enable.
    bootstrap(policy(EDGES["auth-off"]), controller=old)
