"""Each stack's cold start from its settings, and the autoscaling ramp check (issue 21)."""

from __future__ import annotations

import pytest

from inference_platform.planners import cold_start
from inference_platform.settings import SettingsError, derived, load_settings
from inference_platform.settings import cold_start as settings_cold_start
from tests.settings.test_inference import load, stack_values


@pytest.mark.parametrize("stack", ["dev", "prod", "npu"])
def test_every_shipped_stack_models_its_cold_start_and_passes_the_ramp_check(stack):
    result = derived.cold_start_model(load({}, stack))
    assert result is not None and result.new_node_s > result.existing_node_s > 0
    before = cold_start.model(settings_cold_start.before_fix(result.inputs))
    assert result.new_node_s <= before.new_node_s


def test_prod_stages_on_nvme_with_a_parallel_copy():
    inputs = derived.cold_start_model(load({}, "prod")).inputs
    assert inputs.local_nvme and inputs.copy_streams > 1 and inputs.source == "fsx"
    assert inputs.pods_per_node == 2 and inputs.instance_type == "p5.48xlarge"


def _problems(values, stack="prod"):
    region = {"dev": "us-west-2", "prod": "us-east-1", "npu": "us-east-2"}[stack]
    with pytest.raises(SettingsError) as err:
        load_settings({**stack_values(stack), **values}, project="p", stack="s", region=region)
    return err.value.problems


def test_a_target_without_headroom_for_the_ramp_is_refused_naming_the_key():
    auto = {**stack_values("prod").get("autoscaling", {}), "targetRequestsPerReplica": 63, "rampPercentPerHour": 200}
    found = [p for p in _problems({"autoscaling": auto}) if "headroom" in p.message]
    assert [p.path for p in found] == ["autoscaling.targetRequestsPerReplica"]
    assert "cold start" in found[0].message or "scale-up" in found[0].message


def test_fsx_starving_simultaneous_starts_names_its_throughput():
    fsx = {**stack_values("prod")["fsx"], "perUnitStorageThroughput": 125}
    auto = {**stack_values("prod").get("autoscaling", {}), "scaleUp": {"pods": 8}, "rampPercentPerHour": 100,
            "targetRequestsPerReplica": 48}  # fmt: skip
    keys = [p.path for p in _problems({"fsx": fsx, "autoscaling": auto}) if "headroom" in p.message]
    assert keys == ["fsx.perUnitStorageThroughput"]


def test_ramp_zero_turns_the_check_off():
    auto = {**stack_values("prod").get("autoscaling", {}), "targetRequestsPerReplica": 64, "rampPercentPerHour": 0}
    settings = load({"autoscaling": auto}, "prod")
    assert settings.autoscaling.ramp_percent_per_hour == 0


def test_the_default_target_leaves_the_headroom_the_ramp_needs():
    """Scale-up headroom from the cold start: unset, the target drops below 0.75 x maxBatchSize as needed."""
    settings = load({"autoscaling": {"rampPercentPerHour": 300}}, "prod")
    share = derived.max_share(settings)
    assert share is not None and share < 0.75
    target = settings.autoscaling.target_requests(settings.serving.max_batch_size, share)
    assert target == int(share * settings.serving.max_batch_size) < 48
    assert derived.cold_start_summary(settings)["targetShare"] <= share


def _headroom_keys(values, stack="prod"):
    return [p.path for p in _problems(values, stack) if "headroom" in p.message or "day ceiling" in p.message]


def test_the_target_is_judged_against_what_a_replica_holds_within_the_slo():
    """At ITL 20 ms a prod replica holds 43 requests within the SLO, not maxBatchSize 64: target 48 (75 %
    of the batch, allowed by the batch alone) leaves no headroom, and the derived target drops below it."""
    capacity = {**stack_values("prod")["capacity"], "slo": {"ttftMs": 400, "itlMs": 20}}
    auto = {**stack_values("prod").get("autoscaling", {}), "targetRequestsPerReplica": 48}
    found = [p for p in _problems({"capacity": capacity, "autoscaling": auto}) if "headroom" in p.message]
    assert [p.path for p in found] == ["autoscaling.targetRequestsPerReplica"]
    assert "holds 43 requests within the SLO (set by capacity.slo)" in found[0].message
    settings = load({"capacity": capacity}, "prod")
    hold = settings_cold_start.replica_hold(derived._sections(settings), "us-east-1")
    assert (hold.requests, hold.limit) == (43, "capacity.slo")
    target = settings.autoscaling.target_requests(settings.serving.max_batch_size, derived.max_share(settings))
    assert target < 43 / (1 + 0.2) < 48


