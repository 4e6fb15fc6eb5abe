"""PriorityClasses stay bounded: the standby class passes; a global default, a system-critical value or a negative
class that preempts are violations."""

from __future__ import annotations

import pulumi_kubernetes as k8s
import pytest

from inference_platform.components.autoscaling.standby import priority_class_spec

RULE = "priority-classes-bounded"


def _class(**spec):
    return lambda: k8s.scheduling.v1.PriorityClass("p", metadata={"name": "p"}, **spec)


def test_the_standby_class_passes(violations):
    spec = priority_class_spec()
    assert spec["value"] < 0 and spec["preemptionPolicy"] == "Never"
    assert violations(_class(value=spec["value"], preemption_policy="Never", global_default=False), RULE) == []
    assert violations(_class(value=1000), RULE) == []


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({"value": 5, "global_default": True}, "globalDefault is true"),
        ({"value": 2_000_000_000}, "reserved for system-critical classes"),
        ({"value": -10}, "set preemptionPolicy Never"),
        ({"value": -10, "preemption_policy": "PreemptLowerPriority"}, "set preemptionPolicy Never"),
    ],
)
def test_each_unbounded_class_is_a_violation(violations, spec, expected):
    (found,) = violations(_class(**spec), RULE)
    assert expected in found.message
