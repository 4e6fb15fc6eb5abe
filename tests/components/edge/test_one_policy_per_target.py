"""One Envoy Gateway policy of a kind per target (catalog/envoy_gateway_policies.py): the upstream check pinned in
tests/data/upstream/envoy_gateway_one_policy_per_target.json (envoyproxy/gateway@v1.9.0, each message with its file
and line), refused by the plan summary and the local edge, and the edge rendered so every route has one
EnvoyExtensionPolicy whose ``lua`` list runs the features in the order they need."""

from __future__ import annotations

import copy
import dataclasses
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from inference_platform.catalog.edge_policy import INFERENCE_ROUTES
from inference_platform.catalog.envoy_gateway_policies import POLICY_KINDS, SOURCE, UPSTREAM, conflict_problems
from inference_platform.components.batch.edge_routes import ROUTE_KEY, route_group
from inference_platform.components.edge.gateway_api import Backend, gateway_summary, render_gateway_objects
from inference_platform.components.edge.model_routing import ModelBackend, ModelRoute, ModelRouting, with_model_routing
from inference_platform.components.edge.token_metering import metering_lua
from inference_platform.inferctl.serving.edge_envoy import Upstream, bootstrap_summary
from inference_platform.inferctl.serving.edge_models import with_model_routing as local_model_routing
from inference_platform.settings import load_settings
from tests.components.edge.targets import TARGET
from tests.components.edge.test_gateway_api import bootstrap

FACTS = json.loads(
    (Path(__file__).parents[2] / "data" / "upstream" / "envoy_gateway_one_policy_per_target.json").read_text()
)[UPSTREAM]
MIRROR = Path("/work/.mirror/envoyproxy+gateway/repo")
GROUP = "gateway.networking.k8s.io"
HTTP = f"{TARGET.name}-http"
BATCH = f"{TARGET.name}-{ROUTE_KEY}"
CLIENTS = {"auth": {"clients": {"a": {"tier": "t"}}}, "rateLimits": {"tiers": {"t": {"requestsPerMinute": 60}}}}
ROUTING = ModelRouting(
    models=(
        ModelRoute(
            name="m",
            current=ModelBackend(service="triton", namespace="inference", port=9000),
            canary=ModelBackend(service="triton-v2", namespace="inference", port=9000),
            canary_weight=10,
        ),
    ),
    aliases={"alias": "m"},
)


def _policy(mode: str, *, batch: bool = False):
    edge: dict[str, Any] = {"routing": {"mode": mode}, **CLIENTS}
    settings = load_settings({"tags": {"owner": "t", "costCenter": "c"}, "edge": edge}, project="p", stack="s",
                             region="us-west-2")  # fmt: skip
    pol = settings.edge.policy()
    assert pol.metered and pol.auth_enabled
    return dataclasses.replace(pol, extra_routes=(route_group(),)) if batch else pol


def _target(batch: bool):
    backends = (Backend(key=ROUTE_KEY, service="batch-api", namespace="batch", port=8000),) if batch else ()
    return dataclasses.replace(TARGET, backends=backends)


def _policy_object(kind: str, name: str, refs: list[dict[str, Any]], namespace: str = "ns", **spec: Any):
    return {"apiVersion": "gateway.envoyproxy.io/v1alpha1", "kind": kind,
            "metadata": {"name": name, "namespace": namespace}, "spec": {"targetRefs": refs, **spec}}  # fmt: skip


def _ref(kind: str, name: str, section: str | None = None) -> dict[str, str]:
    return {"group": GROUP, "kind": kind, "name": name, **({"sectionName": section} if section else {})}


# ------------------------------------------------------------------------------------------------ the upstream fact


def test_the_pinned_checks_cover_the_four_kinds_each_from_its_own_file():
    for kind in POLICY_KINDS:
        messages = [m for fn in FACTS[SOURCE[kind]].values() if isinstance(fn, dict) for m in fn.values()]
        assert messages and all(f"another {kind} has already attached to it" in m for m in messages)
    # A policy of each kind on a Gateway, on a listener (sectionName), on a route and on a route rule: one each.
    for kind in ("EnvoyExtensionPolicy", "BackendTrafficPolicy", "SecurityPolicy"):
        texts = " ".join(m for fn in FACTS[SOURCE[kind]].values() if isinstance(fn, dict) for m in fn.values())
        for target in ("Gateway %s", "Listener %s/%s", "RouteRule %s/%s", "Unable to target %s %s"):
            assert target in texts, (kind, target)
    sorted_by = FACTS["internal/gatewayapi/resource/resource.go"]
    assert sum("creation timestamp, then namespace/name" in v for v in sorted_by.values()) == 4


