"""The feature matrix and the serving settings agree: every engine feature the matrix marks missing on a
backend is refused there by the settings, naming the matrix's key, and nothing else is."""

from __future__ import annotations

import copy

import pytest

from inference_platform.catalog import serving_features
from inference_platform.settings.base import CheckContext
from inference_platform.settings.serving import ServingSettings

CTX = CheckContext(stack="dev", environment="development", region=None)
FEATURE_KEYS = {f.key for f in serving_features.FEATURES}


def _merge(base: dict, fragment: dict) -> dict:
    out = copy.deepcopy(base)
    for key, value in fragment.items():
        out[key] = _merge(out.get(key, {}), value) if isinstance(value, dict) else value
    return out


def _feature_problem_keys(fragment: dict) -> set[str]:
    """The feature keys the settings refuse for this section (other checks of the section are not ours)."""
    settings = ServingSettings.model_validate(_merge(serving_features.NEURON_BASELINE, fragment))
    return {p.path for p in settings.problems(CTX)} & FEATURE_KEYS


def test_the_neuron_baseline_turns_every_feature_off():
    assert _feature_problem_keys({}) == set()


@pytest.mark.parametrize("feature", serving_features.unsupported("neuron"), ids=lambda f: f.key)
def test_a_feature_neuron_lacks_is_refused_naming_its_key(feature):
    refused = _feature_problem_keys(feature.enable)
    assert feature.key in refused
    assert refused <= {f.key for f in serving_features.unsupported("neuron")}


@pytest.mark.parametrize("feature", serving_features.FEATURES, ids=lambda f: f.key)
def test_the_same_feature_passes_on_the_gpu_path(feature):
    section = _merge({k: v for k, v in serving_features.NEURON_BASELINE.items() if k != "backend"}, feature.enable)
    assert {p.path for p in ServingSettings.model_validate(section).problems(CTX)} & {feature.key} == set()


def test_the_gpu_path_has_every_feature():
    assert serving_features.unsupported("tensorrtllm") == ()
    with pytest.raises(ValueError, match="expected one of tensorrtllm, neuron"):
        serving_features.unsupported("tpu")


def test_the_matrix_names_every_feature_once():
    keys = [f.key for f in serving_features.FEATURES]
    assert len(keys) == len(set(keys))
    table = serving_features.matrix_markdown()
    assert all(f"`{k}`" in table for k in keys) and table.count("\n") == len(keys) + 1


def test_docs_show_the_matrix_as_the_catalog_has_it(repo):
    assert serving_features.matrix_markdown() in (repo / "docs" / "serving.md").read_text()
