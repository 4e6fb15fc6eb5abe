"""The cluster's rendering of model routing (components/edge/model_routing.py) and the facts it rests on."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from inference_platform.catalog.envoy_gateway_gates import features_used
from inference_platform.components.edge.gateway_api import render_gateway_objects
from inference_platform.components.edge.model_routing import (
    MODEL_HEADER,
    ModelBackend,
    ModelRoute,
    ModelRouting,
    with_model_routing,
)
from inference_platform.components.edge.token_metering import metering_lua
from inference_platform.settings import load_settings
from tests.components.edge.targets import TARGET
from tests.upstream_quotes import assert_quote_holds

FACTS = Path(__file__).parents[2] / "data" / "upstream" / "model_routing_facts.json"
TAGS = {"owner": "team", "costCenter": "cc-1"}
EDGE = {"auth": {"clients": {"alpha": {}}}}
SMALL, BIG = "Llama-3.1-8B", "Llama-3.1-70B"


def backend(name: str) -> ModelBackend:
    return ModelBackend(service=name, namespace=TARGET.service_namespace, port=9000)


ROUTING = ModelRouting(
    models=(
        ModelRoute(name=SMALL, current=backend("triton"), canary=backend("triton-small-v2"), canary_weight=25),
        ModelRoute(name=BIG, current=backend("triton-big"), fallback=SMALL),
    ),
    aliases={"llama": SMALL},
)


POLICY = load_settings({"tags": TAGS, "edge": EDGE}, project="p", stack="s", region="us-west-2").edge.policy()


def objects(routing: ModelRouting = ROUTING) -> list[dict]:
    return with_model_routing(render_gateway_objects(POLICY, TARGET), routing, gateway=TARGET.name,
                              namespace=TARGET.namespace)  # fmt: skip


def test_the_openai_route_keeps_its_name_and_gains_the_model_rules_first():
    route = next(o for o in objects() if o["kind"] == "HTTPRoute")
    assert route["metadata"]["name"] == f"{TARGET.name}-http"
    rules = route["spec"]["rules"]
    listing = [r for r in rules if "filters" in r]
    assert [r["matches"][0]["path"]["value"] for r in listing] == [
        "/v1/models", f"/v1/models/{SMALL}", f"/v1/models/{BIG}", "/v1/models/llama"]  # fmt: skip
    by_model = {}
    for r in rules:
        headers = r.get("matches", [{}])[0].get("headers") or []
        if headers:
            tester = headers[1]["value"] if len(headers) == 2 else None
            by_model[headers[0]["value"], tester] = [(b.get("kind", "Service"), b["name"], b["weight"])
                                                     for b in r["backendRefs"]]  # fmt: skip
    # No weighted backendRefs (the script draws the canary's share): everything else to the current version, what
    # the script drew (and testers) to the canary, then the current version; a model fallback after its model.
    assert by_model == {
        (SMALL, "always"): [("Service", "triton-small-v2", 1), ("Backend", f"{TARGET.name}-fallback-triton", 1)],
        (SMALL, None): [("Service", "triton", 1)],
        (BIG, None): [("Service", "triton-big", 1), ("Backend", f"{TARGET.name}-fallback-triton", 1)],
    }
    assert 'local CANARY = {["Llama-3.1-8B"]=25}' in ROUTING.lua
    assert rules[-1]["matches"][0].get("headers") is None  # the allow-list's own rule stays last: it runs the script


def test_the_load_bound_reaches_every_model_rules_cluster():
    """edge.routing envoy: the bound is patched onto each rule's cluster (Envoy Gateway names them by rule index and
    skips a patch naming none; the route's rule 0 is now the /v1/models answer, which has no cluster)."""
    envoy = {**EDGE, "routing": {"mode": "envoy"}}
    policy = load_settings({"tags": TAGS, "edge": envoy}, project="p", stack="s", region="us-west-2").edge.policy()
    rendered = with_model_routing(render_gateway_objects(policy, TARGET), ROUTING, gateway=TARGET.name,
                                  namespace=TARGET.namespace)  # fmt: skip
    route = next(o for o in rendered if o["kind"] == "HTTPRoute" and o["metadata"]["name"] == f"{TARGET.name}-http")
    with_backends = [i for i, r in enumerate(route["spec"]["rules"]) if r.get("backendRefs")]
    (patch,) = [o for o in rendered if o["kind"] == "EnvoyPatchPolicy"]
    names = [p["name"] for p in patch["spec"]["jsonPatches"]]
    assert names == [f"httproute/{TARGET.namespace}/{TARGET.name}-http/rule/{i}" for i in with_backends]
    assert 0 not in with_backends and len(with_backends) == 4  # the canary's, SMALL's, BIG's and the allow-list's
    assert len({json.dumps(p["operation"]) for p in patch["spec"]["jsonPatches"]}) == 1


