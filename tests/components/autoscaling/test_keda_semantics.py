"""The rendered ScaledObject against KEDA v2.20.2's pinned behaviour (tests/data/upstream/keda_v2.20.2_fallback.json,
ported in inference_platform.planners.keda with expr-lang v1.17.8's semantics): scaling survives a failing signal.

- One failing trigger never freezes the interactive scaling for longer than ``failureThreshold`` reads: past it, the
  trigger is nil in the formula and the other decides; every demand trigger missing leaves the planned replicas; the
  batch queue failing means "no backfill", never "no scaling".
- Vanished series are a failure (``ignoreNullValues: "false"``), not zero demand that drops the pool to its floor.
- The night ceiling holds through a fallback (``behavior: scalingModifiers``; ``static`` would bypass the formula).
- The shipped formula string, run as KEDA runs it, recommends what ``desired_replicas`` (the plan's arithmetic)
  says, for every combination of triggers missing.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inference_platform.components.autoscaling.scaled_object import (
    FALLBACK_BEHAVIOR,
    ScaleTarget,
    ScalingPolicy,
    desired_replicas,
    scaled_object_spec,
    triggers,
)
from inference_platform.components.batch.scaling import TRIGGER_NAME as QUEUE
from inference_platform.components.batch.scaling import QueueSignal
from inference_platform.components.observability.promql import Scope
from inference_platform.planners import keda
from inference_platform.planners.night_schedule import NightSchedule
from tests.conftest import REPO, STACKS

PINNED = json.loads((REPO / "tests/data/upstream/keda_v2.20.2_fallback.json").read_text())
SCOPE = Scope(namespace="inference", job="triton")
URL = "http://p:9090"
DAY = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)
NIGHT = datetime(2026, 12, 3, 23, 0, tzinfo=UTC)
SIGNAL = QueueSignal(queue_url="https://sqs.us-east-1.amazonaws.com/123456789012/work", region="us-east-1")
# Day 4-8 replicas, night 2-4; the planned (blind) 5; the queue holds the day floor at night.
PROD_LIKE = ScalingPolicy(scope=SCOPE, prometheus_url=URL, min_replicas=4, max_replicas=8, blind_replicas=5,
                          target_requests_per_replica=48, backfill=SIGNAL)  # fmt: skip
POLICIES = {
    "default night (halves both bounds)": ScalingPolicy(scope=SCOPE, prometheus_url=URL, min_replicas=1,
                                                        max_replicas=4, target_requests_per_replica=12),
    "day 4-10, night 22-06": ScalingPolicy(scope=SCOPE, prometheus_url=URL, min_replicas=4, max_replicas=10,
                                           night=NightSchedule(timezone="UTC", start=time(22), end=time(6))),
    "ceiling kept at night": ScalingPolicy(scope=SCOPE, prometheus_url=URL, min_replicas=3, max_replicas=7,
                                           night=NightSchedule(lower_ceiling=False, fraction=0.5)),
    "queue ratio, no kv": ScalingPolicy(scope=SCOPE, prometheus_url=URL, min_replicas=2, max_replicas=8,
                                        signal="queueRatio", kv_cache_target=None),
    "large, day 4-24, blind 10": ScalingPolicy(scope=SCOPE, prometheus_url=URL, min_replicas=4, max_replicas=24,
                                               blind_replicas=10),
    "backfill": PROD_LIKE,
}  # fmt: skip


def spec_of(policy: ScalingPolicy) -> dict:
    return scaled_object_spec(policy, ScaleTarget(name="triton"))


def reads(spec: dict, values: dict[str, float], *, day: bool, missing: dict[str, int] | None = None) -> dict:
    """Every trigger's reading: ``values`` by name, the cron by ``day``, ``missing`` failing that many times."""
    out = {}
    for t in spec["triggers"]:
        name = t["name"]
        if missing and name in missing:
            out[name] = keda.failing(missing[name])
        elif t["type"] == "cron":
            out[name] = keda.ok(keda.cron_value(t, inside=day))
        else:
            out[name] = keda.ok(values.get(name, 0.0))
    return out


