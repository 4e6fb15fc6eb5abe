"""One endpoint picker for every rollout of a stack (issue 32, ``edge.routing.mode inference-pool``): a scheduling
profile per rollout (each model's current version, its canary), each keeping its own pods and scoring as the chart's
default profile does, run by the profile the edge's routing script names in a header.

- the upstream facts behind it hold at llm-d-router v0.10.0 (tests/data/upstream/endpoint_picker_profiles_v0.10.0.json,
  re-read from the mirror where this machine has one), and our names and weights are the ones quoted there;
- the release carries its own file and the flag the Alpha profile handler needs, and only when there are several
  rollouts: a one-model stack's picker is what it was;
- the pack refuses the configurations the picker would not start with, or that would refuse requests;
- the script names a profile only where one exists (the edge test on the real Envoy shows it writes them:
  tests/inferctl/serving/test_model_rollouts_edge.py).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from inference_platform.catalog import endpoint_picker as picker
from inference_platform.components.edge.model_routing import ModelBackend, ModelRoute, ModelRouting
from inference_platform.policies.rules.endpoint_picker import config_problems, release_problems
from tests.upstream_quotes import assert_quote_holds

FACTS = json.loads(
    (Path(__file__).parents[2] / "data" / "upstream" / "endpoint_picker_profiles_v0.10.0.json").read_text()
)
QUOTES = "\n".join(f["quote"] for f in FACTS["facts"])
PROFILES = (
    picker.RolloutProfile("triton", {"app.kubernetes.io/name": "triton"}),
    picker.RolloutProfile("triton-canary", {"app.kubernetes.io/name": "triton-canary"}),
    picker.RolloutProfile("triton-qwen", {"app.kubernetes.io/name": "triton-qwen"}),
)


def values(**kwargs):
    return picker.chart_values(
        serving_labels=picker.SERVER_POD_LABELS, serving_port=9000, system_affinity={}, tolerations=[], **kwargs
    )


def per_rollout_config(neuron: bool = False) -> dict:
    epp = values(profiles=PROFILES, default_profile="triton", neuron=neuron)["router"]["epp"]
    return yaml.safe_load(epp["pluginsCustomConfig"][picker.PER_MODEL_PLUGINS_FILE])


@pytest.mark.parametrize("fact", FACTS["facts"], ids=lambda f: f"{f['path'].rsplit('/', 1)[1]}:{f['quote'][:30]}")
def test_the_upstream_facts_hold_at_their_tag(fact) -> None:
    assert_quote_holds(fact)


def test_our_names_and_the_default_weights_are_the_quoted_ones() -> None:
    for name in (picker.PROFILE_HANDLER, picker.ROLLOUT_FILTER, picker.EXPERIMENTAL_FLAG):
        assert f'"{name}"' in QUOTES or f"--{name}" in QUOTES, name
    assert 'json:"headerName"' in QUOTES and 'json:"defaultProfile"' in QUOTES
    quoted = re.findall(r"pluginRef: (\S+)\n\s+weight: (\d+)", QUOTES)
    (profile,) = picker.tensorrt_llm_plugins()["schedulingProfiles"]
    assert [(p["pluginRef"], str(p["weight"])) for p in profile["plugins"]] == quoted
    assert picker.PROFILE_HEADER.lower() == picker.PROFILE_HEADER  # the picker lowercases the name it reads


@pytest.mark.parametrize("neuron", [False, True])
def test_each_rollout_gets_a_profile_keeping_its_pods_and_scoring_as_the_default(neuron) -> None:
    epp = values(profiles=PROFILES, default_profile="triton", neuron=neuron)["router"]["epp"]
    assert epp["pluginsConfigFile"] == picker.PER_MODEL_PLUGINS_FILE
    assert epp["flags"] == {"secure-serving": False, picker.EXPERIMENTAL_FLAG: True}
    config = per_rollout_config(neuron)
    base = picker.neuron_plugins() if neuron else picker.tensorrt_llm_plugins()
    assert config["plugins"][: len(base["plugins"])] == base["plugins"]
    filters = {p["name"]: p for p in config["plugins"] if p["type"] == picker.ROLLOUT_FILTER}
    (handler,) = [p for p in config["plugins"] if p["type"] == picker.PROFILE_HANDLER]
    assert handler["parameters"] == {"headerName": picker.PROFILE_HEADER, "defaultProfile": "triton"}
    assert [p["name"] for p in config["schedulingProfiles"]] == [p.name for p in PROFILES]
    for rollout, profile in zip(PROFILES, config["schedulingProfiles"], strict=True):
        first, *scoring = profile["plugins"]
        assert filters[first["pluginRef"]]["parameters"] == {"matchLabels": dict(rollout.pod_labels)}
        assert scoring == base["schedulingProfiles"][0]["plugins"]
    assert config_problems(epp["pluginsCustomConfig"][picker.PER_MODEL_PLUGINS_FILE], epp["flags"]) == []


def test_one_rollout_keeps_the_picker_as_it_was() -> None:
    for profiles in ((), PROFILES[:1]):
        plain = values(profiles=profiles, default_profile="triton")["router"]["epp"]
        assert plain["flags"] == {"secure-serving": False}
        assert "pluginsConfigFile" not in plain and "pluginsCustomConfig" not in plain
        neuron = values(profiles=profiles, default_profile="triton", neuron=True)["router"]["epp"]
        assert neuron["pluginsConfigFile"] == picker.NEURON_PLUGINS_FILE and neuron["flags"] == plain["flags"]


def test_profiles_are_distinct_and_include_the_default() -> None:
    with pytest.raises(ValueError, match="distinct"):
        picker.profiled(picker.tensorrt_llm_plugins(), [PROFILES[0], PROFILES[0]], "triton")
    with pytest.raises(ValueError, match="default 'nope'"):
        picker.profiled(picker.tensorrt_llm_plugins(), PROFILES, "nope")


def test_the_pack_refuses_a_configuration_the_picker_would_not_start_with_or_that_refuses_requests() -> None:
    release = {"chart": picker.CHART.chart, "values": values(profiles=PROFILES, default_profile="triton")}
    assert release_problems(release) == []
    text = yaml.safe_dump(per_rollout_config())
    (alpha,) = config_problems(text, {"secure-serving": False})
    assert "header-profile-handler is Alpha" in alpha and f"router.epp.flags.{picker.EXPERIMENTAL_FLAG}" in alpha
    flags = {picker.EXPERIMENTAL_FLAG: True}
    wrong_default = per_rollout_config()
    next(p for p in wrong_default["plugins"] if p["type"] == picker.PROFILE_HANDLER)["parameters"].pop("defaultProfile")
    (refused,) = config_problems(yaml.safe_dump(wrong_default), flags)
    assert "defaultProfile 'decode' is none of the profiles" in refused and "429" in refused
    undeclared = per_rollout_config()
    undeclared["plugins"] = [p for p in undeclared["plugins"] if p.get("name") != "triton-qwen-pods"]
    (missing,) = config_problems(yaml.safe_dump(undeclared), flags)
    assert "'triton-qwen-pods', never declared" in missing
    assert config_problems("plugins: [", flags)[0].startswith("the picker's configuration is not YAML")


def _routing(**kwargs) -> ModelRouting:
    here, there = "inference", "elsewhere"
    return ModelRouting(
        models=(
            ModelRoute(
                name="a",
                current=ModelBackend(service="triton", namespace=here, port=9000),
                canary=ModelBackend(service="triton-canary", namespace=here, port=9000),
                canary_weight=5,
            ),
            ModelRoute(name="b", current=ModelBackend(service="triton-b", namespace=there, port=9000)),
        ),
        **kwargs,
    )


def test_the_script_names_only_profiles_the_picker_has() -> None:
    routing = _routing(picker_profiles=True)
    # The picker watches its own namespace: a rollout elsewhere gets no profile, and its requests none.
    assert [p.name for p in routing.rollout_profiles()] == ["triton", "triton-canary"]
    assert 'local ROLLOUTS = {["a"]={current="triton",canary="triton-canary"},["b"]={current=nil,canary=nil}}' in (
        routing.lua
    )
    # Without the picker the script writes no profile (and removes nothing it does not know of).
    assert "local PROFILE = nil" in _routing().lua and "local ROLLOUTS = {}" in _routing().lua
