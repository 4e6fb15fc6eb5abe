"""Pod priorities the stack creates stay below the workloads they stand in for: a PriorityClass must not be the
cluster's global default (it would reprioritise every pod without a class), must stay out of the range Kubernetes
reserves for system-critical classes (values above 1,000,000,000), and a class below zero, which only standby
placeholders use (components/autoscaling/standby.py), must never preempt: a placeholder waits for room, it never
evicts a serving pod or anything else (Kubernetes, Pod Priority and Preemption: ``preemptionPolicy``)."""

from __future__ import annotations

from pulumi_policy import EnforcementLevel, ResourceValidationArgs

from inference_platform.policies.callbacks import ReportViolation, ResourceValidationPolicy
from inference_platform.policies.props import get

PRIORITY_CLASS = "kubernetes:scheduling.k8s.io/v1:PriorityClass"
SYSTEM_RESERVED_ABOVE = 1_000_000_000
"""User classes take values up to one billion; larger ones are reserved for system-critical pods."""


def _priority_classes(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type != PRIORITY_CLASS:
        return
    value = get(args.props, "value")
    if get(args.props, "globalDefault") is True:
        report("globalDefault is true: every pod without a priorityClassName would take this class")
    if value is None:
        report("value is unset")
        return
    if value > SYSTEM_RESERVED_ABOVE:
        report(
            f"value {value:g} is in the range reserved for system-critical classes (above {SYSTEM_RESERVED_ABOVE:,})"
        )
    if value < 0 and get(args.props, "preemptionPolicy") != "Never":
        report(f"value {value:g} is a standby class, whose pods must wait for room: set preemptionPolicy Never (it is "
               f"{get(args.props, 'preemptionPolicy') or 'PreemptLowerPriority, the default'})")  # fmt: skip


POLICIES = [
    ResourceValidationPolicy(
        name="priority-classes-bounded",
        description="A PriorityClass is never the global default, stays out of the system-critical range, and a "
        "negative (standby) class never preempts.",
        validate=_priority_classes,
        enforcement_level=EnforcementLevel.MANDATORY,
    ),
]
