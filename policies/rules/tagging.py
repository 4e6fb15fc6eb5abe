"""Tagging rule: every taggable AWS resource carries the ownership and cost tags."""

from __future__ import annotations

from pulumi_policy import EnforcementLevel, PolicyConfigSchema, ResourceValidationArgs

from inference_platform.components.common.tagging import is_taggable
from inference_platform.policies.callbacks import ReportViolation, ResourceValidationPolicy
from inference_platform.policies.props import get

REQUIRED_TAGS = ("project", "stack", "owner", "cost-center")


def _required_tags(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if not is_taggable(args.resource_type):
        return
    required = args.get_config().get("requiredTags", list(REQUIRED_TAGS))
    tags = get(args.props, "tags", {}) or {}
    missing = [t for t in required if not str(tags.get(t, "")).strip()]
    if missing:
        # The fix, where the violation is read: the stack program applies it in infra/program.py.
        report(
            f"missing required tags {', '.join(missing)} (register inference_platform.components.common."
            "default_tags_transform before the first resource: README, Using the components from Python)"
        )


POLICIES = [
    ResourceValidationPolicy(
        name="required-tags",
        description="Taggable AWS resources carry the project, stack, owner and cost-center tags.",
        validate=_required_tags,
        enforcement_level=EnforcementLevel.MANDATORY,
        config_schema=PolicyConfigSchema(
            properties={"requiredTags": {"type": "array", "items": {"type": "string"}, "default": list(REQUIRED_TAGS)}}
        ),
    ),
]
