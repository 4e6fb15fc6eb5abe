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
    # dev's envoy routing stays (the routing script draws the canary's share under any balancer): nothing is lost.
    assert recorded - urns == set()
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


def test_the_script_carries_the_weight_every_rule_is_bounded_and_the_pack_passes(plan):
    route = next(r for r in plan.run.resources if r.urn.endswith("::edge-gateway-httproute-inference-edge-http"))
    rules = route.inputs["spec"]["rules"]
    assert all(b.get("weight", 1) == 1 for r in rules for b in r.get("backendRefs", []))  # no weighted split
    extension = next(r for r in plan.run.resources if "envoyextensionpolicy" in r.urn and "x-inference-model"
                     in str(r.inputs))  # fmt: skip
    assert 'local CANARY = {["Llama-3.1-8B"]=5}' in str(extension.inputs)
    patch = next(
        r for r in plan.run.resources if r.urn.endswith("::edge-gateway-envoypatchpolicy-inference-edge-bounded-load")
    )
    with_backends = [i for i, r in enumerate(rules) if r.get("backendRefs")]
    assert [p["name"].rsplit("/", 1)[1] for p in patch.inputs["spec"]["jsonPatches"]] == [str(i) for i in with_backends]
    canary = next(r for r in plan.run.resources if r.urn.endswith("::inference-llama-3-1-8b-img-2026-12-5-deployment"))
    assert canary.inputs["spec"]["template"]["spec"]["containers"][0]["image"].endswith(":2026.12.5")
    assert not [v for v in plan.violations if v.mandatory]


def test_the_canarys_replicas_are_priced_by_inferctl_cost_and_the_summary_line(plan):
    """Issue 32: the canary's replica is one more node of its pool while it runs; the summary line (the PR comment)
    and ``inferctl cost`` name it, priced as the estimate with the canary's workload minus without it."""
    from inference_platform.inferctl.cost.canary import canary_cost, canary_line
    from inference_platform.inferctl.cost.summary import estimate_for, resources_as_dicts, summary_line, usage_for

    resources, outputs = resources_as_dicts(plan.run.resources), plan.run.outputs
    estimate = estimate_for(resources, outputs, "dev", project_root=REPO)
    canary = canary_cost(resources, outputs, estimate, usage_for("dev", project_root=REPO))
    assert canary is not None and canary.workload == outputs["models"]["canary"]["service"]
    assert (canary.model, canary.version, canary.weight, canary.replicas) == ("Llama-3.1-8B", "img-2026-12-5", 5, 1)
    (pool,) = [line for line in estimate.lines if line.name == "pool-inference-nodepool"]
    assert "triton-llama-3-1-8b-img-2026-12-5 1 x 1 accelerators" in pool.basis
    # Three one-GPU workloads on one-GPU nodes: the pool expects 3 nodes, and the canary costs one of them.
    assert canary.monthly_expected == pytest.approx(pool.monthly_expected / 3)
    assert canary.monthly_expected > 100
    line = canary_line(canary)
    assert line in summary_line(resources, outputs, "dev", project_root=REPO)
    assert line.startswith("Canary Llama-3.1-8B img-2026-12-5 at 5 %: 1 replica(s)")


def test_inferctl_cost_prints_the_canary(plan, tmp_path, capsys):
    import json

    from inference_platform.inferctl.cli import main
    from inference_platform.inferctl.plan.report import to_json

    path = tmp_path / "dev.json"
    path.write_text(json.dumps(to_json(plan)))
    assert main(["cost", str(path), "--json"]) == 0
    canary = json.loads(capsys.readouterr().out)["canary"]
    assert (canary["workload"], canary["replicas"]) == ("triton-llama-3-1-8b-img-2026-12-5", 1)
    assert canary["monthly_usd_expected"] > 100
    assert main(["cost", str(path)]) == 0
    assert "Canary Llama-3.1-8B img-2026-12-5 at 5 %: 1 replica(s)" in capsys.readouterr().out


