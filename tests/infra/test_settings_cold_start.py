"""Each stack's cold start from its settings, and the autoscaling ramp check (issue 21)."""

from __future__ import annotations

import pytest

from components.catalog import cold_start
from infra.settings import SettingsError, load_settings
from infra.settings import cold_start as settings_cold_start
from tests.infra.test_settings_inference import load, stack_values


@pytest.mark.parametrize("stack", ["dev", "prod", "npu"])
def test_every_shipped_stack_models_its_cold_start_and_passes_the_ramp_check(stack):
    result = settings_cold_start.for_settings(load({}, stack))
    assert result is not None and result.new_node_s > result.existing_node_s > 0
    before = cold_start.model(settings_cold_start.before_fix(result.inputs))
    assert result.new_node_s <= before.new_node_s


def test_prod_stages_on_nvme_with_a_parallel_copy():
    inputs = settings_cold_start.for_settings(load({}, "prod")).inputs
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
    share = settings_cold_start.max_share(settings)
    assert share is not None and share < 0.75
    target = settings.autoscaling.target_requests(settings.serving.max_batch_size, share)
    assert target == int(share * settings.serving.max_batch_size) < 48
    assert settings_cold_start.summary(settings)["targetShare"] <= share
