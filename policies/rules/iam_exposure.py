"""Who can get in: no anonymous principals in trust and resource policies, no administrator-class AWS
managed policies, no S3 access point without its public-access block.

A statement allowing ``Principal: "*"`` (or ``{"AWS": "*"}``) lets every AWS account in unless a
condition pins who may use it: the rule recognises ``aws:PrincipalArn``, ``aws:PrincipalAccount``,
``aws:PrincipalOrgID``/``OrgPaths``, ``aws:SourceArn``/``Account``/``Owner``/``OrgID``,
``aws:SourceVpc``/``Vpce`` with a concrete value under a positive operator (``StringEquals``, ``ArnLike``
... never ``...IfExists`` or ``Not...``, which let requests without the key through). Deny statements
(e.g. the usual "deny unless aws:SecureTransport") only take access away and are always fine. KMS key
policies are judged by kms-no-wildcard-principal with the same conditions plus ``kms:CallerAccount``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from pulumi_policy import EnforcementLevel, PolicyConfigSchema, ResourceValidationArgs

from inference_platform.policies.callbacks import ReportViolation, ResourceValidationPolicy
from inference_platform.policies.props import as_document, as_list, get, statements

ROLE = "aws:iam/role:Role"
# Resource type -> the property holding its resource policy.
RESOURCE_POLICIES: dict[str, str] = {
    ROLE: "assumeRolePolicy",
    "aws:secretsmanager/secretPolicy:SecretPolicy": "policy",
    "aws:secretsmanager/secret:Secret": "policy",
    "aws:s3/bucketPolicy:BucketPolicy": "policy",
    "aws:s3/bucket:Bucket": "policy",
    "aws:s3/bucketV2:BucketV2": "policy",
    "aws:s3/accessPoint:AccessPoint": "policy",
    "aws:s3control/accessPointPolicy:AccessPointPolicy": "policy",
    "aws:s3control/bucketPolicy:BucketPolicy": "policy",
    "aws:sqs/queuePolicy:QueuePolicy": "policy",
    "aws:sqs/queue:Queue": "policy",
    "aws:sns/topicPolicy:TopicPolicy": "policy",
    "aws:ecr/repositoryPolicy:RepositoryPolicy": "policy",
}
SCOPING_KEYS = frozenset(
    k.lower()
    for k in (
        "aws:PrincipalArn", "aws:PrincipalAccount", "aws:PrincipalOrgID", "aws:PrincipalOrgPaths",
        "aws:SourceArn", "aws:SourceAccount", "aws:SourceOwner", "aws:SourceOrgID", "aws:SourceOrgPaths",
        "aws:SourceVpc", "aws:SourceVpce",
    )
)  # fmt: skip
SCOPING_OPERATORS = frozenset(
    {"StringEquals", "StringEqualsIgnoreCase", "StringLike", "ArnEquals", "ArnLike", "ForAnyValue:StringEquals",
     "ForAnyValue:StringLike", "ForAllValues:StringEquals"}
)  # fmt: skip

ATTACHMENTS: dict[str, str] = {
    "aws:iam/rolePolicyAttachment:RolePolicyAttachment": "policyArn",
    "aws:iam/userPolicyAttachment:UserPolicyAttachment": "policyArn",
    "aws:iam/groupPolicyAttachment:GroupPolicyAttachment": "policyArn",
    "aws:iam/policyAttachment:PolicyAttachment": "policyArn",
    "aws:iam/rolePolicyAttachmentsExclusive:RolePolicyAttachmentsExclusive": "policyArns",
    "aws:iam/userPolicyAttachmentsExclusive:UserPolicyAttachmentsExclusive": "policyArns",
    "aws:iam/groupPolicyAttachmentsExclusive:GroupPolicyAttachmentsExclusive": "policyArns",
    "aws:ssoadmin/managedPolicyAttachment:ManagedPolicyAttachment": "managedPolicyArn",
    ROLE: "managedPolicyArns",
}
# AWS managed policies that amount to administering the account or escalating to it: full access to
# everything (AdministratorAccess), everything but IAM (PowerUserAccess: enough to pass any existing role
# to compute), or to IAM and Organizations themselves.
DENIED_MANAGED_POLICIES = [
    "AdministratorAccess",
    "PowerUserAccess",
    "IAMFullAccess",
    "AWSOrganizationsFullAccess",
    "AdministratorAccess-Amplify",
    "AdministratorAccess-AWSElasticBeanstalk",
    "job-function/SystemAdministrator",
    "job-function/NetworkAdministrator",
    "AWSCloudFormationFullAccess",
]
# AWS managed policies that grant a whole service (or many): AWS names them "<Service>FullAccess"
# (AmazonS3FullAccess, AmazonSQSFullAccess, AWSLambda_FullAccess ...), "...PowerUser" and "...Administrator"
# /"...AdminAccess". Every bucket, queue or function of the account: a workload needs its own resources,
# written as a customer policy. Matched on the name, case-insensitively, so a service AWS adds tomorrow is
# caught; a policy a team has judged acceptable goes in the rule's allowedPolicies.
SERVICE_WIDE = re.compile(r"full_?access|power_?user|administrator|admin_?access", re.IGNORECASE)
SERVICE_LINKED_ROLE = "aws:iam/serviceLinkedRole:ServiceLinkedRole"
# The service-linked roles a stack may create: the one its storage key's policy names.
ALLOWED_SERVICE_LINKED_ROLES = ["autoscaling.amazonaws.com"]
ACCESS_POINT = "aws:s3/accessPoint:AccessPoint"
PUBLIC_ACCESS_BLOCK = ("blockPublicAcls", "blockPublicPolicy", "ignorePublicAcls", "restrictPublicBuckets")


def is_anyone(principal: Any) -> bool:
    """``"*"``, ``{"AWS": "*"}`` (alone or in a list)."""
    if isinstance(principal, Mapping):
        return "*" in [str(p) for p in as_list(principal.get("AWS"))]
    return "*" in [str(p) for p in as_list(principal)]


def is_scoped(condition: Any, extra_keys: frozenset[str] = frozenset()) -> bool:
    """Whether a condition block pins the caller (see the module docstring); ``extra_keys`` (lower case)
    adds a service's own caller keys, such as KMS's ``kms:CallerAccount``."""
    if not isinstance(condition, Mapping):
        return False
    keys = SCOPING_KEYS | extra_keys
    for operator, pairs in condition.items():
        if str(operator) not in SCOPING_OPERATORS or not isinstance(pairs, Mapping):
            continue
        for key, values in pairs.items():
            concrete = [str(v) for v in as_list(values) if str(v).strip("*?") != ""]
            if str(key).lower() in keys and concrete and len(concrete) == len(as_list(values)):
                return True
    return False


def open_statements(document: dict[str, Any] | None) -> Iterator[str]:
    """Sids (or positions) of Allow statements open to any principal without a scoping condition."""
    for i, statement in enumerate(statements(document)):
        if statement.get("Effect") != "Allow":
            continue
        if "NotPrincipal" in statement or (
            is_anyone(statement.get("Principal")) and not is_scoped(statement.get("Condition"))
        ):
            yield str(statement.get("Sid", f"#{i}"))


def _no_anonymous_principals(args: ResourceValidationArgs, report: ReportViolation) -> None:
    prop = RESOURCE_POLICIES.get(args.resource_type)
    if prop is None:
        return
    for sid in open_statements(as_document(get(args.props, prop))):
        what = "trust policy" if args.resource_type == ROLE else "resource policy"
        report(
            f"{what} statement {sid} allows Principal '*' (or NotPrincipal) with no condition naming the caller; "
            "name the principals or scope it with aws:PrincipalArn/PrincipalAccount/SourceArn/SourceAccount/"
            "PrincipalOrgID/SourceVpce"
        )


def _managed_policy_name(arn: str) -> str | None:
    """``arn:aws:iam::aws:policy/job-function/SystemAdministrator`` -> ``job-function/SystemAdministrator``;
    None for customer-managed policies."""
    head, _, name = arn.partition(":policy/")
    return name if head.endswith(":iam::aws") else None


def _no_admin_policies(args: ResourceValidationArgs, report: ReportViolation) -> None:
    prop = ATTACHMENTS.get(args.resource_type)
    if prop is None:
        return
    denied = set(args.get_config().get("deniedPolicies") or DENIED_MANAGED_POLICIES)
    for arn in as_list(get(args.props, prop)):
        name = _managed_policy_name(str(arn))
        if name in denied:
            report(f"attaches the AWS managed policy {name}: administrator-class access; grant the actions needed")


def _no_service_wide_policies(args: ResourceValidationArgs, report: ReportViolation) -> None:
    prop = ATTACHMENTS.get(args.resource_type)
    if prop is None:
        return
    allowed = set(args.get_config().get("allowedPolicies") or ())
    denied = set(args.get_config().get("deniedPolicies") or DENIED_MANAGED_POLICIES)
    for arn in as_list(get(args.props, prop)):
        name = _managed_policy_name(str(arn))
        # The administrator class is iam-no-admin-managed-policies' (one violation per attachment).
        if name is None or name in allowed or name in denied or not SERVICE_WIDE.search(name.rsplit("/", 1)[-1]):
            continue
        report(
            f"attaches the AWS managed policy {name}: every resource of the service in the account (every bucket, "
            "queue ...); write a customer policy naming the stack's own resources"
        )


def _access_point_blocked(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type != ACCESS_POINT:
        return
    block = get(args.props, "publicAccessBlockConfiguration") or {}
    # AWS (and the provider) turn every setting on when the block or a field is left out.
    off = [field for field in PUBLIC_ACCESS_BLOCK if get(block, field, True) in (False, "false")]
    if off:
        report(f"public access block incomplete: {', '.join(off)} off; leave all four on")


def _service_linked_roles(args: ResourceValidationArgs, report: ReportViolation) -> None:
    """A service-linked role is account-wide and AWS-defined: a stack makes one only where it must (a new
    account), for a service it names, and with the default name its key policies refer to."""
    if args.resource_type != SERVICE_LINKED_ROLE:
        return
    allowed = set(args.get_config().get("allowedServices") or ALLOWED_SERVICE_LINKED_ROLES)
    service = str(get(args.props, "awsServiceName", ""))
    if service not in allowed:
        report(f"creates the service-linked role of {service}; allowed: {', '.join(sorted(allowed))}")
    if get(args.props, "customSuffix"):
        report("a custom suffix makes a second role that no key policy of the stack names; use the default role")


POLICIES = [
    ResourceValidationPolicy(
        name="no-anonymous-principals",
        description="Trust and resource policies (Secrets Manager, S3 buckets and access points, SQS, SNS, ECR) "
        "never allow Principal '*' unless a condition names the caller.",
        validate=_no_anonymous_principals,
        enforcement_level=EnforcementLevel.MANDATORY,
    ),
    ResourceValidationPolicy(
        name="iam-no-admin-managed-policies",
        description="No administrator-class AWS managed policy (AdministratorAccess, PowerUserAccess, IAMFullAccess "
        "...) is attached to any role, user or group.",
        validate=_no_admin_policies,
        enforcement_level=EnforcementLevel.MANDATORY,
        config_schema=PolicyConfigSchema(
            properties={
                "deniedPolicies": {
                    "type": "array",
                    "items": {"type": "string"},
                    "default": DENIED_MANAGED_POLICIES,
                    "description": "AWS managed policy names (after arn:aws:iam::aws:policy/) never to attach",
                }
            }
        ),
    ),
    ResourceValidationPolicy(
        name="iam-no-service-wide-managed-policies",
        description="No AWS managed policy granting a whole service (AmazonS3FullAccess, AmazonSQSFullAccess, "
        "*FullAccess, *PowerUser, *Administrator) is attached to any role, user or group.",
        validate=_no_service_wide_policies,
        enforcement_level=EnforcementLevel.MANDATORY,
        config_schema=PolicyConfigSchema(
            properties={
                "allowedPolicies": {
                    "type": "array",
                    "items": {"type": "string"},
                    "default": [],
                    "description": "AWS managed policy names (after arn:aws:iam::aws:policy/) a team accepts anyway",
                }
            }
        ),
    ),
    ResourceValidationPolicy(
        name="s3-access-point-public-access-block",
        description="S3 access points keep all four public-access-block settings on.",
        validate=_access_point_blocked,
        enforcement_level=EnforcementLevel.MANDATORY,
    ),
    ResourceValidationPolicy(
        name="iam-service-linked-roles-allowed",
        description="Service-linked roles only for the services the stack needs (EC2 Auto Scaling), default names.",
        validate=_service_linked_roles,
        enforcement_level=EnforcementLevel.MANDATORY,
        config_schema=PolicyConfigSchema(
            properties={
                "allowedServices": {
                    "type": "array",
                    "items": {"type": "string"},
                    "default": ALLOWED_SERVICE_LINKED_ROLES,
                    "description": "AWS service names whose service-linked role a stack may create",
                }
            }
        ),
    ),
]
