"""The ``models`` section (issue 32): several models, aliases and one canary; each bad value is one
problem naming its key, and a stack without the section is what it was."""

from __future__ import annotations

import pytest

from inference_platform.settings import SettingsError, decode_value, load_settings, stack_files
from inference_platform.settings.models import resolve, slug
from inference_platform.settings.project import load_project, load_stack_config

TAGS = {"owner": "team", "costCenter": "cc-1"}
IMAGE = {"image": {"tag": "2026.11.2"}, "model": {"engine": "llama/v1/", "tokenizer": "llama/tok/"}}
QWEN = {"serving": {"checkpoint": "Qwen/Qwen2.5-7B-Instruct"}, "inference": {"replicas": 2}}


def load(models, *, environment="development", inference=None, verification=None, serving=None):
    values = {
        "tags": TAGS,
        "models": models,
        "inference": inference if inference is not None else IMAGE,
        "edge": {"routing": {"mode": "round-robin"}},
    }  # a weighted canary's balancer (settings/models.py)
    if environment == "production":
        values["environment"] = environment
    if verification is not None:
        values["verification"] = verification
    if serving is not None:
        values["serving"] = serving
    return load_settings(values, project="p", stack="dev", region="us-west-2")


def problems(models, **kwargs):
    with pytest.raises(SettingsError) as err:
        load(models, **kwargs)
    return {p.path: p.message for p in err.value.problems}


def test_absent_is_the_single_model_stack():
    settings = load({})
    assert not settings.models.configured
    (only,) = resolve(settings.serving, settings.inference, settings.models)
    assert (only.name, only.role, only.primary, only.key) == ("Llama-3.1-8B", "current", True, "llama-3-1-8b")


def test_the_shipped_stacks_do_not_change():
    for stack in ("dev", "prod", "npu"):
        assert not stack_files.load(stack).models.configured


def test_a_second_model_and_a_canary_resolve_to_their_own_sections():
    settings = load(
        {
            "additional": {"Llama-3.1-70B": {"serving": {"tensorParallel": 4}, "inference": {"replicas": 2}}},
            "aliases": {"llama-small": "Llama-3.1-8B", "llama-big": "Llama-3.1-70B"},
            "canary": {"version": "v2", "weight": 5, "inference": {"image": {"tag": "2026.12.1"}}},
        }
    )
    rollouts = resolve(settings.serving, settings.inference, settings.models)
    assert [(r.name, r.role, r.key) for r in rollouts] == [
        ("Llama-3.1-8B", "current", "llama-3-1-8b"),
        ("Llama-3.1-70B", "current", "llama-3-1-70b"),
        ("Llama-3.1-8B", "canary", "llama-3-1-8b-v2"),
    ]
    big, canary = rollouts[1], rollouts[2]
    assert (big.serving.model, big.serving.tensor_parallel, big.inference.replicas) == ("Llama-3.1-70B", 4, 2)
    # What the second model does not write is the stack's: the same image, the same checkpoint rules.
    assert big.inference.image.tag == "2026.11.2"
    assert canary.inference.image.tag == "2026.12.1" and canary.inference.model.engine == "llama/v1/"


BIG = {"serving": {"tensorParallel": 4}}


def test_a_fallback_to_another_model_makes_that_models_server_answer_its_name():
    settings = load({"additional": {"Llama-3.1-70B": BIG}, "fallbacks": {"Llama-3.1-70B": "Llama-3.1-8B"}})
    rollouts = {r.name: r for r in resolve(settings.serving, settings.inference, settings.models)}
    # The stack's own model answers the 70B's name; the 70B answers nobody's.
    assert settings.serving.fallback_for == rollouts["Llama-3.1-8B"].serving.fallback_for == ["Llama-3.1-70B"]
    assert rollouts["Llama-3.1-70B"].serving.fallback_for is None
    both = load({"additional": {"Llama-3.1-70B": BIG},
                 "fallbacks": {"Llama-3.1-70B": "Llama-3.1-8B", "Llama-3.1-8B": "Llama-3.1-70B"}})  # fmt: skip
    big = next(r for r in resolve(both.serving, both.inference, both.models) if r.name == "Llama-3.1-70B")
    assert big.serving.fallback_for == ["Llama-3.1-8B"]
    # Written back as it was derived (the verification Job's copy of the settings) it loads; by hand it does not.
    models = settings.models.model_dump(by_alias=True, exclude_unset=True)
    again = load(models, serving={"fallbackFor": ["Llama-3.1-70B"]})
    assert again.serving.fallback_for == settings.serving.fallback_for
    found = problems(models, serving={"fallbackFor": ["Other"]})
    assert "it is set from models.fallbacks (['Llama-3.1-70B'])" in found["serving.fallbackFor"], found
    found = problems({}, serving={"fallbackFor": ["Llama-3.1-70B"]})
    assert "it is set from models.fallbacks (none falls back to this model)" in found["serving.fallbackFor"], found