def test_a_derived_target_that_would_need_less_than_one_request_refuses_the_ramp():
    """npu holds 8 requests; at 5000 %/h the load grows more than 8x during a cold start: even a target of 1
    is too late, refused naming the ramp (never silently rendered as 1)."""
    found = [p for p in _problems({"autoscaling": {"rampPercentPerHour": 5000}}, "npu") if "headroom" in p.message]
    assert [p.path for p in found] == ["autoscaling.rampPercentPerHour"]
    assert "even the lowest autoscaling target (1 request per replica)" in found[0].message
    assert "lower autoscaling.rampPercentPerHour to at most" in found[0].message


def test_the_ceiling_must_carry_the_planned_peak_plus_the_cold_start_growth():
    # Explicit: prod's peak needs 3 replicas of it, 2 cannot carry it.
    auto = {**stack_values("prod").get("autoscaling", {}), "minReplicas": 2, "maxReplicas": 2}
    inference = {k: v for k, v in stack_values("prod")["inference"].items() if k != "replicas"}
    assert "autoscaling.maxReplicas" in _headroom_keys({"autoscaling": auto, "inference": inference})
    # Derived: 2.4 replicas' worth at the peak plans a ceiling of 3 (at the plan's 80 % target), but with the
    # growth during one cold start (~27 %) it needs 4: named, with what to set.
    from inference_platform.settings.derived import derived_bounds

    settings = load({}, "prod")
    p = derived_bounds(settings).plan
    per_day = 2.4 / (p.peak.output_tps / p.option.tokens_per_s_per_replica) * settings.capacity.tokens_per_day
    capacity = {**stack_values("prod")["capacity"], "tokensPerDay": per_day}
    found = [p for p in _problems({"capacity": capacity}) if "day ceiling" in p.message]
    assert [p.path for p in found] == ["autoscaling.maxReplicas"] and "at least 4" in found[0].message


def test_one_scale_up_starts_no_more_than_the_derived_ceiling():
    """prod sets no maxReplicas: scaleUp.pods 4 starts at most the 3 replicas its day ceiling allows."""
    settings = load({}, "prod")
    assert settings.autoscaling.max_replicas is None and settings.autoscaling.scale_up.pods == 4
    assert derived.cold_start_model(settings).inputs.starts_at_once == 3
    inputs = settings_cold_start.inputs_for(derived._sections(settings), 2)
    assert inputs.starts_at_once == 2


def test_queue_ratio_and_the_kv_trigger_are_judged():
    prod_auto = stack_values("prod").get("autoscaling", {})
    # queueRatio fires with replicas already full: no headroom, refused at a ramp naming the signal...
    found = [p for p in _problems({"autoscaling": {**prod_auto, "signal": "queueRatio"}}) if "headroom" in p.message]
    assert [p.path for p in found] == ["autoscaling.signal"] and "cannot be judged" in found[0].message
    # ...unless the KV trigger (TensorRT-LLM) fires early enough (603 sequences fit: 0.05 x 603 = 30 requests).
    load({"autoscaling": {**prod_auto, "signal": "queueRatio", "kvCacheTarget": 0.05}}, "prod")
    load({"autoscaling": {**prod_auto, "signal": "queueRatio", "rampPercentPerHour": 0}}, "prod")
    # The HPA follows the earlier trigger: a target beyond the batch is rescued by an early KV trigger, and
    # when both fire too late both are named.
    load({"autoscaling": {**prod_auto, "targetRequestsPerReplica": 600, "kvCacheTarget": 0.05}}, "prod")
    keys = _headroom_keys({"autoscaling": {**prod_auto, "targetRequestsPerReplica": 600, "kvCacheTarget": 0.1}})
    assert sorted(keys) == ["autoscaling.kvCacheTarget", "autoscaling.targetRequestsPerReplica"]
