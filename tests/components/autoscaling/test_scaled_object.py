"""Scaling logic: replica bounds by day and night, the ScaledObject KEDA receives, the HPA arithmetic."""

from __future__ import annotations

from datetime import UTC, datetime, time

import pytest

from inference_platform.components.autoscaling.scaled_object import (
    DAY_FLAG,
    ScaleTarget,
    ScalingError,
    ScalingPolicy,
    desired_replicas,
    formula,
    hpa_desired,
    scaled_object_spec,
)
from inference_platform.components.observability.promql import Scope
from inference_platform.planners.night_schedule import NightSchedule, ReplicaBounds, replica_bounds

SCOPE = Scope(namespace="inference", job="triton")
PARIS = NightSchedule(timezone="Europe/Paris", start=time(22, 0), end=time(6, 0), fraction=0.5)
POLICY = ScalingPolicy(scope=SCOPE, prometheus_url="http://prom:9090", min_replicas=4, max_replicas=10, night=PARIS)
NIGHT = datetime(2026, 12, 3, 2, 30, tzinfo=UTC)  # 03:30 in Paris (CET)
DAY = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)
DAWN = datetime(2026, 12, 3, 5, 0, tzinfo=UTC)  # 06:00 in Paris: the day floor is back


@pytest.mark.parametrize(
    ("instant", "expected"),
    [(NIGHT, ReplicaBounds(2, 5)), (DAY, ReplicaBounds(4, 10)), (DAWN, ReplicaBounds(4, 10)),
     (datetime(2026, 12, 3, 20, 59, tzinfo=UTC), ReplicaBounds(4, 10)),
     (datetime(2026, 12, 3, 21, 0, tzinfo=UTC), ReplicaBounds(2, 5))],
)  # fmt: skip
def test_a_night_window_yields_half_the_day_bounds(instant, expected):
    assert replica_bounds(4, 10, PARIS, instant) == expected


def test_daylight_saving_moves_the_window_with_the_timezone():
    summer_night = datetime(2026, 7, 1, 20, 30, tzinfo=UTC)  # 22:30 in Paris (CEST), 21:30 in CET terms
    assert replica_bounds(4, 10, PARIS, summer_night) == ReplicaBounds(2, 5)


def test_the_floor_alone_drops_when_the_ceiling_is_kept_and_odd_counts_round_up():
    keep = NightSchedule(lower_ceiling=False, fraction=0.5)
    assert replica_bounds(3, 7, keep, datetime(2026, 1, 1, 23, 0, tzinfo=UTC)) == ReplicaBounds(2, 7)
    assert replica_bounds(1, 1, NightSchedule(), datetime(2026, 1, 1, 23, 0, tzinfo=UTC)) == ReplicaBounds(1, 1)
    assert replica_bounds(0, 4, NightSchedule(), datetime(2026, 1, 1, 23, 0, tzinfo=UTC)) == ReplicaBounds(0, 2)


def test_the_scaled_object_carries_night_floor_day_cron_and_the_clamping_formula():
    spec = scaled_object_spec(POLICY, ScaleTarget(name="triton"))
    assert spec["minReplicaCount"] == 2 and spec["maxReplicaCount"] == 10
    assert spec["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": "triton"}
    by_name = {t["name"]: t for t in spec["triggers"]}
    assert set(by_name) == {"requests", "kv", "day"}
    assert by_name["day"]["metadata"] == {
        "timezone": "Europe/Paris", "start": "0 6 * * *", "end": "0 22 * * *", "desiredReplicas": str(DAY_FLAG)
    }  # fmt: skip
    assert by_name["requests"]["metadata"]["query"] == (
        'sum(nv_trt_llm_request_metrics{namespace="inference",job="triton",model="tensorrt_llm",'
        'request_type=~"active|waiting"})'
    )
    assert by_name["requests"]["metadata"]["threshold"] == "48"
    modifiers = spec["advanced"]["scalingModifiers"]
    # Nil-safe (issue 31): a trigger past fallback.failureThreshold is nil; both demand triggers nil hold the
    # planned replicas (blind, min_replicas 4 here); the day cron nil counts as day.
    demand = "((requests == nil && kv == nil) ? 4 : max((requests ?? 0) / 48, (kv ?? 0) / 0.85))"
    assert modifiers["formula"] == f"(day ?? 2) >= 2 ? max({demand}, 4) : min(max({demand}, 2), 5)"
    assert modifiers["target"] == "1"
    assert spec["fallback"] == {"failureThreshold": 3, "replicas": 4, "behavior": "scalingModifiers"}
    assert by_name["requests"]["metadata"]["ignoreNullValues"] == "false"
    behaviour = spec["advanced"]["horizontalPodAutoscalerConfig"]["behavior"]
    assert behaviour["scaleDown"]["stabilizationWindowSeconds"] == 3600
    assert behaviour["scaleUp"]["stabilizationWindowSeconds"] == 0
    assert "GPU_UTIL" not in str(spec) and "neuroncore_utilization" not in str(spec)


