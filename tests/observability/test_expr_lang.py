"""The expr-lang evaluator against the language's own rules, and the ScaledObject's shipped formula
against the replica arithmetic the plan and the docs promise (``desired_replicas``): evaluated as a
string, for every stack's policy, by day and by night, over generated trigger values."""

from __future__ import annotations

import re
from datetime import UTC, datetime, time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inference_platform.components.autoscaling.scaled_object import (
    ScaleTarget,
    ScalingPolicy,
    desired_replicas,
    scaled_object_spec,
    triggers,
)
from inference_platform.components.observability.promql import Scope
from inference_platform.planners.night_schedule import NightSchedule
from tests.observability.expr_lang import ExprError, evaluate
from tests.observability.keda_hpa import recommendation


@pytest.mark.parametrize(
    ("formula", "value"),
    [
        ("1 + 2 * 3 - 4 / 8", 6.5),  # / is float division
        ("10 - 4 - 3", 3),  # left-associative
        ("2 ** 3 ** 2", 512.0),  # right-associative power
        ("-2 ** 2", -4.0),  # unary minus binds looser than **
        ("-a * 2", -6),
        ("7 % 3", 1),
        ("-7 % 3", -1),  # Go's remainder keeps the dividend's sign
        ("true ? 1 : false ? 2 : 3", 1),
        ("false ? 1 : false ? 2 : 3", 3),  # the else branch nests to the right
        ("a >= 2 ? 10 : 20", 10),
        ("1 < 2 == true", True),  # comparisons share one level, left to right
        ("not true || true", True),  # not binds tighter than ||
        ("max(1, 2.5, 2) + min(a, 4)", 5.5),
        ("ceil(2.1) + floor(2.9) + abs(-1) + round(2.5) + round(-2.5)", 6.0),  # round: half away from 0
    ],
)
def test_evaluator_follows_expr_lang(formula, value):
    assert evaluate(formula, {"a": 3}) == value


@pytest.mark.parametrize(
    ("formula", "words"),
    [("b + 1", "unknown name 'b'"), ("a in [1]", "outside the evaluated subset"), ("a ?? 1", "outside"),
     ("upper(a)", "function 'upper'"), ("(a + 1", "expected ')'"), ("a 1", "after the expression"),
     ("7.5 % 2", "needs integers"), ('"x"', "unexpected")],
)  # fmt: skip
def test_evaluator_refuses_what_it_does_not_know(formula, words):
    with pytest.raises(ExprError, match=re.escape(words)):
        evaluate(formula, {"a": 3})


SCOPE = Scope(namespace="inference", job="triton")
DAY = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)
NIGHT = datetime(2026, 12, 3, 23, 0, tzinfo=UTC)
POLICIES = {
    "default night (halves both bounds)": ScalingPolicy(scope=SCOPE, prometheus_url="http://p:9090", min_replicas=1,
                                                        max_replicas=4, target_requests_per_replica=12),
    "day 4-10, Paris night": ScalingPolicy(scope=SCOPE, prometheus_url="http://p:9090", min_replicas=4, max_replicas=10,
                                           night=NightSchedule(timezone="UTC", start=time(22), end=time(6))),
    "ceiling kept at night": ScalingPolicy(scope=SCOPE, prometheus_url="http://p:9090", min_replicas=3, max_replicas=7,
                                           night=NightSchedule(lower_ceiling=False, fraction=0.5)),
    "queue ratio, no kv": ScalingPolicy(scope=SCOPE, prometheus_url="http://p:9090", min_replicas=2, max_replicas=8,
                                        signal="queueRatio", kv_cache_target=None),
    "large, day 4-24": ScalingPolicy(scope=SCOPE, prometheus_url="http://p:9090", min_replicas=4, max_replicas=24),
    "no night schedule": ScalingPolicy(scope=SCOPE, prometheus_url="http://p:9090", min_replicas=2, max_replicas=6,
                                       night=None),
}  # fmt: skip


@settings(max_examples=600, deadline=None)
@given(
    name=st.sampled_from(sorted(POLICIES)),
    load=st.floats(min_value=0, max_value=2_000, allow_nan=False),
    kv=st.floats(min_value=0, max_value=20, allow_nan=False),
    current=st.integers(min_value=1, max_value=30),
    day=st.booleans(),
)
def test_the_shipped_formula_recommends_what_desired_replicas_says(name, load, kv, current, day):
    policy = POLICIES[name]
    spec = scaled_object_spec(policy, ScaleTarget(name="triton"))
    totals = {t.name: (kv if t.name == "kv" else load) for t in triggers(policy)}
    shipped = recommendation(spec, totals, day=day, current=current)
    assert shipped == desired_replicas(policy, totals, current=current, instant=DAY if day else NIGHT), spec
