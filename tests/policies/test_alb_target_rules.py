"""alb-targets-outlive-idle-timeout (issue 28 R6): the Envoy proxies behind the ALB (or any other target) keep idle
connections longer than the ALB. Failing and passing fixtures, what the gateway rendered before issue 28, and the
shipped stacks (where the rule must find the proxies behind the Ingress, not pass for want of them)."""

from __future__ import annotations

import pulumi_kubernetes as k8s
import pytest

from inference_platform.offline_plan.policy_runner import evaluate
from inference_platform.policies.pack import POLICIES
from inference_platform.policies.rules import alb_targets
from tests.conftest import STACKS

RULE = "alb-targets-outlive-idle-timeout"
NS = "envoy-gateway-system"


def _program(
    *, proxy_idle: str | None, alb_idle: str | None = "600", backend: str = "edge", declared: str | None = None
):
    def program():
        attributes = [{"key": "idle_timeout.timeout_seconds", "value": alb_idle}] if alb_idle else []
        k8s.apiextensions.CustomResource(
            "params", api_version="elbv2.k8s.aws/v1beta1", kind="IngressClassParams",
            metadata={"name": "alb"}, spec={"loadBalancerAttributes": attributes},
        )  # fmt: skip
        k8s.networking.v1.IngressClass(
            "class", metadata={"name": "alb"},
            spec={"controller": "ingress.k8s.aws/alb",
                  "parameters": {"apiGroup": "elbv2.k8s.aws", "kind": "IngressClassParams", "name": "alb"}},
        )  # fmt: skip
        k8s.networking.v1.Ingress(
            "api", metadata={"name": "api", "namespace": NS},
            spec={"ingressClassName": "alb", "rules": [{"http": {"paths": [
                {"path": "/", "pathType": "Prefix", "backend": {"service": {"name": backend, "port": {"number": 8080}}}}
            ]}}]},
        )  # fmt: skip
        k8s.apiextensions.CustomResource(
            "proxy", api_version="gateway.envoyproxy.io/v1alpha1", kind="EnvoyProxy",
            metadata={"name": "edge-proxy", "namespace": NS},
            spec={"provider": {"type": "Kubernetes", "kubernetes": {"envoyService": {"name": "edge"}}}},
        )  # fmt: skip
        k8s.apiextensions.CustomResource(
            "gateway", api_version="gateway.networking.k8s.io/v1", kind="Gateway",
            metadata={"name": "edge", "namespace": NS},
            spec={"gatewayClassName": "eg", "listeners": [],
                  "infrastructure": {"parametersRef": {"group": "gateway.envoyproxy.io", "kind": "EnvoyProxy",
                                                       "name": "edge-proxy"}}},
        )  # fmt: skip
        http = {"streamIdleTimeout": "600s", **({"idleTimeout": proxy_idle} if proxy_idle else {})}
        k8s.apiextensions.CustomResource(
            "client", api_version="gateway.envoyproxy.io/v1alpha1", kind="ClientTrafficPolicy",
            metadata={"name": "edge-client", "namespace": NS},
            spec={"targetRefs": [{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "edge"}],
                  "timeout": {"http": http}},
        )  # fmt: skip
        if backend != "edge":
            annotations = {alb_targets.IDLE_ANNOTATION: declared} if declared else {}
            k8s.core.v1.Service(
                "app", metadata={"name": backend, "namespace": NS, "annotations": annotations},
                spec={"ports": [{"port": 8080}]},
            )  # fmt: skip

    return program


def test_the_proxy_closing_with_the_alb_fails_naming_the_ingress_and_the_502(violations):
    # What components/edge/gateway_api.py rendered before issue 28: idleTimeout equal to the ALB's.
    (found,) = violations(_program(proxy_idle="600s"), RULE)
    assert found.mandatory and found.urn.endswith("::api")
    assert "after 600 s (ClientTrafficPolicy edge-client idleTimeout 600s)" in found.message and "502" in found.message


@pytest.mark.parametrize(("proxy_idle", "alb_idle"), [("610s", "600"), ("1m5s", None), (None, "600")])
def test_a_proxy_that_outlives_the_alb_passes(violations, proxy_idle, alb_idle):
    # Unset on either side: AWS's 60 s, Envoy Gateway's 1 h.
    assert violations(_program(proxy_idle=proxy_idle, alb_idle=alb_idle), RULE) == []


def test_envoy_gateways_default_hour_is_short_of_a_longer_alb(violations):
    (found,) = violations(_program(proxy_idle=None, alb_idle="4000"), RULE)
    assert "Envoy Gateway's default 1 h" in found.message


def test_any_other_target_declares_its_keep_alive(violations):
    (found,) = violations(_program(proxy_idle="610s", backend="app"), RULE)
    assert "idle-timeout-seconds" in found.message
    (found,) = violations(_program(proxy_idle="610s", backend="app", declared="5"), RULE)
    assert "keeps idle connections 5 s" in found.message
    assert violations(_program(proxy_idle="610s", backend="app", declared="620"), RULE) == []


@pytest.mark.parametrize("stack", STACKS)
def test_every_shipped_stack_passes_with_its_proxies_found_behind_the_alb(stack_plan, stack):
    run = stack_plan(stack).run
    assert evaluate(run.resources, [p for p in POLICIES if p.name == RULE]) == []
    ingresses = [r for r in run.resources if r.type == alb_targets.INGRESS]
    if not ingresses:
        pytest.skip(f"{stack} has no public endpoint")
    client = [r for r in run.resources if r.type == alb_targets.CLIENT_TRAFFIC_POLICY]
    (idle,) = {c.inputs["spec"]["timeout"]["http"]["idleTimeout"] for c in client}
    (params,) = [r for r in run.resources if r.type == alb_targets.INGRESS_CLASS_PARAMS]
    attributes = {a["key"]: a["value"] for a in params.inputs["spec"]["loadBalancerAttributes"]}
    assert int(idle.removesuffix("s")) > int(attributes["idle_timeout.timeout_seconds"])
