"""gateway-closes-idle-backend-connections-first: the gateway's BackendTrafficPolicy closes idle connections to the
servers before the OpenAI server's keep-alive ends. Envoy Gateway's default (unset: 1 hour), a timeout equal to the
keep-alive and a non-duration are refused naming the field; a merge patch may leave it to the Gateway's policy; the
shipped stacks pass with the rendered value."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pulumi_kubernetes as k8s
import pytest

from inference_platform.catalog.serving_contract import EDGE_UPSTREAM_IDLE_SECONDS, OPENAI_KEEPALIVE_SECONDS
from inference_platform.offline_plan.policy_runner import evaluate
from inference_platform.policies.pack import POLICIES
from inference_platform.policies.rules.token_limits import BACKEND_TRAFFIC_POLICY
from tests.conftest import STACKS

RULE = "gateway-closes-idle-backend-connections-first"


def _program(spec):
    def program():
        k8s.apiextensions.CustomResource(
            "backend",
            api_version="gateway.envoyproxy.io/v1alpha1",
            kind="BackendTrafficPolicy",
            metadata={"name": "edge-backend", "namespace": "envoy-gateway-system"},
            spec={"targetRefs": [{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "edge"}], **spec},
        )

    return program


MIRROR = Path("/work/.mirror/envoyproxy+gateway/repo")


def test_envoy_gateways_default_is_the_hour_the_rule_names() -> None:
    """api/v1alpha1/timeout_types.go at v1.9.0: HTTPTimeout.ConnectionIdleTimeout "Default: 1 hour" (the backend
    side's, which the rule refuses to leave unset)."""
    if not (MIRROR / "HEAD").exists():
        pytest.skip("no mirror of envoyproxy/gateway on this machine (fetch it to re-read the fact)")
    source = subprocess.run(["git", "-C", str(MIRROR), "show", "v1.9.0:api/v1alpha1/timeout_types.go"],
                            capture_output=True, text=True, check=True).stdout  # fmt: skip
    http = source[source.index("type HTTPTimeout struct") :]
    idle = http[: http.index("ConnectionIdleTimeout *gwapiv1.Duration")]
    assert "Default: 1 hour." in idle.rsplit("// The idle timeout for an HTTP connection.", 1)[1]


def test_the_edge_closes_first_by_a_margin() -> None:
    assert 0 < EDGE_UPSTREAM_IDLE_SECONDS < OPENAI_KEEPALIVE_SECONDS - 10


def test_a_timeout_below_the_keep_alive_passes(violations):
    spec = {"timeout": {"http": {"connectionIdleTimeout": f"{EDGE_UPSTREAM_IDLE_SECONDS}s"}}}
    assert violations(_program(spec), RULE) == []


@pytest.mark.parametrize(
    ("timeout", "said"),
    [
        (None, "is unset (Envoy Gateway keeps idle backend connections 1 hour)"),
        ("1h", "'1h' must be a duration below"),
        (f"{OPENAI_KEEPALIVE_SECONDS}s", f"'{OPENAI_KEEPALIVE_SECONDS}s' must be a duration below"),
        ("soon", "'soon' must be a duration below"),
    ],
)
def test_an_idle_timeout_the_server_may_beat_is_refused(violations, timeout, said):
    spec = {"timeout": {"http": {"connectionIdleTimeout": timeout}}} if timeout else {"timeout": {"http": {}}}
    (found,) = violations(_program(spec), RULE)
    assert "spec.timeout.http.connectionIdleTimeout" in found.message and said in found.message


def test_a_merge_patch_leaves_it_to_the_gateways_policy_unless_it_sets_one(violations):
    patch = {"mergeType": "StrategicMerge", "requestBuffer": {"limit": "1024"}}
    assert violations(_program(patch), RULE) == []
    (found,) = violations(_program({**patch, "timeout": {"http": {"connectionIdleTimeout": "2h"}}}), RULE)
    assert "'2h'" in found.message


@pytest.mark.parametrize("stack", STACKS)
def test_every_shipped_stack_passes_with_the_rendered_timeout(stack_plan, stack):
    run = stack_plan(stack).run
    assert evaluate(run.resources, [p for p in POLICIES if p.name == RULE]) == []
    backends = [r for r in run.resources if r.type == BACKEND_TRAFFIC_POLICY and "mergeType" not in r.inputs["spec"]]
    assert backends, stack
    assert {r.inputs["spec"]["timeout"]["http"]["connectionIdleTimeout"] for r in backends} == {
        f"{EDGE_UPSTREAM_IDLE_SECONDS}s"
    }
