"""IAM rule: no ``"Action": "*"`` anywhere, and no write action on ``"Resource": "*"`` in any spelling
(``arn:aws:s3:::*``, ``arn:aws:s3:::*/*``, ``arn:aws:*:*:*:*``: see is_wildcard_resource).

Only read-only verbs (Describe, Get, List...) may apply to every resource: AWS offers no resource
scoping for many of them. Anything else on ``"*"`` (including ``NotResource``) must name its
resources or be written as a condition-scoped statement on resource ARNs. Key policies are KMS's
own rule (kms-no-wildcard-principal); trust policies carry no resources.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pulumi_policy import EnforcementLevel, ResourceValidationArgs

from inference_platform.policies.callbacks import ReportViolation, ResourceValidationPolicy
from inference_platform.policies.props import as_document, as_list, get, statements

POLICY_TYPES = frozenset(
    {
        "aws:iam/policy:Policy",
        "aws:iam/rolePolicy:RolePolicy",
        "aws:iam/userPolicy:UserPolicy",
        "aws:iam/groupPolicy:GroupPolicy",
    }
)
ROLE = "aws:iam/role:Role"
READ_VERBS = ("Describe", "Get", "List", "BatchGet", "Search", "View", "Lookup", "Query", "Scan", "Select")


def is_read_only(action: str) -> bool:
    """``ec2:DescribeImages`` and ``ec2:Describe*`` are reads; ``s3:*`` and ``ec2:Create*`` are not."""
    if ":" not in action:
        return False
    verb = action.split(":", 1)[1]
    return verb not in ("", "*") and verb.startswith(READ_VERBS)


def is_wildcard_resource(resource: str) -> bool:
    """``*`` in any spelling: an ARN whose service, or whose resource part, is nothing but wildcards and
    separators (``arn:aws:s3:::*``, ``arn:aws:s3:::*/*``, ``arn:aws:*:*:*:*``). A resource type with a
    wildcard id (``arn:aws:ec2:*:*:instance/*``) or a named prefix (``arn:aws:s3:::models-*``) is scoped."""
    text = resource.strip()
    if text.strip("*") == "":
        return True
    parts = text.split(":", 5)
    if parts[0] != "arn" or len(parts) < 6:
        return "*" in text and text.startswith("arn:")
    service, rest = parts[2], parts[5]
    return "*" in service or rest.strip("*?/:") == ""


def problems(document: dict[str, Any] | None) -> list[str]:
    out = []
    for i, statement in enumerate(statements(document)):
        if statement.get("Effect") != "Allow":
            continue
        sid = str(statement.get("Sid", f"#{i}"))
        actions = [str(a) for a in as_list(statement.get("Action"))]
        if "NotAction" in statement:
            out.append(f"statement {sid} allows NotAction (everything but a list)")
        if any(a in ("*", "*:*") for a in actions):
            out.append(f"statement {sid} allows Action '*'")
            continue
        everything = "NotResource" in statement or any(
            is_wildcard_resource(str(r)) for r in as_list(statement.get("Resource"))
        )
        writes = [a for a in actions if not is_read_only(a)]
        if everything and writes:
            out.append(f"statement {sid} allows {', '.join(writes)} on every resource ('*')")
    return out


def _documents(args: ResourceValidationArgs) -> Iterator[dict[str, Any] | None]:
    if args.resource_type in POLICY_TYPES:
        yield as_document(get(args.props, "policy"))
    elif args.resource_type == ROLE:
        for inline in as_list(get(args.props, "inlinePolicies")):
            yield as_document(get(inline, "policy"))


def _no_wildcards(args: ResourceValidationArgs, report: ReportViolation) -> None:
    for document in _documents(args):
        for problem in problems(document):
            report(problem)


POD_IDENTITY_SERVICE = "pods.eks.amazonaws.com"
# Either names the cluster: the session tag EKS documents for Pod Identity, or a source ARN (accepted where a
# team has validated it; inference_platform.components.identity.pod_identity says why ours does not use it).
CLUSTER_KEYS = ("aws:requesttag/eks-cluster-arn", "aws:requesttag/eks-cluster-name", "aws:sourcearn")


def _pod_identity_trust_scoped(args: ResourceValidationArgs, report: ReportViolation) -> None:
    """A role EKS Pod Identity may assume names the account and the cluster it serves (``aws:SourceAccount``
    and the ``eks-cluster-arn`` session tag): the service principal alone admits every Pod Identity
    association of the account (confused deputy)."""
    if args.resource_type != ROLE:
        return
    for statement in statements(as_document(get(args.props, "assumeRolePolicy"))):
        services = as_list(get(statement, "Principal.Service"))
        if statement.get("Effect") != "Allow" or POD_IDENTITY_SERVICE not in services:
            continue
        keys = {key.lower() for block in (statement.get("Condition") or {}).values() if isinstance(block, dict)
                for key in block}  # fmt: skip
        missing = []
        if "aws:sourceaccount" not in keys:
            missing.append("aws:SourceAccount")
        if not keys.intersection(CLUSTER_KEYS):
            missing.append("aws:RequestTag/eks-cluster-arn")
        if missing:
            report(
                f"the trust of {POD_IDENTITY_SERVICE} has no {' and no '.join(missing)} condition: any EKS cluster's "
                "Pod Identity association could assume the role; name this account and the cluster ARN "
                "(inference_platform.components.identity.pod_identity.pod_identity_trust)"
            )


POLICIES = [
    ResourceValidationPolicy(
        name="pod-identity-trust-scoped",
        description="Roles trusted by EKS Pod Identity carry aws:SourceAccount and eks-cluster-arn conditions.",
        validate=_pod_identity_trust_scoped,
        enforcement_level=EnforcementLevel.MANDATORY,
    ),
    ResourceValidationPolicy(
        name="iam-no-wildcard-write",
        description="IAM policies never allow Action '*' nor write actions on Resource '*'.",
        validate=_no_wildcards,
        enforcement_level=EnforcementLevel.MANDATORY,
    ),
]
