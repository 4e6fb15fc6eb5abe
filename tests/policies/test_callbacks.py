"""The rules' callbacks (policies/callbacks.py): pulumi_policy's own ``report_violation`` takes the URN as optional,
which is what the local ``ReportViolation`` Protocol says and pulumi_policy's declared alias does not; every rule
takes that Protocol; and at run time the policy classes are pulumi_policy's own."""

from __future__ import annotations

import inspect
import typing

import pulumi_policy
from pulumi.runtime import proto
from pulumi_policy.policy import _PolicyAnalyzerServicer

from inference_platform.policies import callbacks
from inference_platform.policies.pack import POLICIES

URN = "urn:pulumi:dev::inference-platform::aws:s3/bucket:Bucket::models"


def test_pulumi_policys_own_callback_takes_the_urn_as_optional():
    never = pulumi_policy.StackValidationPolicy(name="never", description="d", validate=lambda args, report: None)
    servicer = _PolicyAnalyzerServicer("pack", "0.0.1", [never], pulumi_policy.EnforcementLevel.MANDATORY)
    response = proto.AnalyzeResponse()
    report = servicer._create_report_violation(response, "p", "what p guards", pulumi_policy.EnforcementLevel.MANDATORY)
    report("the message alone")  # the alias pulumi_policy declares wants a URN; its function does not
    report("with its resource", URN)
    assert [(d.message, d.urn) for d in response.diagnostics] == [
        ("what p guards\nthe message alone", ""),
        ("what p guards\nwith its resource", URN),
    ]


def _validations(policy: pulumi_policy.Policy) -> list[typing.Callable[..., object]]:
    # pulumi_policy keeps the callback in a private (name-mangled) field and offers no accessor.
    found = getattr(policy, f"_{type(policy).__name__}__validate")
    return found if isinstance(found, list) else [found]


def test_every_rule_takes_the_local_protocol():
    for policy in POLICIES:
        for validate in _validations(policy):
            report = list(inspect.signature(validate).parameters)[1]
            assert typing.get_type_hints(validate)[report] is callbacks.ReportViolation, (policy.name, validate)


def test_at_run_time_the_policy_classes_are_pulumi_policys():
    assert callbacks.ResourceValidationPolicy is pulumi_policy.ResourceValidationPolicy
    assert callbacks.StackValidationPolicy is pulumi_policy.StackValidationPolicy
