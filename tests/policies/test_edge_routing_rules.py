"""envoy-patch-policy-load-bound-only (issue 29): the bounded-load patch passes, any other xDS patch fails."""

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
