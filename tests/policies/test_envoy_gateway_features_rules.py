"""envoy-gateway-features-enabled (issue 28 R12) and rate-limit-timeout-explicit (R2): passing and failing
fixtures, what the gateway installed before issue 28, and the shipped stacks."""

from __future__ import annotations

import pulumi_kubernetes as k8s
import pytest

from inference_platform.components.edge.controller_config import controller_values
from inference_platform.offline_plan.policy_runner import evaluate
from inference_platform.policies.pack import POLICIES
from tests.conftest import STACKS

FEATURES = "envoy-gateway-features-enabled"
TIMEOUT = "rate-limit-timeout-explicit"
CHART = "oci://docker.io/envoyproxy/gateway-helm"
LUA = {"targetRefs": [{"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "name": "r"}],
       "lua": [{"type": "Inline", "inline": "function envoy_on_request(h) end"}]}  # fmt: skip
# What components/edge/gateway.py installed before issue 28: no extensionApis, no rate-limit timeout.
BEFORE = {"config": {"envoyGateway": {"rateLimit": {"backend": {"type": "Redis", "redis": {"url": "r:6379"}},
                                                    "failClosed": True}}}}  # fmt: skip


def _program(values, *, chart=CHART, lua=True):
    def program():
        if values is not None:
            k8s.helm.v3.Release("gateway", name="envoy-gateway", chart=chart, version="v1.9.0", values=values)
        if lua:
            k8s.apiextensions.CustomResource(
                "credentials",
                api_version="gateway.envoyproxy.io/v1alpha1",
                kind="EnvoyExtensionPolicy",
                metadata={"name": "edge-credentials", "namespace": "envoy-gateway-system"},
                spec=LUA,
            )

    return program


def test_a_lua_policy_the_release_leaves_off_fails_naming_the_policy_and_the_500(violations):
    (found,) = violations(_program(BEFORE), FEATURES)
    assert found.mandatory and found.urn.endswith("::credentials")
    assert "EnvoyExtensionPolicy edge-credentials uses Lua" in found.message
    assert "HTTP 500" in found.message and "extensionApis.enableLua: true" in found.message


def test_lua_enabled_passes_and_a_configuration_that_cannot_start_fails(violations):
    assert violations(_program(controller_values("r:6379", features=["Lua"])), FEATURES) == []
    both = {"config": {"envoyGateway": {"extensionApis": {"enableLua": True, "disableLua": True}}}}
    (found,) = violations(_program(both), FEATURES)
    assert found.urn.endswith("::gateway") and "must not have the same value" in found.message


def test_gated_objects_without_any_envoy_gateway_release_fail(violations):
    (found,) = violations(_program(None), FEATURES)
    assert "installs no Envoy Gateway release" in found.message
    # Another chart is not Envoy Gateway.
    assert len(violations(_program(controller_values("r", features=["Lua"]), chart="other"), FEATURES)) == 1


def test_a_stack_without_gated_objects_passes(violations):
    assert violations(_program(BEFORE, lua=False), FEATURES) == []


def test_fail_closed_without_a_timeout_fails_and_ours_passes(violations):
    (found,) = violations(_program(BEFORE, lua=False), TIMEOUT)
    assert "without rateLimit.timeout" in found.message and "20 ms" in found.message
    assert violations(_program(controller_values("r", fail_closed=True), lua=False), TIMEOUT) == []
    short = controller_values("r", fail_closed=True, rate_limit_timeout_ms=20)
    (found,) = violations(_program(short, lua=False), TIMEOUT)
    assert "at least 50ms" in found.message
    # Failing open, a short timeout lets requests through unlimited, never refuses them.
    assert violations(_program(controller_values("r", rate_limit_timeout_ms=5), lua=False), TIMEOUT) == []


@pytest.mark.parametrize("stack", STACKS)
def test_every_shipped_stack_passes_and_uses_lua(stack_plan, stack):
    run = stack_plan(stack).run
    rules = [p for p in POLICIES if p.name in (FEATURES, TIMEOUT)]
    assert evaluate(run.resources, rules) == []
    (release,) = [r for r in run.resources if str(r.inputs.get("chart", "")).endswith("gateway-helm")]
    envoy_gateway = release.inputs["values"]["config"]["envoyGateway"]
    assert envoy_gateway["extensionApis"] == {"enableLua": True}
    assert envoy_gateway["rateLimit"]["timeout"] == "100ms"
