"""Issue 18 §1 (errors name the key): one bad value gives one problem naming it, not follow-on problems
about other keys (settings/__init__.py _semantic_problems), and no value ends in an exception other
than SettingsError. The sweep sets every number of every section of the shipped stacks to values at and
beyond its bounds, so keys added later are swept too."""

from __future__ import annotations

import copy
import math
from typing import Any

import pytest

from inference_platform.settings import SECTIONS, SettingsError, load_settings
from tests.settings.test_contradictions import PROJECT, mutate, stack_values
from tests.settings.test_values import number_fields


def outcome(stack: str, values: dict) -> dict[str, str]:
    _, region = stack_values(stack)
    try:
        load_settings(values, project=PROJECT, stack=stack, region=region)
    except SettingsError as err:
        return {p.path: p.message for p in err.problems}
    return {}


@pytest.mark.parametrize(
    ("stack", "edits", "path"),
    [
        # A bad value in a section another section reads: only its own problem.
        ("prod", {"serving.maxSeqLen": 100}, "serving.maxInputLen"),
        ("prod", {"edge.rateLimits.tiers.interactive.requestsPerMinute": 0},
         "edge.rateLimits.tiers.interactive.requestsPerMinute"),
        ("prod", {"edge.idleTimeoutSeconds": True}, "edge.idleTimeoutSeconds"),  # not serving.auth, verification.url
        ("prod", {"edge.waf.ipRateLimit": "x"}, "edge.waf.ipRateLimit"),
        ("prod", {"serving.maxBatchSize": True}, "serving.maxBatchSize"),
        ("prod", {"nodePools.inference.instanceTypes": ["p9.huge"]}, "nodePools.inference.instanceTypes[0]"),
        ("prod", {"inference.replicas": True}, "inference.replicas"),
        ("prod", {"network.azCount": "x"}, "network.azCount"),
        ("prod", {"capacity.tokensPerDay": math.inf}, "capacity.tokensPerDay"),
        ("dev", {"autoscaling.targetRequestsPerReplica": math.nan}, "autoscaling.targetRequestsPerReplica"),
    ],
)  # fmt: skip
def test_one_bad_value_is_one_problem(stack, edits, path):
    values, _ = mutate(stack, edits)
    found = outcome(stack, values)
    assert list(found) == [path], found


def test_two_bad_values_in_two_sections_are_both_named():
    values, _ = mutate("prod", {"serving.maxBatchSize": True, "edge.idleTimeoutSeconds": 0})
    assert set(outcome("prod", values)) == {"serving.maxBatchSize", "edge.idleTimeoutSeconds"}


def test_a_contradiction_between_two_good_sections_is_still_named():
    values, _ = mutate("prod", {"edge.rateLimits.tiers.interactive.requestsPerMinute": 1})
    assert list(outcome("prod", values)) == ["verification.client"]


def _set(values: dict, section: str, model_path: list[str], bad: Any) -> bool:
    node = values.setdefault(section, {})
    for key in model_path[:-1]:
        if not isinstance(node.get(key, {}), dict):
            return False
        node = node.setdefault(key, {})
    node[model_path[-1]] = bad
    return True


def _top_level_numbers() -> list[tuple[str, str]]:
    """(section key, field) for the numbers directly on each top-level section."""
    tops = {s: s.key for s in SECTIONS if hasattr(s, "key")}
    return [(tops[m], k) for m, k, shape in number_fields(int) + number_fields(float) if m in tops and shape is None]


SWEEP = [-1, 0, 2**31, 2**63, 1e300, -1e300, "1e999", math.nan, True]


@pytest.mark.parametrize("stack", ["dev", "prod", "npu"])
@pytest.mark.parametrize(("section", "key"), _top_level_numbers())
def test_extreme_numbers_end_in_settings_errors_only(stack, section, key):
    base, _ = stack_values(stack)
    for bad in SWEEP:
        values = copy.deepcopy(base)
        if not _set(values, section, [key], bad):
            continue
        try:
            outcome(stack, values)
        except Exception as err:  # anything but SettingsError is a bug: it would surface inside the program
            pytest.fail(f"{section}.{key} = {bad!r}: {type(err).__name__}: {err}")
