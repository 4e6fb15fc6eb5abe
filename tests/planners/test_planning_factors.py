import pytest

from inference_platform.planners.planning_factors import (
    DEFAULT_FACTORS,
    Factor,
    PlanningFactors,
    speculative_tokens_per_step,
)


def test_defaults_are_modelled_with_a_basis():
    d = DEFAULT_FACTORS.to_dict()
    assert all(v["source"] == "modelled" and v["basis"] for v in d.values())
    assert DEFAULT_FACTORS.measured_fields() == ()


def test_measured_round_trips_through_json():
    f = DEFAULT_FACTORS.with_measured("build/verify/dev/verify.json 2026-12-03", throughput_scale=0.8, itl_scale=1.2)
    back = PlanningFactors.from_json(f.to_json())
    assert back == f
    assert back.measured_fields() == ("throughput_scale", "itl_scale")
    assert back.throughput_scale.value == 0.8 and back.speculative_acceptance.source == "modelled"


def test_bad_values_and_names_are_refused():
    with pytest.raises(ValueError, match="prefix_hit_rate"):
        PlanningFactors(prefix_hit_rate=Factor(value=1.5))
    with pytest.raises(ValueError, match="throughput_scale"):
        PlanningFactors(throughput_scale=Factor(value=0))
    with pytest.raises(ValueError, match="unknown planning factors: nope"):
        PlanningFactors.from_dict({"nope": {"value": 1}})
    with pytest.raises(ValueError, match="source"):
        Factor(value=1, source="guessed")  # type: ignore[arg-type]


def test_speculative_tokens_per_step():
    assert speculative_tokens_per_step(0, 0.6) == 1.0
    assert speculative_tokens_per_step(1, 0.5) == pytest.approx(1.5)
    assert speculative_tokens_per_step(4, 0.6) == pytest.approx((1 - 0.6**5) / 0.4)