def test_the_pinned_facts_are_the_ports():
    assert "v1.17.8" in PINNED["expr"] and keda.KEDA_VERSION == "v2.20.2"
    assert "scalingModifiers" in PINNED["fallback_spec"]["fields"]["behavior"]
    assert set(keda.FALLBACK_BEHAVIORS) == set(PINNED["fallback_spec"]["fields"]["behavior"].split(",")[0]
                                               .removeprefix("Enum ").split(";"))  # fmt: skip
    assert "strictly greater" in PINNED["counting"]["rule"] and "ParseInt" in PINNED["counting"]["valid"]
    assert PINNED["prometheus_scaler"]["ignoreNullValues_default"] is True
    # castToFloatIfNecessary, as pinned:
    assert keda.cast_to_float_if_necessary("a + 1") == "float(a + 1)"
    assert keda.cast_to_float_if_necessary("a ?? 1").startswith("let _kedaCompositeResult = (a ?? 1); ")
    # An empty Prometheus result: 0 by default, a failure with ignoreNullValues "false".
    assert keda.prometheus_read([], ignore_null_values=True) == 0.0
    assert keda.prometheus_read([], ignore_null_values=False) is None
    assert keda.prometheus_read([float("nan")], ignore_null_values=False) is None
    assert keda.prometheus_read([1.0, 2.0], ignore_null_values=True) is None  # "returned multiple elements"


@pytest.mark.parametrize("name", sorted(POLICIES))
def test_every_rendered_object_passes_the_admission_webhook_with_a_fallback_keda_takes_as_valid(name):
    spec = spec_of(POLICIES[name])
    assert keda.admission_problems(spec) == []
    assert keda.has_valid_fallback(spec)  # scalingModifiers.target "1" parses as an integer
    assert spec["fallback"]["behavior"] == FALLBACK_BEHAVIOR and spec["fallback"]["failureThreshold"] == 3
    prometheus = [t for t in spec["triggers"] if t["type"] == "prometheus"]
    assert prometheus and all(t["metadata"]["ignoreNullValues"] == "false" for t in prometheus)


def test_a_failing_queue_degrades_to_no_backfill_never_to_no_scaling():
    spec = spec_of(PROD_LIKE)
    busy = {"requests": 0.0, "kv": 0.0, QUEUE: 100.0}
    # At night with batch work queued the day floor holds (4).
    assert keda.recommendation(spec, reads(spec, busy, day=False), current=2) == 4
    # SQS (or its credentials) failing up to the threshold: the composite errors, the HPA holds (bounded).
    assert keda.recommendation(spec, reads(spec, busy, day=False, missing={QUEUE: 3}), current=2) is None
    # Past it: no backfill, the night floor (2); interactive demand still scales it within the night ceiling.
    assert keda.recommendation(spec, reads(spec, busy, day=False, missing={QUEUE: 4}), current=2) == 2
    loaded = {**busy, "requests": 48.0 * 3}
    assert keda.recommendation(spec, reads(spec, loaded, day=False, missing={QUEUE: 4}), current=2) == 3
    # By day the queue never mattered.
    assert keda.recommendation(spec, reads(spec, loaded, day=True, missing={QUEUE: 40}), current=4) == 4


def test_a_failing_demand_trigger_gives_way_to_the_other_and_both_missing_hold_the_planned_replicas():
    spec = spec_of(PROD_LIKE)
    hot_kv = {"requests": 0.0, "kv": 0.85 * 7}  # KV says 7 replicas' worth
    assert keda.recommendation(spec, reads(spec, hot_kv, day=True, missing={"requests": 4}), current=4) == 7
    assert keda.recommendation(spec, reads(spec, {}, day=True, missing={"requests": 9, "kv": 9}), current=4) == 5
    # At night the planned 5 is capped at the night ceiling (4): the clamp survives the fallback.
    assert keda.recommendation(spec, reads(spec, {}, day=False, missing={"requests": 9, "kv": 9}), current=4) == 4


def test_why_each_choice_matters_the_counterfactuals_keda_would_run():
    spec = spec_of(PROD_LIKE)
    vanished = {"requests": 0.0, "kv": 0.0}
    # ignoreNullValues left at its default: vanished series read 0, the day pool drops to its floor (4 of 6 running).
    assert keda.recommendation(spec, reads(spec, vanished, day=True), current=6) == 4
    # No fallback (the object before issue 31): one failing trigger freezes scaling for as long as it fails.
    bare = {k: v for k, v in spec.items() if k != "fallback"}
    assert keda.composite(bare, reads(bare, vanished, day=True, missing={QUEUE: 99})).value is None
    # behavior static: the formula is skipped and fallback.replicas replaces everything, night ceiling included.
    static = {**spec, "fallback": {**spec["fallback"], "behavior": "static", "replicas": 8}}
    at_night = keda.composite(static, reads(static, vanished, day=False, missing={"kv": 4}))
    assert at_night.value == 8 and "not evaluated" in at_night.why
    # scalingModifiers with a formula that is not nil-safe: a run error, no metric at all.
    unsafe = {**spec, "advanced": {**spec["advanced"], "scalingModifiers": {
        **spec["advanced"]["scalingModifiers"], "formula": "max(requests / 48, kv / 0.85)"}}}  # fmt: skip
    failed = keda.composite(unsafe, reads(unsafe, vanished, day=True, missing={"kv": 4}))
    assert failed.value is None and "run time" in failed.why


