"""envoy-patch-policy-load-bound-only (issue 29): the bounded-load patch passes, any other xDS patch fails.
envoy-patches-reach-rendered-clusters: the bound on every rule with backends passes; a patch Envoy Gateway would skip,
or a rule left unbounded, fails."""

from __future__ import annotations

import copy

import pulumi_kubernetes as k8s
import pytest

from inference_platform.catalog.edge_routing import Routing
from inference_platform.components.edge.routing import bounded_load_patch

RULE = "envoy-patch-policy-load-bound-only"
GOOD = bounded_load_patch(Routing(mode="envoy"), namespace="envoy-gateway-system", gateway="edge", route="edge-http")


def _program(spec):
    def program():
        k8s.apiextensions.CustomResource(
            "bound",
            api_version="gateway.envoyproxy.io/v1alpha1",
            kind="EnvoyPatchPolicy",
            metadata={"name": "edge-bounded-load", "namespace": "envoy-gateway-system"},
            spec=spec,
        )

    return program


def test_the_rendered_load_bound_passes(violations):
    assert violations(_program(GOOD), RULE) == []


def _bad(path: str, value):
    spec = copy.deepcopy(GOOD)
    target = spec["jsonPatches"][0]
    *parents, last = path.split(".")
    for part in parents:
        target = target[part]
    target[last] = value
    return spec


@pytest.mark.parametrize(
    ("spec", "words"),
    [
        (_bad("type", "type.googleapis.com/envoy.config.listener.v3.Listener"), "not an HTTPRoute cluster"),
        (_bad("name", "envoy-gateway-system/edge/http"), "not an HTTPRoute cluster"),
        (_bad("operation.path", "/transport_socket"), "not the load bound"),
        (_bad("operation.op", "replace"), "not the load bound"),
        (_bad("operation.value", {"hash_balance_factor": 99}), "integer >= 100"),
        (_bad("operation.value", {"hash_balance_factor": 150, "use_hostname_for_hashing": True}), "only"),
    ],
)
def test_any_other_patch_fails_naming_what(violations, spec, words):
    (found,) = violations(_program(spec), RULE)
    assert found.mandatory and "EnvoyPatchPolicy edge-bounded-load" in found.message and words in found.message


REACH = "envoy-patches-reach-rendered-clusters"
LISTING = {"matches": [{"path": {"type": "Exact", "value": "/v1/models"}}], "filters": [{"type": "ExtensionRef"}]}
SERVED = {"matches": [{"path": {"type": "PathPrefix", "value": "/v1"}}], "backendRefs": [{"name": "triton", "port": 9}]}


def _stack(rules: list[dict], patched: list[int]):
    def program():
        k8s.apiextensions.CustomResource("route", api_version="gateway.networking.k8s.io/v1", kind="HTTPRoute",
                                         metadata={"name": "edge-http", "namespace": "envoy-gateway-system"},
                                         spec={"rules": rules})  # fmt: skip
        spec = copy.deepcopy(GOOD)
        spec["jsonPatches"] = [{**GOOD["jsonPatches"][0], "name": f"httproute/envoy-gateway-system/edge-http/rule/{i}"}
                               for i in patched]  # fmt: skip
        _program(spec)()

    return program


def test_a_bound_on_every_rule_with_backends_passes(violations):
    assert violations(_stack([SERVED], [0]), REACH) == []
    assert violations(_stack([LISTING, SERVED, SERVED], [1, 2]), REACH) == []


@pytest.mark.parametrize(
    ("rules", "patched", "words"),
    [
        # Model rules put first: rule 0 is the /v1/models answer, with no cluster (what model routing did).
        ([LISTING, SERVED], [0], "rule 0 of HTTPRoute envoy-gateway-system/edge-http has no backendRefs"),
        ([SERVED, SERVED], [0], "rules [1] have backends but no load-bound patch"),
        ([SERVED], [3], "rule 3 of HTTPRoute"),
    ],
)
def test_a_patch_envoy_gateway_would_skip_or_a_rule_left_unbounded_fails(violations, rules, patched, words):
    found = violations(_stack(rules, patched), REACH)
    assert found and all(v.mandatory for v in found) and any(words in v.message for v in found), found


def test_the_model_routing_rendering_bounds_every_rule(violations):
    from inference_platform.components.edge.gateway_api import render_gateway_objects
    from inference_platform.components.edge.model_routing import (
        ModelBackend,
        ModelRoute,
        ModelRouting,
        with_model_routing,
    )
    from inference_platform.settings import load_settings
    from tests.components.edge.targets import TARGET

    edge = {"auth": {"clients": {"alpha": {}}}, "routing": {"mode": "envoy"}}
    policy = load_settings({"tags": {"owner": "t", "costCenter": "c"}, "edge": edge}, project="p", stack="s",
                           region="us-west-2").edge.policy()  # fmt: skip
    current, canary = (ModelBackend(service=s, namespace=TARGET.service_namespace, port=9000) for s in ("a", "b"))
    routing = ModelRouting(models=(ModelRoute(name="m", current=current, canary=canary, canary_weight=5),))
    rendered = with_model_routing(render_gateway_objects(policy, TARGET), routing, gateway=TARGET.name,
                                  namespace=TARGET.namespace)  # fmt: skip

    def program():
        for o in rendered:
            if o["kind"] in ("HTTPRoute", "EnvoyPatchPolicy"):
                k8s.apiextensions.CustomResource(f"{o['kind']}-{o['metadata']['name']}", api_version=o["apiVersion"],
                                                 kind=o["kind"], metadata=o["metadata"], spec=o["spec"])  # fmt: skip

    assert violations(program, REACH) == []