def test_fallbacks_are_backends_at_priority_one_and_the_retry_moves_to_them():
    rendered = objects()
    backends = {o["metadata"]["name"]: o["spec"] for o in rendered if o["kind"] == "Backend"}
    assert backends[f"{TARGET.name}-fallback-triton"] == {
        "endpoints": [{"fqdn": {"hostname": f"triton.{TARGET.service_namespace}.svc.cluster.local", "port": 9000}}],
        "fallback": True,
    }
    policy = next(o for o in rendered if o["kind"] == "BackendTrafficPolicy" and "mergeType" not in o["spec"])
    assert policy["spec"]["retry"]["numAttemptsPerPriority"] == 2
    # The controller switches on exactly what is used: Backend and Lua.
    assert {"Backend", "Lua"} <= set(features_used(rendered))


def test_the_script_sits_beside_the_credential_check_on_the_authenticated_routes():
    rendered = objects()
    # The OpenAI route's one policy carries the routing script (Envoy Gateway v1.9.0 ignores a second policy on a
    # route): after the edge's own Lua (credential check, affinity key), before the metering script.
    (extension,) = [o for o in rendered if o["kind"] == "EnvoyExtensionPolicy" and MODEL_HEADER in json.dumps(o)]
    assert extension["metadata"]["name"].endswith("-credentials")
    policy = load_settings({"tags": TAGS, "edge": EDGE}, project="p", stack="s", region="us-west-2").edge.policy()
    scripts = [e["inline"] for e in extension["spec"]["lua"]]
    assert scripts == [*policy.edge_lua, ROUTING.lua, metering_lua()]
    security = next(o for o in rendered if o["kind"] == "SecurityPolicy")
    assert {r["name"] for r in security["spec"]["targetRefs"]} == {f"{TARGET.name}-http"}
    grant = next(o for o in rendered if o["kind"] == "ReferenceGrant")
    assert {t["name"] for t in grant["spec"]["to"]} >= {"triton-small-v2", "triton-big"}


@pytest.mark.parametrize(
    ("routing", "words"),
    [
        (dict(models=(ModelRoute(name=SMALL, current=backend("a")),) * 2), "distinct"),
        (dict(models=(ModelRoute(name=SMALL, current=backend("a")),), aliases={"x": "y"}), "no such model"),
        (dict(models=(ModelRoute(name=SMALL, current=backend("a"), canary_weight=5),)), "without a canary"),
        (dict(models=(ModelRoute(name=SMALL, current=backend("a"), fallback=SMALL),)), "not another model"),
    ],
)
def test_inconsistent_routing_is_refused(routing, words):
    with pytest.raises(ValueError, match=words):
        ModelRouting(**routing)


@pytest.mark.parametrize("fact", json.loads(FACTS.read_text())["facts"], ids=lambda f: f"{f['path']}:{f['quote'][:30]}")
def test_the_upstream_facts_hold_at_their_tags(fact):
    assert_quote_holds(fact)
