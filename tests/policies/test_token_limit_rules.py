"""edge-token-limits-in-production (policies/rules/token_limits.py): the Gateway objects the edge renders, as
CustomResources, with and without token limits."""

from __future__ import annotations

import pulumi_kubernetes as k8s

from inference_platform.components.edge.gateway_api import render_gateway_objects
from inference_platform.settings import load_settings
from tests.components.edge.targets import TARGET

RULE = "edge-token-limits-in-production"
TAGS = {"owner": "team", "costCenter": "cc-1"}


def _program(edge):
    policy = load_settings({"tags": TAGS, "edge": edge}, project="p", stack="s", region="us-west-2").edge.policy()

    def program():
        for i, o in enumerate(render_gateway_objects(policy, TARGET)):
            k8s.apiextensions.CustomResource(
                f"o{i}", api_version=o["apiVersion"], kind=o["kind"], metadata=o["metadata"], spec=o["spec"]
            )

    return program


def test_a_production_edge_with_token_limits_passes(violations):
    assert violations(_program({}), RULE, {"production": True}) == []
    shadow = {"tokenLimits": {"mode": "shadow"}}
    assert violations(_program(shadow), RULE, {"production": True}) == []


def test_a_production_edge_without_token_limits_is_refused(violations):
    edge = {"tokenLimits": {"tokensPerMinute": None}}
    (found,) = violations(_program(edge), RULE, {"production": True})
    assert "client default has no token limit" in found.message and "edge.tokenLimits" in found.message
    # Development may run without.
    assert violations(_program(edge), RULE) == []


def test_one_client_without_a_token_limit_is_named(violations):
    edge = {
        "auth": {"clients": {"a": {"tier": "t"}, "b": {"tier": "u"}}},
        "rateLimits": {"tiers": {"t": {}, "u": {}}},
        "tokenLimits": {"tokensPerMinute": None, "tiers": {"t": {"tokensPerMinute": 1000}}},
    }
    (found,) = violations(_program(edge), RULE, {"production": True})
    assert "client b has no token limit" in found.message