@pytest.mark.parametrize(
    ("models", "path", "words"),
    [
        ({"aliases": {"llama": "nope"}}, "models.aliases.llama", "no model of this stack"),
        ({"aliases": {"Llama-3.1-8B": "Llama-3.1-8B"}}, "models.aliases.Llama-3.1-8B", "two models with one public"),
        ({"additional": {"Llama-3.1-8B": {}}}, "models.additional.Llama-3.1-8B", "two models with one public name"),
        ({"additional": {"a b": {}}}, "models.additional.a b", "expected a model id"),
        (
            {"additional": {"Llama-3.1-70B": {"serving": {"model": "Llama-3.1-8B"}}}},
            "models.additional.Llama-3.1-70B.serving.model",
            "the key is the model",
        ),
        (
            {"additional": {"Llama-3.1-70B": {"serving": {"maxBatchSize": 0}}}},
            "models.additional.Llama-3.1-70B.serving.maxBatchSize",
            "greater than or equal to 1",
        ),
        (
            {"additional": {"Llama-3.1-70B": {"inference": {"replicaz": 1}}}},
            "models.additional.Llama-3.1-70B.inference.replicaz",
            "did you mean 'replicas'",
        ),
        (
            {"fallbacks": {"Llama-3.1-8B": "Llama-3.1-70B"}},
            "models.fallbacks.Llama-3.1-8B",
            "falls back to 'Llama-3.1-70B'; expected another model of this stack",
        ),
        (
            {"additional": {"Llama-3.1-70B": BIG}, "fallbacks": {"Nope": "Llama-3.1-70B"}},
            "models.fallbacks.Nope",
            "names no model",
        ),
        (
            {"additional": {"Llama-3.1-70B": BIG}, "fallbacks": {"Llama-3.1-70B": "Llama-3.1-70B"}},
            "models.fallbacks.Llama-3.1-70B",
            "expected another model of this stack: Llama-3.1-8B",
        ),
        (
            {"additional": {"Llama-3.1-70B": {"serving": {"tensorParallel": 4, "fallbackFor": ["Llama-3.1-8B"]}}}},
            "models.additional.Llama-3.1-70B.serving.fallbackFor",
            "is set from models.fallbacks",
        ),
        ({"canary": {"version": "v2", "weight": 101, "inference": IMAGE}}, "models.canary.weight", "less than or"),
        ({"canary": {"version": "v2", "weight": -1, "inference": IMAGE}}, "models.canary.weight", "greater than or"),
        (
            {"canary": {"version": "v2", "weight": 7, "inference": IMAGE}},
            "models.canary.weight",
            "one of models.canary",
        ),
        ({"canary": {"version": "v2", "steps": [50, 10]}}, "models.canary.steps", "rising weights"),
        ({"canary": {"version": "V 2"}}, "models.canary.version", "lower-case letters"),
        ({"canary": {"weight": 5}}, "models.canary.version", "required"),
        ({"canary": {"version": "v2"}}, "models.canary", "sets neither serving nor inference"),
        ({"canary": {"version": "v2", "model": "x", "inference": IMAGE}}, "models.canary.model", "expected one of"),
        (
            {"canary": {"version": "v2", "serving": {"model": "Llama-3.1-70B"}}},
            "models.canary.serving.model",
            "not another model",
        ),
        (
            {"canary": {"version": "v2", "testerHeader": "x-api-key", "inference": IMAGE}},
            "models.canary.testerHeader",
            "already uses",
        ),
        ({"canary": {"version": "v2", "gate": {"maxTtftRatio": 0.5}}}, "models.canary.gate.maxTtftRatio", "greater"),
    ],
)
def test_bad_values_name_their_key(models, path, words):
    found = problems(models)
    assert path in found and words in found[path], found


def test_a_canary_needs_a_current_version():
    found = problems({"canary": {"version": "v2", "inference": {"image": {"tag": "x"}}}}, inference={})
    assert "has no current version" in found["models.canary"], found


def stack_values(stack):
    """A shipped stack's values as load_settings takes them (settings/stack_files.py)."""
    project = load_project(stack_files.project_dir())
    config = load_stack_config(project, stack, None)
    prefix = f"{project.name}:"
    values = {
        k[len(prefix) :]: decode_value(k[len(prefix) :], v) for k, v in config.values.items() if k.startswith(prefix)
    }
    return values, [k[len(prefix) :] for k in config.secret_keys], config.values["aws:region"]


def test_production_canaries_need_the_gate_and_automatic_rollback():
    values, secret, region = stack_values("prod")
    values = {**values, "edge": {**values["edge"], "routing": {"mode": "round-robin"}}}  # keeps the canary's weight
    canary = {"version": "v2", "weight": 5, "inference": {"image": {"digest": "sha256:" + "b" * 64}}}
    for gate, verification in (({"enabled": False}, True), ({"rollback": False}, True), ({}, False)):
        bad = {**values, "models": {"canary": {**canary, "gate": gate}}}
        bad["verification"] = {**values.get("verification", {}), "enabled": verification}
        with pytest.raises(SettingsError) as err:
            load_settings(bad, project="inference-platform", stack="prod", region=region, secret_keys=secret)
        found = {p.path: p.message for p in err.value.problems}
        assert "production canaries need the verification gate" in found["models.canary.gate"], (gate, found)
    good = {**values, "models": {"canary": canary}}
    good["verification"] = {**values.get("verification", {}), "enabled": True}
    with pytest.raises(SettingsError) as err:
        load_settings(good, project="inference-platform", stack="prod", region=region, secret_keys=secret)
    found = {p.path: p.message for p in err.value.problems}
    assert list(found) == ["verification.prometheusUrl"] and "live metrics" in found["verification.prometheusUrl"]
    good["verification"]["prometheusUrl"] = "http://prometheus.monitoring.svc:9090"
    settings = load_settings(good, project="inference-platform", stack="prod", region=region, secret_keys=secret)
    assert settings.models.canary is not None and settings.models.canary.gate.rollback