def test_qwen_falls_back_to_the_stacks_model_whose_server_answers_its_name(plan):
    """models.fallbacks (Qwen2.5-7B-Instruct -> Llama-3.1-8B): Qwen's rule ends in the fallback Backend of the
    stack's own Service, labelled with the model it serves, and that model's pods are told to answer Qwen's name
    (serving.fallbackFor in their settings file, --answers-for at launch)."""
    import json

    from inference_platform.components.edge.model_routing import MODEL_LABEL

    route = next(r for r in plan.run.resources if r.urn.endswith("::edge-gateway-httproute-inference-edge-http"))
    qwen = next(
        rule for rule in route.inputs["spec"]["rules"]
        if any(h.get("value") == "Qwen2.5-7B-Instruct" for m in rule.get("matches", []) for h in m.get("headers", []))
    )  # fmt: skip
    refs = [(b.get("kind", "Service"), b["name"]) for b in qwen["backendRefs"]]
    assert refs[-1] == ("Backend", "inference-edge-fallback-triton"), refs
    backend = next(
        r for r in plan.run.resources if r.urn.endswith("::edge-gateway-backend-inference-edge-fallback-triton")
    )
    assert backend.inputs["metadata"]["labels"][MODEL_LABEL] == "Llama-3.1-8B"
    settings_files = [
        json.loads(text)
        for r in plan.run.resources
        if r.type == "kubernetes:core/v1:ConfigMap"
        for text in (r.inputs.get("data") or {}).values()
        if text.lstrip().startswith("{") and '"model"' in text
    ]
    served = {doc["model"]: doc.get("fallbackFor") for doc in settings_files if "model" in doc}
    assert served["Llama-3.1-8B"] == ["Qwen2.5-7B-Instruct"] and served["Qwen2.5-7B-Instruct"] is None


def test_each_other_model_scales_on_its_own_series_and_the_canary_keeps_its_replicas(plan):
    """Issue 32: every model has its own autoscaling. Qwen's current version gets a ScaledObject of its own, on its
    own Service's series (``job``), with the bounds its rollout was planned with; the canary gets none (the gate
    compares it at the replicas the settings give), and its Deployment's replicas stay Pulumi's."""
    scaled = {
        r.inputs["spec"]["scaleTargetRef"]["name"]: r.inputs["spec"]
        for r in plan.run.resources
        if r.type == "kubernetes:keda.sh/v1alpha1:ScaledObject"
    }
    assert set(scaled) == {"triton", "triton-qwen2-5-7b-instruct"}
    queries = [
        t["metadata"]["query"] for t in scaled["triton-qwen2-5-7b-instruct"]["triggers"] if "query" in t["metadata"]
    ]
    assert queries and all('job="triton-qwen2-5-7b-instruct"' in q for q in queries), queries
    own = [t["metadata"]["query"] for t in scaled["triton"]["triggers"] if "query" in t["metadata"]]
    assert all('job="triton"' in q for q in own), own
    assert plan.run.outputs["modelAutoscaling"] == {
        "qwen2-5-7b-instruct": {
            "scaledObject": "triton-qwen2-5-7b-instruct",
            "hpa": "keda-hpa-triton-qwen2-5-7b-instruct",
        }
    }
    urns = {r.urn.rsplit("::", 1)[1] for r in plan.run.resources}
    assert "inference-autoscaling-qwen2-5-7b-instruct-scaled-object" in urns
    assert not any("autoscaling-llama-3-1-8b-img" in u for u in urns)


# The production examples: prod (CUDA, inference-pool) and npu (Neuron, inference-pool), each with a second model and
# a gated canary at 5 % under the picker (the routing script draws the share). (stack, canary model, second model,
# the canary's workload, its replicas: production serves from at least 2)
PRODUCTION_EXAMPLES = [
    ("prod", "Llama-3.1-8B", "Llama-3.1-8B", "triton-llama-3-1-8b-img-2026-12-5", 2),
    ("npu", "Qwen2.5-7B-Instruct", "Qwen2.5-7B-Instruct", "triton-qwen2-5-7b-instruct-sdk-2026-12", 2),
]


