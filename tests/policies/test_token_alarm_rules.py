"""edge-token-alarm-in-production (policies/rules/token_alarm.py): a gateway that charges tokens, with and without
the PrometheusRule holding the charged-versus-served alarm."""

from __future__ import annotations

import pulumi_kubernetes as k8s

from inference_platform.components.observability.promql import Scope
from inference_platform.components.observability.rules import RuleSet, rule_groups
from inference_platform.components.observability.token_rules import TokenMeter
from tests.policies.test_token_limit_rules import _program as gateway_program

RULE = "edge-token-alarm-in-production"
METERS = (TokenMeter(client="default", domain="envoy-gateway-system/inference-edge-backend", key1="k"),)


def _program(edge, *, meters=METERS):
    gateway = gateway_program(edge)

    def program():
        gateway()
        groups = rule_groups(RuleSet(scope=Scope(namespace="inference", job="triton"), token_meters=meters))
        k8s.apiextensions.CustomResource(
            "rules", api_version="monitoring.coreos.com/v1", kind="PrometheusRule",
            metadata={"name": "inference-triton", "namespace": "inference"}, spec={"groups": groups},
        )  # fmt: skip

    return program


def test_a_production_gateway_charging_tokens_with_the_alarm_passes(violations):
    assert violations(_program({}), RULE, {"production": True}) == []


def test_a_production_gateway_charging_tokens_without_the_alarm_is_refused(violations):
    (found,) = violations(_program({}, meters=()), RULE, {"production": True})
    assert "TokensChargedNotServed" in found.message and "BackendTrafficPolicy" not in found.message
    assert violations(_program({}, meters=()), RULE) == []  # development may


def test_a_gateway_without_token_rules_needs_no_alarm(violations):
    assert violations(_program({"tokenLimits": {"tokensPerMinute": None}}, meters=()), RULE, {"production": True}) == []
