"""rate-limit-service-startable (issue 17 §2): passing and failing fixtures, and the shipped stacks."""

from __future__ import annotations

import pulumi_kubernetes as k8s
import pytest

from inference_platform.components.edge.gateway import controller_values
from inference_platform.offline_plan.policy_runner import evaluate
from inference_platform.policies.pack import POLICIES
from tests.conftest import STACKS

RULE = "rate-limit-service-startable"


def _release(values, chart="oci://docker.io/envoyproxy/gateway-helm"):
    def program():
        k8s.helm.v3.Release("gateway", name="envoy-gateway", chart=chart, version="v1.9.0", values=values)

    return program


def test_redis_tls_without_the_volume_fails_naming_the_release(violations):
    bare = {"config": {"envoyGateway": {"rateLimit": {"backend": {"type": "Redis", "redis": {"url": "r", "tls": {}}}}}}}
    (found,) = violations(_release(bare), RULE)
    assert found.mandatory and "Release envoy-gateway" in found.message and "redis-certs" in found.message


@pytest.mark.parametrize(
    "values",
    [
        controller_values("r:6379", tls=True, auth=True),
        controller_values("r:6379", tls=True),
        controller_values("r:6379"),
        # A client certificate brings its own volume.
        {
            "config": {
                "envoyGateway": {
                    "rateLimit": {"backend": {"redis": {"url": "r", "tls": {"certificateRef": {"name": "c"}}}}}
                }
            }
        },
    ],
    ids=["tls-auth", "tls", "plain", "certificate-ref"],
)
def test_what_we_install_and_a_client_certificate_pass(violations, values):
    assert violations(_release(values), RULE) == []


def test_other_charts_are_not_judged(violations):
    bare = {"config": {"envoyGateway": {"rateLimit": {"backend": {"redis": {"url": "r", "tls": {}}}}}}}
    assert violations(_release(bare, chart="some-other-chart"), RULE) == []


@pytest.mark.parametrize("stack", STACKS)
def test_every_shipped_stack_passes(stack_plan, stack):
    assert evaluate(stack_plan(stack).run.resources, [p for p in POLICIES if p.name == RULE]) == []