@pytest.mark.parametrize(("stack", "model", "second", "workload", "replicas"), PRODUCTION_EXAMPLES)
def test_the_production_examples_plan_a_second_model_and_a_gated_canary_under_the_picker(
    stack, model, second, workload, replicas
):
    from inference_platform.inferctl.cost.canary import canary_cost
    from inference_platform.inferctl.cost.summary import estimate_for, resources_as_dicts, usage_for

    plan = make_plan(REPO, stack, stack_file=REPO / "docs" / "examples" / f"Pulumi.{stack}-rollout.yaml")
    urns = {r.urn for r in plan.run.resources}
    assert set((REPO / "tests" / "data" / "urns" / f"{stack}.txt").read_text().split()) - urns == set()
    assert not [v for v in plan.violations if v.mandatory], [v.message for v in plan.violations if v.mandatory]
    models = plan.run.outputs["models"]
    assert second in models["served"]
    canary = models["canary"]
    assert (canary["model"], canary["weight"], canary["gated"], canary["service"]) == (model, 5, True, workload)
    # Under the stack's own routing: the picker stays, the share is in the script, no weighted backendRefs.
    assert any(r.type.endswith(":InferencePool") or "endpoint-picker" in r.urn for r in plan.run.resources)
    extension = next(r for r in plan.run.resources if "envoyextensionpolicy" in r.urn
                     and "x-inference-model" in str(r.inputs))  # fmt: skip
    assert f'local CANARY = {{["{model}"]=5}}' in str(extension.inputs)
    assert any(r.type == "inference:verification:VerificationJob" for r in plan.run.resources)
    _assert_one_profile_per_rollout(plan, workload, neuron=stack == "npu")
    resources, outputs = resources_as_dicts(plan.run.resources), plan.run.outputs
    estimate = estimate_for(resources, outputs, stack, project_root=REPO)
    priced = canary_cost(resources, outputs, estimate, usage_for(stack, project_root=REPO))
    assert priced is not None and (priced.workload, priced.replicas) == (workload, replicas)
    assert priced.monthly_expected > 1000


def _assert_one_profile_per_rollout(plan, canary_service: str, *, neuron: bool) -> None:
    """The picker schedules each rollout within its own pods: one profile per rollout's Service (the stack's own
    model's current version the default), chosen by the header the routing script writes, over every serving pod;
    the Alpha profile handler comes with the flag that lets it load; the scrape policy admits the picker to all."""
    import yaml

    from inference_platform.catalog import endpoint_picker as picker

    (release,) = [r for r in plan.run.resources
                  if r.type == "kubernetes:helm.sh/v3:Release" and r.inputs.get("name") == picker.RELEASE]  # fmt: skip
    values = release.inputs["values"]["router"]
    assert values["modelServers"]["matchLabels"] == picker.SERVER_POD_LABELS
    epp = values["epp"]
    assert epp["pluginsConfigFile"] == picker.PER_MODEL_PLUGINS_FILE and epp["flags"][picker.EXPERIMENTAL_FLAG] is True
    config = yaml.safe_load(epp["pluginsCustomConfig"][picker.PER_MODEL_PLUGINS_FILE])
    services = {r.inputs["metadata"]["name"] for r in plan.run.resources if r.type == "kubernetes:core/v1:Service"}
    names = [p["name"] for p in config["schedulingProfiles"]]
    assert canary_service in names and set(names) <= services and len(names) >= 3, names
    (handler,) = [p for p in config["plugins"] if p["type"] == picker.PROFILE_HANDLER]
    assert handler["parameters"] == {"headerName": picker.PROFILE_HEADER, "defaultProfile": names[0]}
    scorers = (picker.neuron_plugins() if neuron else picker.tensorrt_llm_plugins())["schedulingProfiles"][0]["plugins"]
    filters = {
        p["name"]: p["parameters"]["matchLabels"] for p in config["plugins"] if p["type"] == picker.ROLLOUT_FILTER
    }
    for profile in config["schedulingProfiles"]:
        first, *rest = profile["plugins"]
        assert filters[first["pluginRef"]] == {"app.kubernetes.io/name": profile["name"]} and rest == scorers
    extension = next(r for r in plan.run.resources if "envoyextensionpolicy" in r.urn
                     and "x-inference-model" in str(r.inputs))  # fmt: skip
    assert f'local PROFILE = "{picker.PROFILE_HEADER}"' in str(extension.inputs)
    assert all(f'"{name}"' in str(extension.inputs) for name in names)
    (scrape,) = [r for r in plan.run.resources if r.type == "kubernetes:networking.k8s.io/v1:NetworkPolicy"
                 and r.inputs["metadata"]["name"] == "from-endpoint-picker"]  # fmt: skip
    assert scrape.inputs["spec"]["podSelector"]["matchLabels"] == picker.SERVER_POD_LABELS
