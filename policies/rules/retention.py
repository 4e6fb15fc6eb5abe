"""Deletion windows: how long a deleted KMS key or Secrets Manager secret can still be recovered.

Pulumi.yaml promises 30 days (AWS's maximum) for keys and secrets in production; AWS accepts 7, and a
secret's ``recoveryWindowInDays: 0`` deletes it at once. The minimum is per stack in policy config
(30 in policies/config/prod.json and npu.json); unset properties take AWS's default of 30.
"""

from __future__ import annotations

from pulumi_policy import EnforcementLevel, PolicyConfigSchema, ResourceValidationArgs

from inference_platform.policies.callbacks import ReportViolation, ResourceValidationPolicy
from inference_platform.policies.props import get

KEY = "aws:kms/key:Key"
SECRET = "aws:secretsmanager/secret:Secret"
AWS_DEFAULT_DAYS = 30
AWS_MINIMUM_DAYS = 7
WINDOWS = {KEY: "deletionWindowInDays", SECRET: "recoveryWindowInDays"}


def _windows(args: ResourceValidationArgs, report: ReportViolation) -> None:
    prop = WINDOWS.get(args.resource_type)
    if prop is None:
        return
    minimum = int(args.get_config().get("minimumDays", AWS_MINIMUM_DAYS))
    days = int(float(get(args.props, prop, AWS_DEFAULT_DAYS)))
    if days < minimum:
        what = "be final at once" if days == 0 else f"stay recoverable for {days} days only"
        report(f"{prop} {days}: a deletion would {what}; this stack requires at least {minimum} days")


POLICIES = [
    ResourceValidationPolicy(
        name="deletion-windows",
        description="KMS key deletion and Secrets Manager recovery windows are at least the stack's minimum "
        "(30 days in production).",
        validate=_windows,
        enforcement_level=EnforcementLevel.MANDATORY,
        config_schema=PolicyConfigSchema(
            properties={
                "minimumDays": {
                    "type": "integer",
                    "default": AWS_MINIMUM_DAYS,
                    "description": "shortest allowed window in days (AWS allows 7-30; production uses 30)",
                }
            }
        ),
    ),
]