@pytest.mark.skipif(not MIRROR.is_dir(), reason="no envoyproxy/gateway mirror on this machine")
def test_each_pinned_message_is_at_its_line_at_the_tag():
    for path in {*SOURCE.values(), "internal/gatewayapi/resource/resource.go"}:
        text = subprocess.run(["git", "-C", str(MIRROR), "show", f"v1.9.0:{path}"], capture_output=True, text=True,
                              check=True).stdout.splitlines()  # fmt: skip
        pinned = FACTS[path]
        lines = {k: v for fn in pinned.values() if isinstance(fn, dict) for k, v in fn.items()}
        lines |= {k: v for k, v in pinned.items() if k.isdigit()}
        for number, message in lines.items():
            line = text[int(number) - 1]
            assert message.split(" sorted ")[0].rstrip("s") in line or message in line, (path, number, line)


# ------------------------------------------------------------------------------------------------- the check itself


def test_two_policies_of_one_kind_on_one_target_are_refused_naming_both_and_the_file():
    extension = [_policy_object("EnvoyExtensionPolicy", n, [_ref("HTTPRoute", "r")]) for n in ("b", "a")]
    (problem,) = conflict_problems(extension)
    assert problem.startswith("EnvoyExtensionPolicys a, b all target HTTPRoute ns/r")
    assert "internal/gatewayapi/envoyextensionpolicy.go" in problem and "Conflicted" in problem
    # One route rule twice, one listener twice, one Gateway twice (ClientTrafficPolicy too).
    rule = [_policy_object("SecurityPolicy", n, [_ref("HTTPRoute", "r", "rule-0")]) for n in "ab"]
    listener = [_policy_object("BackendTrafficPolicy", n, [_ref("Gateway", "g", "http")]) for n in "ab"]
    client = [_policy_object("ClientTrafficPolicy", n, [_ref("Gateway", "g")]) for n in "ab"]
    assert [len(conflict_problems(objects)) for objects in (rule, listener, client)] == [1, 1, 1]
    # A route-level policy with mergeType still claims its route: two of them are refused.
    merged = [_policy_object("BackendTrafficPolicy", n, [_ref("HTTPRoute", "r")], mergeType="StrategicMerge")
              for n in "ab"]  # fmt: skip
    assert len(conflict_problems(merged)) == 1
    # A selector matching the route claims it too.
    route = {"apiVersion": f"{GROUP}/v1", "kind": "HTTPRoute", "metadata": {"name": "r", "namespace": "ns",
                                                                          "labels": {"x": "1"}}}  # fmt: skip
    selected = _policy_object("EnvoyExtensionPolicy", "s", [], targetSelectors=[{"kind": "HTTPRoute",
                                                                                 "matchLabels": {"x": "1"}}])  # fmt: skip
    assert len(conflict_problems([route, extension[0], selected])) == 1


def test_different_targets_and_kinds_pass():
    objects = [
        # Our shape: the Gateway's BackendTrafficPolicy and the route's, merged into it (two targets).
        _policy_object("BackendTrafficPolicy", "gw", [_ref("Gateway", "g")]),
        _policy_object("BackendTrafficPolicy", "body", [_ref("HTTPRoute", "r")], mergeType="StrategicMerge"),
        # A Gateway and one of its listeners; two rules of one route; one route in two namespaces.
        _policy_object("ClientTrafficPolicy", "c1", [_ref("Gateway", "g")]),
        _policy_object("ClientTrafficPolicy", "c2", [_ref("Gateway", "g", "http")]),
        _policy_object("SecurityPolicy", "s1", [_ref("HTTPRoute", "r", "rule-0")]),
        _policy_object("SecurityPolicy", "s2", [_ref("HTTPRoute", "r", "rule-1")]),
        _policy_object("EnvoyExtensionPolicy", "e1", [_ref("HTTPRoute", "r")]),
        _policy_object("EnvoyExtensionPolicy", "e1", [_ref("HTTPRoute", "r")], namespace="other"),
        # Different kinds on one route.
        _policy_object("SecurityPolicy", "s3", [_ref("HTTPRoute", "r")]),
    ]
    assert conflict_problems(objects) == []


def test_the_shape_before_issue_30s_merge_is_refused_by_the_summary_and_the_local_edge(monkeypatch):
    """Token metering in a policy of its own on the OpenAI route (``<gw>-metering`` beside ``<gw>-credentials``):
    the cluster would drop one of them. The plan's summary refuses it, and so does the local bootstrap."""
    pol = _policy("round-robin")
    objects = render_gateway_objects(pol, TARGET)
    credentials = next(o for o in objects if o["metadata"]["name"] == f"{TARGET.name}-credentials")
    metering = copy.deepcopy(credentials)
    metering["metadata"]["name"] = f"{TARGET.name}-metering"
    metering["spec"]["lua"] = [credentials["spec"]["lua"].pop()]
    assert metering["spec"]["lua"][0]["inline"] == metering_lua()
    with pytest.raises(ValueError, match="EnvoyExtensionPolicys inference-edge-credentials, inference-edge-metering "
                                         "all target HTTPRoute envoy-gateway-system/inference-edge-http"):  # fmt: skip
        gateway_summary([*objects, metering])
    from inference_platform.components.edge import inference_pool

    def split(*args: Any, **kwargs: Any) -> list[dict[str, Any]]:
        out = original(*args, **kwargs)
        return [*out, {**copy.deepcopy(out[-1]), "metadata": {"name": "edge-metering", "namespace": "local"}}]

    original = inference_pool.extension_policies
    monkeypatch.setattr("inference_platform.inferctl.serving.edge_envoy.extension_policies", split)
    with pytest.raises(ValueError, match="the cluster's Envoy Gateway would ignore a policy: EnvoyExtensionPolicys"):
        bootstrap(pol)


