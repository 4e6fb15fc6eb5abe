"""Issue 32: the dev stack with a second model, aliases and a canary (docs/examples/Pulumi.dev-rollout.yaml) plans
its own rollouts beside the stack's, the model routing at the edge, passes the pack, and keeps every URN the
single-model dev stack has (tests/data/urns/dev.txt): it only adds."""

from __future__ import annotations

import pytest

from inference_platform.inferctl.plan.command import make_plan
from tests.conftest import REPO

EXAMPLE = REPO / "docs" / "examples" / "Pulumi.dev-rollout.yaml"


@pytest.fixture(scope="module")
def plan():
    return make_plan(REPO, "dev", stack_file=EXAMPLE)


def test_the_example_adds_rollouts_and_routing_and_changes_no_urn(plan):
    urns = {r.urn for r in plan.run.resources}
    recorded = set((REPO / "tests" / "data" / "urns" / "dev.txt").read_text().split())
    assert recorded <= urns
    added = sorted(u.rsplit("::", 1)[1] for u in urns - recorded)
    assert "inference-qwen2-5-7b-instruct-deployment" in added
    assert "inference-llama-3-1-8b-img-2026-12-5-deployment" in added
    assert "edge-gateway-backend-inference-edge-fallback-triton" in added
    assert "edge-gateway-inference-ingress-triton-qwen2-5-7b-instruct" in added
    models = plan.run.outputs["models"]
    assert models["served"] == ["Llama-3.1-8B", "Qwen2.5-7B-Instruct", "llama-8b", "qwen-7b"]
    assert (models["canary"]["weight"], models["canary"]["nextStep"], models["canary"]["rollbackTo"]) == (5, 25, 0)
    assert models["canary"]["state"] == "at 5 %, step 1 of 4" and models["canary"]["lastDecision"] is None
    assert "reason=CanaryPromoted" in models["canary"]["decisions"]


def test_the_route_carries_the_weights_and_the_pack_passes(plan):
    route = next(r for r in plan.run.resources if r.urn.endswith("::edge-gateway-httproute-inference-edge-http"))
    rules = route.inputs["spec"]["rules"]
    weighted = next(r["backendRefs"] for r in rules if len(r.get("matches", [{}])[0].get("headers", [])) == 1)
    assert [b.get("weight") for b in weighted] == [95, 5, 1]
    canary = next(r for r in plan.run.resources if r.urn.endswith("::inference-llama-3-1-8b-img-2026-12-5-deployment"))
    assert canary.inputs["spec"]["template"]["spec"]["containers"][0]["image"].endswith(":2026.12.5")
    assert not [v for v in plan.violations if v.mandatory]
