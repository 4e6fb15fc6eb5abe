"""The autoscaling settings and the bad inputs of issue 12 §2: each is reported naming its key (the
plan exits 2 on any SettingsError), and the derived bounds follow the rollout and the pool."""

from __future__ import annotations

import pytest

from inference_platform.settings import SettingsError
from inference_platform.settings.autoscaling import serving_slots
from inference_platform.settings.base import CheckContext
from tests.settings.test_inference import load, problems


def test_defaults_follow_the_rollout_and_the_pool():
    settings = load({})
    auto = settings.autoscaling
    assert auto.enabled and auto.signal == "requests" and auto.night.fraction == 0.5
    assert auto.bounds(replicas=settings.inference.replicas, slots=3) == (settings.inference.replicas, 3)
    assert auto.target_requests(64) == 48
    assert auto.scale_down.stabilization_seconds >= settings.inference.probes.startup_seconds
    schedule = auto.schedule(production=True)
    assert schedule is not None and schedule.night_value(3) == 2 and schedule.night_value(2) == 2
    assert auto.schedule(production=False).night_value(2) == 1


@pytest.mark.parametrize(
    ("autoscaling", "path", "words"),
    [
        ({"targetRequestsPerReplica": 0}, "autoscaling.targetRequestsPerReplica", ["greater than or equal to 0.001"]),
        ({"kvCacheTarget": -0.1}, "autoscaling.kvCacheTarget", ["greater than or equal to 0.001"]),
        ({"queueRatioTarget": 0}, "autoscaling.queueRatioTarget", ["greater than or equal to 0.001"]),
        ({"minReplicas": 3, "maxReplicas": 2}, "autoscaling.minReplicas", ["3", "above maxReplicas (2)"]),
        ({"night": {"fraction": 0}}, "autoscaling.night.fraction", ["greater than 0"]),
        ({"night": {"fraction": 1.5}}, "autoscaling.night.fraction", ["less than or equal to 1"]),
        ({"night": {"timezone": "Europe/Pariss"}}, "autoscaling.night.timezone", ["'Europe/Pariss'", "IANA"]),
        ({"night": {"start": "06:00", "end": "06:00"}}, "autoscaling.night.end", ["empty or the whole day"]),
        ({"night": {"start": "25:00"}}, "autoscaling.night.start", ["HH:MM"]),
        ({"scaleDown": {"stabilizationSeconds": 300}}, "autoscaling.scaleDown.stabilizationSeconds",
         ["300", "inference.probes.startupSeconds 1200"]),
        ({"signal": "gpuUtilization"}, "autoscaling.signal", ["'requests' or 'queueRatio'"]),
        ({"maxReplics": 2}, "autoscaling.maxReplics", ["did you mean 'maxReplicas'"]),
    ],
)  # fmt: skip
def test_each_bad_value_names_its_key(autoscaling, path, words):
    found = problems({"autoscaling": autoscaling})
    assert path in found, found
    for word in words:
        assert word in found[path], found[path]


def test_a_ceiling_that_does_not_fit_the_pool_is_refused():
    found = problems({"autoscaling": {"maxReplicas": 50}}, stack="prod")
    assert "autoscaling.maxReplicas" in found
    assert "does not fit serving.nodePool 'inference'" in found["autoscaling.maxReplicas"]


def test_production_keeps_two_replicas():
    found = problems({"autoscaling": {"minReplicas": 1}}, stack="prod")
    assert "production serves from at least 2" in found["autoscaling.minReplicas"]


def test_the_shipped_stacks_derive_bounds_that_fit():
    for stack in ("dev", "prod", "npu"):
        settings = load({}, stack)
        ctx = CheckContext(
            stack=stack,
            environment=settings.environment,
            region=settings.region,
            sections={"serving": settings.serving, "inference": settings.inference, "nodePools": settings.node_pools,
                      "network": settings.network},
        )  # fmt: skip
        slots = serving_slots(ctx)
        if slots is None:
            continue  # no rollout yet in this stack
        low, high = settings.autoscaling.bounds(settings.inference.replicas, slots)
        assert 0 < low <= high <= slots, (stack, low, high, slots)


def test_disabled_autoscaling_checks_nothing():
    load({"autoscaling": {"enabled": False, "minReplicas": 5, "maxReplicas": 1}})
    with pytest.raises(SettingsError):
        load({"autoscaling": {"enabled": False, "signal": "cpu"}})
