"""Jobs are bounded: a Job without a deadline can hold accelerators for ever, one without a backoff limit
retries a broken build six times (the API's default), and a finished Job without a TTL keeps its pods'
records (and their logs) until someone deletes it."""

from __future__ import annotations

from pulumi_policy import EnforcementLevel, ResourceValidationArgs

from inference_platform.policies.callbacks import ReportViolation, ResourceValidationPolicy
from inference_platform.policies.props import get

JOB = "kubernetes:batch/v1:Job"
MAX_BACKOFF_LIMIT = 10


def _bounded(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type != JOB:
        return
    backoff = get(args.props, "spec.backoffLimit")
    if backoff is None:
        report("spec.backoffLimit is unset: the API default retries a failing Job 6 times")
    elif backoff > MAX_BACKOFF_LIMIT:
        report(f"spec.backoffLimit is {int(backoff)}: at most {MAX_BACKOFF_LIMIT}")
    if not get(args.props, "spec.activeDeadlineSeconds"):
        report("spec.activeDeadlineSeconds is unset: nothing stops a hung Job")
    if get(args.props, "spec.ttlSecondsAfterFinished") is None:
        report("spec.ttlSecondsAfterFinished is unset: finished Jobs are never cleaned up")


POLICIES = [
    ResourceValidationPolicy(
        name="jobs-bounded",
        description="Every Job sets backoffLimit (at most 10), activeDeadlineSeconds and ttlSecondsAfterFinished.",
        validate=_bounded,
        enforcement_level=EnforcementLevel.MANDATORY,
    ),
]
