"""The schedule read back from a rendered ScaledObject enforces, hour by hour, the bounds KEDA will."""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta

import pytest

from inference_platform.components.autoscaling.scaled_object import (
    ScaleTarget,
    ScalingPolicy,
    bounds,
    scaled_object_spec,
)
from inference_platform.components.observability.promql import Scope
from inference_platform.planners import node_hours
from inference_platform.planners.night_schedule import NightSchedule
from inference_platform.planners.node_hours import Bounds, Load

SCOPE = Scope(namespace="inference", job="triton")


@pytest.mark.parametrize(
    ("day_min", "day_max", "night"),
    [
        (3, 3, NightSchedule()),
        (2, 8, NightSchedule(fraction=0.25, keep_at_least=2)),
        (4, 6, NightSchedule(lower_ceiling=False)),
        (1, 2, NightSchedule(timezone="America/New_York", start=time(23, 30), end=time(7, 0))),
        (2, 5, None),
    ],
)
def test_read_schedule_matches_the_renderers_bounds_every_half_hour(day_min, day_max, night):
    policy = ScalingPolicy(scope=SCOPE, prometheus_url="http://p:9090", min_replicas=day_min, max_replicas=day_max,
                           night=night)  # fmt: skip
    schedule = node_hours.schedule_of(scaled_object_spec(policy, ScaleTarget(name="triton")))
    start = datetime(2026, 1, 15, tzinfo=UTC)  # the offset date's season: standard time
    for step in range(48):
        instant = start + timedelta(minutes=30 * step)
        expected = bounds(policy, instant)
        got = schedule.day if schedule.is_day(instant.hour * 60 + instant.minute) else schedule.night
        assert (got.floor, got.ceiling) == (expected.floor, expected.ceiling), instant


def test_segments_average_the_pool_over_the_day():
    schedule = node_hours.Schedule(Bounds(4, 4), Bounds(1, 1), 6 * 60, 22 * 60)
    loads = [Load("a", "gpu", 8, 4, schedule), Load("b", "gpu", 4, 1)]
    parts = node_hours.segments(loads, per_node=8, shards=1, lo=1, hi=10)
    assert sorted((p.hours, p.nodes) for p in parts) == [(8.0, 2), (16.0, 5)]
    assert node_hours.expected_nodes(parts) == pytest.approx((16 * 5 + 8 * 2) / 24)
    capped = node_hours.segments(loads, per_node=8, shards=1, lo=3, hi=4)
    assert sorted((p.hours, p.nodes) for p in capped) == [(8.0, 3), (16.0, 4)]
