"""KMS rules: rotation on for symmetric keys, no wildcard principals in key policies unless a condition
names the caller."""

from __future__ import annotations

from typing import Any

from pulumi_policy import EnforcementLevel, ResourceValidationArgs

from inference_platform.policies.callbacks import ReportViolation, ResourceValidationPolicy
from inference_platform.policies.props import as_document, as_list, get, statements
from inference_platform.policies.rules.iam_exposure import is_scoped

KEY = "aws:kms/key:Key"
KEY_POLICY = "aws:kms/keyPolicy:KeyPolicy"
KMS_SCOPING_KEYS = frozenset({"kms:calleraccount"})


def _rotation(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type != KEY:
        return
    spec = get(args.props, "customerMasterKeySpec", get(args.props, "keySpec", "SYMMETRIC_DEFAULT"))
    if spec != "SYMMETRIC_DEFAULT":
        return  # AWS rotates only symmetric encryption keys
    if get(args.props, "enableKeyRotation") is not True:
        report("automatic key rotation is off; set enable_key_rotation=True")


def wildcard_principals(document: dict[str, Any] | None) -> list[str]:
    """Sids (or positions) of Allow statements whose principal is anyone, unless a condition names the
    caller (inference_platform.policies.rules.iam_exposure.is_scoped, plus ``kms:CallerAccount``: AWS's own pattern for
    "any principal of this account, through EBS", ``kms:CallerAccount`` + ``kms:ViaService``)."""
    found = []
    for i, statement in enumerate(statements(document)):
        if statement.get("Effect") != "Allow":
            continue
        principal = statement.get("Principal")
        values = as_list(principal.get("AWS")) if isinstance(principal, dict) else as_list(principal)
        if "*" in values and not is_scoped(statement.get("Condition"), extra_keys=KMS_SCOPING_KEYS):
            found.append(str(statement.get("Sid", f"#{i}")))
    return found


def _no_wildcard_principal(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type not in (KEY, KEY_POLICY):
        return
    document = as_document(get(args.props, "policy"))
    for sid in wildcard_principals(document):
        report(
            f"key policy statement {sid} allows Principal '*' with no condition naming the caller; name the principals"
        )


POLICIES = [
    ResourceValidationPolicy(
        name="kms-key-rotation",
        description="Customer-managed symmetric KMS keys rotate automatically.",
        validate=_rotation,
        enforcement_level=EnforcementLevel.MANDATORY,
    ),
    ResourceValidationPolicy(
        name="kms-no-wildcard-principal",
        description="KMS key policies never allow Principal '*'.",
        validate=_no_wildcard_principal,
        enforcement_level=EnforcementLevel.MANDATORY,
    ),
]
