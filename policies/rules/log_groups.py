"""CloudWatch log groups: ``log-groups-encrypted-retained``. Every ``aws:cloudwatch/logGroup`` names a
customer-managed KMS key (``kmsKeyId``; unset, CloudWatch Logs encrypts with a key it owns, which no key
policy of this stack controls) and a retention (``retentionInDays``; unset or 0 keeps events for ever, so
prompts or request metadata a team logs are never deleted and the storage bill only grows). The stack's own
groups (EKS control plane, VPC flow logs) set both from the logs CMK and their settings."""

from __future__ import annotations

from pulumi_policy import EnforcementLevel, ResourceValidationArgs

from inference_platform.policies.callbacks import ReportViolation, ResourceValidationPolicy
from inference_platform.policies.props import get

LOG_GROUP = "aws:cloudwatch/logGroup:LogGroup"


def _encrypted_retained(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type != LOG_GROUP:
        return
    if not get(args.props, "kmsKeyId"):
        report("kmsKeyId is unset: events are encrypted with a key CloudWatch owns, not a customer-managed key")
    days = get(args.props, "retentionInDays")
    if not days:
        report(f"retentionInDays is {'unset' if days is None else int(days)}: events are kept for ever")


POLICIES = [
    ResourceValidationPolicy(
        name="log-groups-encrypted-retained",
        description="CloudWatch log groups are encrypted with a customer-managed KMS key and set a retention.",
        validate=_encrypted_retained,
        enforcement_level=EnforcementLevel.MANDATORY,
    ),
]
