"""inference-platform:capacity: the plan derives replicas, autoscaler and pool bounds; every bad value is
a problem naming its key (the plan exits 2 on any SettingsError)."""

from __future__ import annotations

import copy

import pytest

from inference_platform.settings.derived import capacity_summary as summary
from inference_platform.settings.derived import derived_bounds, planned_replicas
from tests.settings.test_inference import load, problems, stack_values

DEMAND = {"tokensPerDay": 1.5e9, "isl": 2000, "osl": 500}


def test_prod_plans_its_pool_and_keeps_its_explicit_replicas():
    settings = load({}, "prod")
    bounds = derived_bounds(settings)
    assert bounds is not None
    assert bounds.hpa_min_replicas <= bounds.replicas <= bounds.hpa_max_replicas
    assert bounds.pool_max_nodes <= settings.node_pools.root["inference"].max_nodes(["us-east-1a", "us-east-1b"])
    assert planned_replicas(settings) == settings.inference.replicas == 3
    out = summary(settings)
    assert out["layout"] == "p5.48xlarge TP4" and out["monthlyUsd"]["onDemand"] > 0


def test_replicas_come_from_the_plan_when_not_set():
    values = stack_values("prod")
    inference = copy.deepcopy(values["inference"])
    inference.pop("replicas")
    settings = load({"inference": inference, "capacity": {**DEMAND, "tokensPerDay": 1e9}}, "prod")
    assert planned_replicas(settings) == derived_bounds(settings).replicas == 2
    assert derived_bounds(load({}, "dev")) is None and planned_replicas(load({}, "dev")) == 1


@pytest.mark.parametrize(
    ("capacity", "path", "words"),
    [
        ({"tokensPerDay": 0}, "capacity.tokensPerDay", ["got 0"]),
        ({"tokensPerDay": -1e9}, "capacity.tokensPerDay", ["> 0"]),
        ({**DEMAND, "nightFraction": 0}, "capacity.nightFraction", ["(0, 1]"]),
        ({**DEMAND, "nightFraction": 1.5}, "capacity.nightFraction", ["(0, 1]"]),
        ({**DEMAND, "slo": {"ttftMs": 10, "itlMs": 2}}, "capacity.slo", ["best achievable is TTFT"]),
        ({**DEMAND, "peakFactor": 0.5}, "capacity.peakFactor", ["greater than or equal to 1"]),
        ({**DEMAND, "tokensPerDay": 5e10}, "nodePools.inference.maxSize", ["planned peak needs", "raise maxSize"]),
        ({**DEMAND, "tokenPerDay": 1}, "capacity.tokenPerDay", ["did you mean 'tokensPerDay'"]),
    ],
)  # fmt: skip
def test_each_bad_value_names_its_key(capacity, path, words):
    found = problems({"capacity": capacity}, "prod")
    assert path in found, found
    for word in words:
        assert word in found[path], found[path]


def test_a_model_that_does_not_fit_and_an_unpriced_region():
    serving = copy.deepcopy(stack_values("dev")["serving"])
    found = problems({"capacity": DEMAND, "serving": {**serving, "model": "Llama-3.1-405B"}}, "dev")
    assert any(k.startswith("serving") or k == "capacity" for k in found), found
    from inference_platform.settings import load_settings

    with pytest.raises(Exception) as err:
        load_settings({**stack_values("dev"), "capacity": DEMAND}, project="p", stack="s", region="eu-west-1")
    assert "price table has no region 'eu-west-1'" in str(err.value)


def test_the_plan_reads_speculative_decoding_and_kv_reuse_from_serving():
    from types import SimpleNamespace

    from inference_platform.settings.capacity import serving_features

    # One linear chain of maxDraftLen candidates: its depth is its length.
    spec = SimpleNamespace(method="eagle3", max_draft_len=2)
    serving = SimpleNamespace(speculative=spec, kv_cache=SimpleNamespace(enable_reuse=True))
    f = serving_features(serving)
    assert f.draft_tokens == 2 and f.draft_depth == 2 and f.speculative_acceptance == 0.6
    assert f.prefix_hit_rate == 0.2 and f.tokens_per_step == pytest.approx(1 + 0.6 + 0.36)
    off = SimpleNamespace(speculative=SimpleNamespace(method="none", max_draft_len=None),
                          kv_cache=SimpleNamespace(enable_reuse=False))  # fmt: skip
    assert serving_features(off).tokens_per_step == 1.0 and serving_features(off).prefix_hit_rate == 0.0


def test_a_measured_throughput_scale_never_exports_a_ceiling_below_the_production_floor():
    # throughput_scale 3 makes prod's peak one replica; production keeps two: the ceiling follows the floor.
    factors = {"throughput_scale": {"value": 3.0, "source": "measured", "basis": "test"}}
    values = stack_values("prod")
    settings = load({"capacity": {**values["capacity"], "factors": factors}}, "prod")
    bounds = derived_bounds(settings)
    assert bounds.plan.hpa_max < 2  # what the planner alone says (the bug's input)
    assert bounds.hpa_min_replicas == 2 <= bounds.hpa_max_replicas
    out = summary(settings)
    assert out["hpa"]["minReplicas"] <= out["hpa"]["maxReplicas"]
    assert bounds.pool_max_nodes >= 1


def test_the_capacity_plan_output_prices_total_and_output_tokens():
    out = summary(load({}, "prod"))
    bounds = derived_bounds(load({}, "prod"))
    assert out["usdPerMillionTotalTokens"] == round(bounds.plan.usd_per_million_total.on_demand, 4)
    # prod plans isl 2000 / osl 500: a fifth of the tokens are output, so a total token costs a fifth as much.
    assert (out["isl"], out["osl"]) == (2000, 500)
    assert out["usdPerMillionTotalTokens"] == pytest.approx(out["usdPerMillionOutputTokens"] / 5, rel=1e-3)