@settings(max_examples=500, deadline=None)
@given(
    name=st.sampled_from(sorted(POLICIES)),
    load=st.floats(min_value=0, max_value=2_000, allow_nan=False),
    kv=st.floats(min_value=0, max_value=20, allow_nan=False),
    queue=st.sampled_from([0.0, 3.0]),
    current=st.integers(min_value=1, max_value=30),
    day=st.booleans(),
    missing=st.sets(st.sampled_from(["requests", "queue", "kv", QUEUE])),
)
def test_the_shipped_formula_as_keda_runs_it_recommends_what_desired_replicas_says(name, load, kv, queue, current,
                                                                                     day, missing):  # fmt: skip
    policy = POLICIES[name]
    spec = spec_of(policy)
    names = {t["name"] for t in spec["triggers"]}
    gone = {m for m in missing if m in names}
    values = {t.name: (kv if t.name == "kv" else load) for t in triggers(policy)} | {QUEUE: queue}
    shipped = keda.recommendation(spec, reads(spec, values, day=day, missing=dict.fromkeys(gone, 4)), current=current)
    expected = desired_replicas(policy, values, current=current, instant=DAY if day else NIGHT,
                                missing=frozenset(gone))  # fmt: skip
    assert shipped == expected, spec["advanced"]["scalingModifiers"]["formula"]


@pytest.mark.parametrize("stack", STACKS)
def test_every_shipped_stacks_scaled_object_survives_a_failing_signal(stack_plan, stack):
    found = [r for r in stack_plan(stack).run.resources if r.type == "kubernetes:keda.sh/v1alpha1:ScaledObject"]
    assert found
    serving = [r for r in found if (r.inputs["spec"].get("advanced") or {}).get("scalingModifiers")]
    assert serving  # the batch lane's worker object scales on its queue alone (components/batch/scaling.py)
    for r in serving:
        spec = r.inputs["spec"]
        assert keda.admission_problems(spec) == [], r.name
        assert spec["fallback"]["behavior"] == "scalingModifiers" and keda.has_valid_fallback(spec)
        # Every non-cron trigger past the threshold at once: still a metric (the planned replicas), never none.
        bad = {t["name"]: 9 for t in spec["triggers"] if t["type"] != "cron"}
        assert keda.composite(spec, reads(spec, {}, day=True, missing=bad)).value is not None, r.name


@pytest.mark.parametrize("stack", STACKS)
def test_one_scaled_object_per_workload_and_no_polling_in_a_scale_up(stack_plan, stack):
    """KEDA's webhook refuses a second ScaledObject for a workload (pinned ``one_scaled_object_per_workload``), so
    serving's demand and the SQS backfill share one object and its fallback carries a failure. With replicas running
    and no ``useCachedMetrics``, each HPA request reads the scalers live (pinned ``metrics_read``): the cold-start
    model leaves pollingInterval out of a scale-up's detection (planners/cold_start.py), and this holds it."""
    assert "already managed by the ScaledObject" in PINNED["one_scaled_object_per_workload"]["rule"]
    assert "useCachedMetrics" in PINNED["metrics_read"]["rule"]
    found = [r for r in stack_plan(stack).run.resources if r.type == "kubernetes:keda.sh/v1alpha1:ScaledObject"]
    targets = [(r.inputs["spec"]["scaleTargetRef"].get("kind"), r.inputs["spec"]["scaleTargetRef"]["name"])
               for r in found]  # fmt: skip
    assert len(targets) == len(set(targets)), targets
    for r in found:
        spec = r.inputs["spec"]
        if not (spec.get("advanced") or {}).get("scalingModifiers"):
            continue
        assert spec["minReplicaCount"] >= 1, r.name
        assert not any(t.get("useCachedMetrics") for t in spec["triggers"]), r.name