def test_without_a_schedule_the_triggers_scale_on_their_own():
    spec = scaled_object_spec(ScalingPolicy(scope=SCOPE, prometheus_url="http://p", night=None), ScaleTarget(name="t"))
    assert "scalingModifiers" not in spec["advanced"] and spec["minReplicaCount"] == 1
    # Each trigger is its own metric: a missing one reports max(current, planned) replicas, never fewer.
    assert spec["fallback"]["behavior"] == "currentReplicasIfHigher"
    assert formula(ScalingPolicy(scope=SCOPE, prometheus_url="http://p", night=None)) is None


def test_neuron_scales_on_its_own_request_gauges_without_a_kv_trigger():
    neuron = ScalingPolicy(
        scope=Scope(namespace="inference", job="triton", backend="neuron"),
        prometheus_url="http://p",
        kv_cache_target=None,
    )
    spec = scaled_object_spec(neuron, ScaleTarget(name="triton"))
    queries = [t["metadata"].get("query") for t in spec["triggers"] if t["type"] == "prometheus"]
    assert queries == [
        'sum(neuron_llm_request_metrics{namespace="inference",job="triton",model="neuron_llm",request_type=~"active|waiting"})'
    ]


def test_queue_ratio_signal_uses_nvidias_recorded_ratio():
    spec = scaled_object_spec(
        ScalingPolicy(scope=SCOPE, prometheus_url="http://p", signal="queueRatio", kv_cache_target=None, night=None),
        ScaleTarget(name="t", kind="LeaderWorkerSet"),
    )
    assert spec["triggers"][0]["metadata"]["query"] == (
        'sum(triton:queue_compute:ratio{namespace="inference",job="triton",model="tensorrt_llm"})'
    )
    assert spec["triggers"][0]["metadata"]["threshold"] == "1"
    assert spec["scaleTargetRef"]["apiVersion"] == "leaderworkerset.x-k8s.io/v1"


def test_hpa_formula_and_the_bounds_in_force():
    assert hpa_desired(2, 96, 48) == 4  # 2 replicas at twice the target: double
    assert hpa_desired(4, 50, 48) == 4  # within the 10% tolerance
    assert hpa_desired(4, 12, 48) == 1
    # 300 requests in flight want ceil(300 / 48) = 7 replicas: granted by day, capped at 5 at night.
    assert desired_replicas(POLICY, {"requests": 300, "kv": 0.5}, current=4, instant=DAY) == 7
    assert desired_replicas(POLICY, {"requests": 300, "kv": 0.5}, current=4, instant=NIGHT) == 5
    # Idle: the floor in force.
    assert desired_replicas(POLICY, {"requests": 0, "kv": 0}, current=7, instant=DAY) == 4
    assert desired_replicas(POLICY, {"requests": 0, "kv": 0}, current=7, instant=NIGHT) == 2
    # A full KV cache scales out even when few requests are in flight.
    assert desired_replicas(POLICY, {"requests": 40, "kv": 3.8}, current=4, instant=DAY) == 5


@pytest.mark.parametrize(
    ("changes", "words"),
    [
        ({"min_replicas": 5, "max_replicas": 2}, "min_replicas=5"),
        ({"target_requests_per_replica": 0}, "target_requests_per_replica=0"),
        ({"kv_cache_target": 1.5}, "kv_cache_target=1.5"),
        ({"night": NightSchedule(fraction=0)}, "night.fraction"),
        ({"night": NightSchedule(timezone="Mars/Olympus")}, "night.timezone"),
        ({"night": NightSchedule(start=time(6, 0), end=time(6, 0))}, "night.start"),
    ],
)
def test_bad_policies_are_refused_naming_the_field(changes, words):
    policy = ScalingPolicy(scope=SCOPE, prometheus_url="http://p", **changes)
    with pytest.raises(ScalingError, match=words):
        scaled_object_spec(policy, ScaleTarget(name="t"))