@pytest.mark.parametrize(
    ("gate", "key"),
    [
        ({"liveWindowSeconds": 30}, "models.canary.gate.liveWindowSeconds"),
        ({"liveMinRequests": 0}, "models.canary.gate.liveMinRequests"),
        ({"maxItlRatio": 0.5}, "models.canary.gate.maxItlRatio"),
    ],
)
def test_bad_live_gate_bounds_name_their_key(gate, key):
    canary = {"version": "v2", "inference": {"image": {"tag": "2026.12.1"}}, "gate": gate}
    assert key in problems({"canary": canary})


def test_the_service_names_the_gate_queries_are_the_rollouts():
    from inference_platform.components.serving.inference_service import DEFAULT_APP_NAME

    settings = load({"canary": {"version": "v2", "inference": {"image": {"tag": "2026.12.1"}}}})
    current, canary = resolve(settings.serving, settings.inference, settings.models)
    assert (current.service_name, canary.service_name) == (DEFAULT_APP_NAME, "triton-llama-3-1-8b-v2")


def test_slugs_of_two_names_may_not_meet():
    found = problems({"additional": {"Qwen.7B": QWEN, "qwen-7b": QWEN}})
    assert "same Kubernetes objects" in found["models.additional.qwen-7b"], found
    assert slug("Llama-3.1-8B") == "llama-3-1-8b"


def test_the_example_reaches_the_verification_job_and_its_gate():
    """The Job reads the settings document (settings/document.py): the canary and its gate bounds travel with it."""
    from pathlib import Path

    from inference_platform.inferctl.verify.canary_gate import limits_of
    from inference_platform.settings.document import settings_document, settings_from_document

    example = Path(__file__).parents[2] / "docs" / "examples" / "Pulumi.dev-rollout.yaml"
    settings = settings_from_document(settings_document(stack_files.load("dev", stack_file=example)))
    limits = limits_of(settings)
    assert limits is not None and (limits.weight, tuple(limits.steps), limits.min_requests) == (
        5,
        (5, 25, 50, 100),
        100,
    )
    assert (limits.ttft_p95_ms, limits.max_error_rate, limits.rollback) == (3000, 0.01, True)
    assert limits_of(stack_files.load("dev")) is None


def test_a_rollback_recorded_needs_weight_zero_and_the_state_says_where_the_canary_stands():
    canary = {"version": "v2", "inference": {"image": {"tag": "2026.12.1"}}}
    found = problems({"canary": {**canary, "weight": 25, "lastDecision": {"action": "rollback", "reason": "slow"}}})
    assert "write 0" in found["models.canary.weight"], found
    bad = problems({"canary": {**canary, "lastDecision": {"action": "retry"}}})
    assert "models.canary.lastDecision.action" in bad, bad
    states = [load({"canary": {**canary, "weight": w}}).models.canary.state for w in (0, 25, 100)]
    assert states[0].startswith("deployed at 0 %") and states[1] == "at 25 %, step 2 of 4"
    assert states[2].startswith("at the last step")


@pytest.mark.parametrize("mode", ["envoy", "inference-pool", "round-robin", None])
def test_a_weighted_canary_runs_under_every_balancer(mode):
    """The routing script draws the canary's share before the route is chosen (components/edge/model_routing.py), so
    no balancer can lose it: Envoy Gateway v1.9.0's Maglev and endpoint override drop backendRef weights
    (tests/data/upstream/model_routing_facts.json), which the split no longer uses."""
    canary = {"version": "v2", "weight": 5, "inference": {"image": {"tag": "2026.12.1"}}}
    routing = {"mode": mode} if mode else {}
    values = {"tags": TAGS, "inference": IMAGE, "edge": {"routing": routing}, "models": {"canary": canary}}
    assert load_settings(values, project="p", stack="dev", region="us-west-2").models.canary.weight == 5


def test_prod_runs_a_weighted_canary_under_its_default_picker():
    values, secret, region = stack_values("prod")
    canary = {"version": "v2", "weight": 5, "inference": {"image": {"digest": "sha256:" + "b" * 64}}}
    values = {**values, "models": {"canary": canary}}
    values["verification"] = {
        **values.get("verification", {}),
        "prometheusUrl": "http://prometheus.monitoring.svc:9090",
    }
    settings = load_settings(values, project="inference-platform", stack="prod", region=region, secret_keys=secret)
    assert settings.models.canary.weight == 5
    assert settings.edge.routing.resolved_mode(settings.environment) == "inference-pool"