# ------------------------------------------------------------------------------------------------- the rendering


@pytest.mark.parametrize("mode", ["envoy", "round-robin", "inference-pool"])
@pytest.mark.parametrize("batch", [False, True])
@pytest.mark.parametrize("models", [False, True])
def test_every_route_has_one_extension_policy_running_its_features_in_order(mode, batch, models):
    pol = _policy(mode, batch=batch)
    objects = render_gateway_objects(pol, _target(batch))
    if models:
        objects = with_model_routing(objects, ROUTING, gateway=TARGET.name, namespace=TARGET.namespace)
    assert conflict_problems(objects) == []
    extensions = [o for o in objects if o["kind"] == "EnvoyExtensionPolicy"]
    by_route = {r["name"]: o for o in extensions for r in o["spec"]["targetRefs"]}
    openai = by_route[HTTP]
    # The name (URN) the OpenAI route's policy has always had; it targets that route alone.
    assert openai["metadata"]["name"] == f"{TARGET.name}-credentials"
    assert [r["name"] for r in openai["spec"]["targetRefs"]] == [HTTP]
    expected = [*pol.edge_lua, *([ROUTING.lua] if models else []), metering_lua()]
    assert [e["inline"] for e in openai["spec"]["lua"]] == expected
    assert ("extProc" in openai["spec"]) == (mode == "inference-pool")
    if batch:
        # The batch lane: the edge's own Lua only (its bodies hold "usage" keys; its uploads are never parsed).
        other = by_route[BATCH]
        assert other["metadata"]["name"] == f"{TARGET.name}-credentials-other-routes"
        assert [e["inline"] for e in other["spec"]["lua"]] == list(pol.edge_lua)
        assert "extProc" not in other["spec"]


@pytest.mark.parametrize("mode", ["envoy", "inference-pool"])
def test_the_local_edge_runs_the_same_lua_in_the_same_order_on_each_route(mode):
    """The local bootstrap's Lua filters, and which run on each route group, from the same policies: the OpenAI
    route's list in its order, the batch lane's without the metering and model routing scripts."""
    pol = _policy(mode, batch=True)
    objects = with_model_routing(render_gateway_objects(pol, _target(True)), ROUTING, gateway=TARGET.name,
                                 namespace=TARGET.namespace)  # fmt: skip
    cluster = {r["name"]: [e["inline"] for e in o["spec"]["lua"]]
               for o in objects if o["kind"] == "EnvoyExtensionPolicy" for r in o["spec"]["targetRefs"]}  # fmt: skip
    upstreams = {ModelBackend(service=s, namespace="inference", port=9000): Upstream(address="127.0.0.1", port=p)
                 for s, p in (("triton", 9000), ("triton-v2", 9001))}  # fmt: skip
    local = local_model_routing(bootstrap(pol, extra_upstreams={ROUTE_KEY: Upstream(address="127.0.0.1", port=8000)}),
                                ROUTING, pol, upstreams)  # fmt: skip
    hcm = local["static_resources"]["listeners"][0]["filter_chains"][0]["filters"][0]["typed_config"]
    lua = {f["name"]: f["typed_config"]["default_source_code"]["inline_string"]
           for f in hcm["http_filters"] if f["name"].startswith("envoy.filters.http.lua")}  # fmt: skip
    assert list(lua.values()) == cluster[HTTP]
    for route in hcm["route_config"]["virtual_hosts"][0]["routes"]:
        cluster_name = route.get("route", {}).get("cluster")
        if cluster_name is None:
            continue  # the edge's own /v1/models answers
        off = {n for n, c in route.get("typed_per_filter_config", {}).items() if c.get("disabled") and n in lua}
        runs = [script for name, script in lua.items() if name not in off]
        assert runs == cluster[BATCH if cluster_name == ROUTE_KEY else HTTP], cluster_name
    # Without model routing the two renderings' summaries agree, the OpenAI route alone metered.
    batch = {ROUTE_KEY: Upstream(address="127.0.0.1", port=8000)}
    gateway = gateway_summary(render_gateway_objects(pol, _target(True)))
    assert gateway == bootstrap_summary(bootstrap(pol, extra_upstreams=batch))
    assert gateway["metered_routes"] == [INFERENCE_ROUTES]
