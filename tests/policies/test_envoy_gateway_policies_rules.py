"""envoy-gateway-one-policy-per-target (policies/rules/envoy_gateway_policies.py): two Envoy Gateway policies of one
kind on one target fail, naming both (Envoy Gateway v1.9.0 ignores one as Conflicted:
tests/data/upstream/envoy_gateway_one_policy_per_target.json); one per target passes; the shipped stacks and the
model-routing example pass."""

from __future__ import annotations

import pulumi_kubernetes as k8s
import pytest

from inference_platform.inferctl.plan.command import make_plan
from inference_platform.offline_plan.policy_runner import evaluate
from inference_platform.policies.pack import POLICIES
from tests.conftest import REPO, STACKS

RULE = "envoy-gateway-one-policy-per-target"
ROUTE = {"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "name": "edge-http"}
LUA = [{"type": "Inline", "inline": "function envoy_on_request(h) end"}]


def _policy(resource: str, name: str, kind: str = "EnvoyExtensionPolicy", **spec):
    k8s.apiextensions.CustomResource(
        resource,
        api_version="gateway.envoyproxy.io/v1alpha1",
        kind=kind,
        metadata={"name": name, "namespace": "envoy-gateway-system"},
        spec=spec,
    )


def test_a_second_extension_policy_on_the_openai_route_fails_on_both(violations):
    def program():
        _policy("credentials", "edge-credentials", targetRefs=[ROUTE], lua=LUA)
        _policy("metering", "edge-metering", targetRefs=[ROUTE], lua=LUA)

    found = violations(program, RULE)
    assert sorted(v.urn.rsplit("::", 1)[1] for v in found) == ["credentials", "metering"]
    assert all(v.mandatory for v in found)
    named = "EnvoyExtensionPolicys edge-credentials, edge-metering all target HTTPRoute envoy-gateway-system/edge-http"
    assert all(named in v.message for v in found)
    assert "internal/gatewayapi/envoyextensionpolicy.go" in found[0].message


def test_one_policy_per_target_passes_and_each_kind_and_section_counts_apart(violations):
    def program():
        _policy("credentials", "edge-credentials", targetRefs=[ROUTE], lua=LUA)
        _policy("other", "edge-credentials-other-routes", targetRefs=[{**ROUTE, "name": "edge-batch"}], lua=LUA)
        gateway = {"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "edge"}
        _policy("backend", "edge-backend", "BackendTrafficPolicy", targetRefs=[gateway])
        _policy("body", "edge-http-body", "BackendTrafficPolicy", targetRefs=[ROUTE], mergeType="StrategicMerge")
        _policy("keys", "edge-api-keys", "SecurityPolicy", targetRefs=[ROUTE])
        _policy("client", "edge-client", "ClientTrafficPolicy", targetRefs=[gateway])
        _policy("listener", "edge-client-http", "ClientTrafficPolicy", targetRefs=[{**gateway, "sectionName": "http"}])

    assert violations(program, RULE) == []


def test_two_backend_traffic_policies_on_one_route_fail_merge_type_or_not(violations):
    def program():
        _policy("body", "edge-http-body", "BackendTrafficPolicy", targetRefs=[ROUTE], mergeType="StrategicMerge")
        _policy("more", "edge-http-more", "BackendTrafficPolicy", targetRefs=[ROUTE], mergeType="StrategicMerge")

    assert len(violations(program, RULE)) == 2


@pytest.mark.parametrize("stack", STACKS)
def test_every_shipped_stack_passes(stack_plan, stack):
    run = stack_plan(stack).run
    assert evaluate(run.resources, [p for p in POLICIES if p.name == RULE]) == []
    # Each route carries an EnvoyExtensionPolicy (the credential check at least): the rule saw them.
    assert [r for r in run.resources if r.type.endswith(":EnvoyExtensionPolicy")]


def test_the_model_routing_example_passes():
    plan = make_plan(REPO, "dev", stack_file=REPO / "docs" / "examples" / "Pulumi.dev-rollout.yaml")
    assert [v for v in plan.violations if v.policy == RULE] == []
    (extension,) = [r for r in plan.run.resources if r.type.endswith(":EnvoyExtensionPolicy")]
    assert [ref["name"] for ref in extension.inputs["spec"]["targetRefs"]] == ["inference-edge-http"]
