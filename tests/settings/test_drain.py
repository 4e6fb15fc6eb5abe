"""Issue 31: a removed replica drains long enough for the longest stream the stack admits (planners/drain.py): the
derived drain and grace period, a hand-set drain flagged when it cuts streams, a hand-set grace period refused when it
cannot hold the drain, and a Karpenter node whose own grace period would cut the pods' (Karpenter v1.14.1, pinned in
tests/data/upstream/karpenter_v1.14.1_termination_grace_period.json)."""

from __future__ import annotations

import json
import math

import pytest

from inference_platform.inferctl.cost.summary import drain_line
from inference_platform.planners import drain
from inference_platform.settings import stack_files
from inference_platform.settings.derived import drain_budget
from inference_platform.settings.node_pools import _DURATION, duration_seconds
from tests.conftest import REPO
from tests.settings.test_inference import inference, load, problems, stack_values

KARPENTER = json.loads((REPO / "tests/data/upstream/karpenter_v1.14.1_termination_grace_period.json").read_text())


@pytest.mark.parametrize(("stack", "exit_s", "grace_s"), [("dev", 549, 559), ("prod", 657, 692), ("npu", 276, 311)])
def test_each_stack_drains_for_its_longest_stream(stack, exit_s, grace_s):
    """The figures docs/serving.md states, and the formula they come from, computed here from the SLO keys."""
    settings = stack_files.load(stack)
    serving, slo = settings.serving, settings.serving.slo
    longest = slo.ttft_p95_ms / 1000 + (serving.max_seq_len - 2) / slo.min_output_tokens_per_second
    budget = drain_budget(settings)
    assert budget.longest_stream_s == pytest.approx(longest)
    assert (budget.exit_timeout_s, budget.grace_period_s) == (exit_s, grace_s) == (
        math.ceil(longest), settings.inference.termination.pre_stop_seconds + math.ceil(longest) + 5
    )  # fmt: skip
    assert serving.exit_timeout_seconds == exit_s
    assert settings.inference.termination.grace_seconds(serving.exit_timeout_seconds) == grace_s
    assert budget.flag is None and not budget.exit_hand_set and not budget.grace_hand_set


def test_a_hand_set_drain_shorter_than_the_longest_stream_loads_and_is_flagged():
    serving = {**stack_values("dev")["serving"]}
    serving["server"] = {**serving.get("server", {}), "exitTimeoutSeconds": 60}
    settings = load({"serving": serving})
    budget = drain_budget(settings)
    assert (budget.exit_timeout_s, budget.grace_period_s, budget.cut_after_s) == (60, 5 + 60 + 5, 60.0)
    assert budget.flag is not None and "longer than 60 s are cut" in budget.flag and "549 s" in budget.flag
    line = drain_line(budget.to_dict())
    assert "60 s (hand-set)" in line and "FLAG: streams running longer than 60 s" in line


def test_a_derived_drain_beyond_the_settings_bound_is_capped_and_flagged():
    long = drain.budget(longest_stream_s=5000.4, exit_timeout_s=None, pre_stop_s=15, grace_period_s=None)
    assert (long.exit_timeout_s, long.grace_period_s) == (drain.MAX_EXIT_TIMEOUT_SECONDS, 15 + 3600 + 5)
    assert long.flag is not None and "bound of 3600 s" in long.flag


def test_a_hand_set_grace_period_that_holds_the_drain_is_kept():
    settings = load({"inference": inference(termination={"gracePeriodSeconds": 900})})
    budget = drain_budget(settings)
    assert (budget.grace_period_s, budget.grace_hand_set) == (900, True)


def test_a_karpenter_node_that_would_cut_the_pods_drain_is_refused():
    values = stack_values("dev")
    pools = json.loads(json.dumps(values["nodePools"]))
    pool = stack_files.load("dev").serving.node_pool
    pools[pool]["terminationGracePeriod"] = "5m"
    found = problems({"nodePools": pools})
    key = f"nodePools.{pool}.terminationGracePeriod"
    assert key in found, found
    assert "'5m' (300 s)" in found[key] and "559 s" in found[key] and "cluster.provisioning" in found[key]
    pools[pool]["terminationGracePeriod"] = "9m20s"  # 560 s: enough
    assert load({"nodePools": pools}).inference.termination.grace_seconds(549) == 559


def test_karpenter_durations_take_its_crd_pattern():
    assert _DURATION.pattern == KARPENTER["pattern"]["text"].split("`")[1]
    assert "T = node timeout - pod terminationGracePeriodSeconds" in KARPENTER["nodepool_field"]["text"]
    assert [duration_seconds(v) for v in ("1h", "1h30m", "90s", "2h0m5s")] == [3600, 5400, 90, 7205]
    assert [duration_seconds(v) for v in ("1.5h", "500ms", "Never", "", "10")] == [None] * 5


@pytest.mark.parametrize(
    ("field", "value", "refused"),
    [
        ("terminationGracePeriod", "1.5h", True),
        ("terminationGracePeriod", "500ms", True),
        ("terminationGracePeriod", "Never", True),
        ("expireAfter", "Never", False),
        ("consolidateAfter", "Never", False),
        ("consolidateAfter", "30s", False),
        ("expireAfter", "720h", False),
    ],
)
def test_node_pool_durations_the_crd_refuses_are_named(field, value, refused):
    values = stack_values("dev")
    pools = json.loads(json.dumps(values["nodePools"]))
    pool = stack_files.load("dev").serving.node_pool
    pools[pool][field] = value
    key = f"nodePools.{pool}.{field}"
    if refused:
        found = problems({"nodePools": pools})
        assert key in found and "Karpenter's pattern" in found[key] and repr(value) in found[key], found
    else:
        load({"nodePools": pools})
