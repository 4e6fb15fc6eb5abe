"""Storage rules: S3 buckets encrypted with KMS, private, TLS-only, versioned and logged; stateful
production resources protected; storage access granted by name, never by wildcard.

In pulumi-aws 7 a bucket's settings are separate resources (versioning, encryption, public access
block, policy, logging). The stack rules relate each to its bucket through the property dependency of
its ``bucket`` input (preview-safe: names and ids are unknown before creation), falling back to the
bucket name when the program wrote a literal one.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    PolicyConfigSchema,
    PolicyResource,
    ResourceValidationArgs,
    StackValidationArgs,
)

from inference_platform.policies.callbacks import ReportViolation, ResourceValidationPolicy, StackValidationPolicy
from inference_platform.policies.props import as_document, as_list, get, statements

BUCKETS = frozenset({"aws:s3/bucket:Bucket", "aws:s3/bucketV2:BucketV2"})


def _family(name: str) -> frozenset[str]:
    """A bucket sub-resource's type token and its deprecated ``V2`` twin."""
    lower = name[0].lower() + name[1:]
    return frozenset({f"aws:s3/{lower}:{name}", f"aws:s3/{lower}V2:{name}V2"})


ENCRYPTION = _family("BucketServerSideEncryptionConfiguration")
VERSIONING = _family("BucketVersioning")
LOGGING = _family("BucketLogging")
PUBLIC_ACCESS_BLOCK = frozenset({"aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock"})
BUCKET_POLICY = frozenset({"aws:s3/bucketPolicy:BucketPolicy"})
KMS_ALGORITHMS = frozenset({"aws:kms", "aws:kms:dsse"})
AWS_MANAGED_S3_KEY = "alias/aws/s3"
PUBLIC_ACCESS_FLAGS = ("blockPublicAcls", "blockPublicPolicy", "ignorePublicAcls", "restrictPublicBuckets")

# Resources whose deletion loses data or locks it away: protected in production stacks.
STATEFUL_TYPES: tuple[str, ...] = (
    *sorted(BUCKETS),
    "aws:kms/key:Key",
    "aws:secretsmanager/secret:Secret",
    "aws:fsx/lustreFileSystem:LustreFileSystem",
    # Queued work and a dead-letter queue's evidence (issue 28 R8: the batch lane's queues were left out).
    "aws:sqs/queue:Queue",
    # Images (the serving, batch and verification images a rollout pulls by digest).
    "aws:ecr/repository:Repository",
    # Counters and caches that take state with them (the rate-limit store), file systems, tables, databases.
    "aws:elasticache/replicationGroup:ReplicationGroup",
    "aws:elasticache/cluster:Cluster",
    "aws:elasticache/serverlessCache:ServerlessCache",
    "aws:efs/fileSystem:FileSystem",
    "aws:fsx/openZfsFileSystem:OpenZfsFileSystem",
    "aws:dynamodb/table:Table",
    "aws:rds/instance:Instance",
    "aws:rds/cluster:Cluster",
    "aws:ebs/volume:Volume",
)
"""Every AWS type that holds data a replacement or ``pulumi destroy`` would lose: in production each must be
protected (and the components retain it on delete, so ``pulumi destroy`` finishes after ``pulumi state unprotect``
and leaves the data in the account: docs/deploying.md)."""
IAM_DOCUMENT_TYPES = frozenset(
    {
        "aws:iam/rolePolicy:RolePolicy",
        "aws:iam/policy:Policy",
        "aws:iam/userPolicy:UserPolicy",
        "aws:iam/groupPolicy:GroupPolicy",
    }
)
STORAGE_SERVICES = ("s3", "secretsmanager")


class _Buckets:
    """Every bucket of the stack and the sub-resources that configure it."""

    def __init__(self, resources: Iterable[PolicyResource]) -> None:
        resources = list(resources)
        self.buckets = [r for r in resources if r.resource_type in BUCKETS]
        by_name = {get(b.props, "bucket"): b for b in self.buckets if get(b.props, "bucket")}
        self._settings: dict[str, list[PolicyResource]] = {b.urn: [] for b in self.buckets}
        self.log_targets: set[str] = set()
        for r in resources:
            if r.resource_type in BUCKETS:
                target = get(r.props, "logging.targetBucket")
                if target in by_name:
                    self.log_targets.add(by_name[target].urn)
                continue
            for bucket in _related(r, "bucket", by_name):
                self._settings[bucket.urn].append(r)
            if r.resource_type in LOGGING:
                self.log_targets.update(b.urn for b in _related(r, "targetBucket", by_name))

    def settings(self, bucket: PolicyResource, types: frozenset[str]) -> list[PolicyResource]:
        return [r for r in self._settings[bucket.urn] if r.resource_type in types]


def _related(resource: PolicyResource, prop: str, by_name: Mapping[Any, PolicyResource]) -> list[PolicyResource]:
    deps = [d for d in resource.property_dependencies.get(prop, []) if d.resource_type in BUCKETS]
    if deps:
        return deps
    named = by_name.get(get(resource.props, prop))
    return [named] if named is not None else []


def _kms_encrypted(args: StackValidationArgs, report: ReportViolation) -> None:
    view = _Buckets(args.resources)
    for bucket in view.buckets:
        rules = [rule for cfg in view.settings(bucket, ENCRYPTION) for rule in as_list(get(cfg.props, "rules"))]
        rules += as_list(get(bucket.props, "serverSideEncryptionConfiguration.rule"))
        defaults = [get(rule, "applyServerSideEncryptionByDefault", {}) or {} for rule in rules]
        if not defaults:
            report(f"{bucket.name}: no default encryption; add a BucketServerSideEncryptionConfiguration", bucket.urn)
        elif bucket.urn in view.log_targets:
            continue  # S3 delivers server access logs only to SSE-S3 buckets: encrypted, not with KMS
        elif not any(_customer_kms(d) for d in defaults):
            algorithms = ", ".join(sorted({str(get(d, "sseAlgorithm")) for d in defaults}))
            report(
                f"{bucket.name}: default encryption is {algorithms}; use aws:kms with a customer-managed key "
                "(kms_master_key_id)",
                bucket.urn,
            )


def _customer_kms(default: Mapping[str, Any]) -> bool:
    key = get(default, "kmsMasterKeyId")
    return get(default, "sseAlgorithm") in KMS_ALGORITHMS and bool(key) and key != AWS_MANAGED_S3_KEY


def _public_access_blocked(args: StackValidationArgs, report: ReportViolation) -> None:
    view = _Buckets(args.resources)
    for bucket in view.buckets:
        blocks = view.settings(bucket, PUBLIC_ACCESS_BLOCK)
        if not blocks:
            report(f"{bucket.name}: no BucketPublicAccessBlock; block all four public access paths", bucket.urn)
            continue
        open_flags = sorted({f for b in blocks for f in PUBLIC_ACCESS_FLAGS if get(b.props, f) is not True})
        if open_flags and not any(all(get(b.props, f) is True for f in PUBLIC_ACCESS_FLAGS) for b in blocks):
            report(f"{bucket.name}: public access not blocked: {', '.join(open_flags)} must be true", bucket.urn)


def denies_insecure_transport(document: Mapping[str, Any] | None) -> bool:
    """A Deny for everyone, every S3 action, bucket and objects, when aws:SecureTransport is false."""
    for statement in statements(document):
        principal = statement.get("Principal")
        everyone = principal == "*" or (isinstance(principal, Mapping) and "*" in as_list(principal.get("AWS")))
        actions = set(as_list(statement.get("Action")))
        resources = [str(r) for r in as_list(statement.get("Resource"))]
        condition = get(statement, "Condition", {}) or {}
        secure = [get(condition, f"{op}.aws:SecureTransport") for op in ("Bool", "BoolIfExists")]
        if (
            statement.get("Effect") == "Deny"
            and everyone
            and actions & {"s3:*", "*"}
            and any(str(v).lower() == "false" for v in secure if v is not None)
            and (
                "*" in resources
                or (any(r.endswith("/*") for r in resources) and any(not r.endswith("/*") for r in resources))
            )
        ):
            return True
    return False


def _tls_only(args: StackValidationArgs, report: ReportViolation) -> None:
    view = _Buckets(args.resources)
    for bucket in view.buckets:
        documents = [as_document(get(p.props, "policy")) for p in view.settings(bucket, BUCKET_POLICY)]
        documents.append(as_document(get(bucket.props, "policy")))
        if not any(denies_insecure_transport(d) for d in documents):
            report(
                f"{bucket.name}: no bucket policy statement denies requests without TLS "
                "(Deny s3:* to '*' on the bucket and its objects when aws:SecureTransport is false)",
                bucket.urn,
            )


def _versioned(args: StackValidationArgs, report: ReportViolation) -> None:
    view = _Buckets(args.resources)
    for bucket in view.buckets:
        statuses = [get(v.props, "versioningConfiguration.status") for v in view.settings(bucket, VERSIONING)]
        if get(bucket.props, "versioning.enabled") is True:
            statuses.append("Enabled")
        if "Enabled" not in statuses:
            found = f" (status {', '.join(map(str, statuses))})" if statuses else ""
            report(f"{bucket.name}: versioning is not enabled{found}; add a BucketVersioning", bucket.urn)


def _access_logged(args: StackValidationArgs, report: ReportViolation) -> None:
    view = _Buckets(args.resources)
    for bucket in view.buckets:
        if bucket.urn in view.log_targets:
            continue  # a log bucket logging into itself would log its own log deliveries forever
        if not view.settings(bucket, LOGGING) and not get(bucket.props, "logging.targetBucket"):
            report(f"{bucket.name}: no server access logging; add a BucketLogging to a log bucket", bucket.urn)


SQS_DEFAULT_RETENTION_SECONDS = 345_600
"""SQS keeps a message 4 days unless ``MessageRetentionPeriod`` says otherwise (SQS API reference, SetQueueAttributes)."""
TRANSIENT_QUEUE_SECONDS = 300
"""A queue whose messages expire within 5 minutes holds no state worth keeping (Karpenter's interruption queue:
a notice older than that is useless); anything longer is queued work."""


def _transient_queue(args: ResourceValidationArgs) -> bool:
    if args.resource_type != "aws:sqs/queue:Queue":
        return False
    retention = get(args.props, "messageRetentionSeconds", SQS_DEFAULT_RETENTION_SECONDS)
    return float(retention) <= TRANSIENT_QUEUE_SECONDS


def _stateful_protected(args: ResourceValidationArgs, report: ReportViolation) -> None:
    config = args.get_config()
    if not config.get("production", False) or args.resource_type not in config.get("types", STATEFUL_TYPES):
        return
    if _transient_queue(args):
        return
    if not args.opts.protect:
        report(
            f"{args.name}: a production {args.resource_type.rsplit(':', 1)[-1]} must be protected "
            "(protect=True, with retain_on_delete) so `pulumi destroy` cannot delete its data"
        )


def broad_storage_grants(document: Mapping[str, Any] | None) -> Iterator[str]:
    """Why each Allow statement granting S3 or Secrets Manager actions is broader than named resources."""
    for i, statement in enumerate(statements(document)):
        if statement.get("Effect") != "Allow":
            continue
        sid = statement.get("Sid", f"#{i}")
        if "NotAction" in statement:
            yield f"statement {sid} allows NotAction: every action but a few, S3 and Secrets Manager included"
            continue
        actions = [str(a) for a in as_list(statement.get("Action"))]
        storage = [a for a in actions if a == "*" or a.split(":", 1)[0].lower() in STORAGE_SERVICES]
        if not storage:
            continue
        reasons = []
        wildcards = [a for a in storage if a == "*" or a.split(":", 1)[1] == "*"]
        if wildcards:
            reasons.append(f"allows {', '.join(wildcards)}; list the actions the workload needs")
        if "*" in [str(r) for r in as_list(statement.get("Resource"))] or "NotResource" in statement:
            reasons.append(f"grants {', '.join(storage)} on every resource; name the bucket/prefix or secret ARNs")
        if reasons:
            yield f"statement {sid} " + " and ".join(reasons)


def _least_privilege(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type in IAM_DOCUMENT_TYPES:
        documents = [as_document(get(args.props, "policy"))]
    elif args.resource_type == "aws:iam/role:Role":
        documents = [as_document(get(p, "policy")) for p in as_list(get(args.props, "inlinePolicies"))]
    else:
        return
    for document in documents:
        for problem in broad_storage_grants(document):
            report(f"{args.name}: {problem}")


POLICIES = [
    StackValidationPolicy(
        name="s3-kms-encryption",
        description="S3 buckets encrypt by default with SSE-KMS under a customer-managed key (access-log "
        "buckets, which S3 only delivers to under SSE-S3, excepted).",
        validate=_kms_encrypted,
        enforcement_level=EnforcementLevel.MANDATORY,
    ),
    StackValidationPolicy(
        name="s3-public-access-blocked",
        description="Every S3 bucket has a public access block with all four settings on.",
        validate=_public_access_blocked,
        enforcement_level=EnforcementLevel.MANDATORY,
    ),
    StackValidationPolicy(
        name="s3-tls-only",
        description="Every S3 bucket policy denies requests made without TLS.",
        validate=_tls_only,
        enforcement_level=EnforcementLevel.MANDATORY,
    ),
    StackValidationPolicy(
        name="s3-versioning",
        description="Every S3 bucket is versioned, so overwritten or deleted objects stay restorable.",
        validate=_versioned,
        enforcement_level=EnforcementLevel.MANDATORY,
    ),
    StackValidationPolicy(
        name="s3-access-logging",
        description="Every S3 bucket but an access-log bucket writes server access logs.",
        validate=_access_logged,
        enforcement_level=EnforcementLevel.MANDATORY,
    ),
    ResourceValidationPolicy(
        name="stateful-resources-protected",
        description="In production stacks, every resource that holds data (buckets, KMS keys, secrets, file "
        "systems, queues, image repositories, caches, tables, databases, volumes) is protected.",
        validate=_stateful_protected,
        enforcement_level=EnforcementLevel.MANDATORY,
        config_schema=PolicyConfigSchema(
            properties={
                "production": {"type": "boolean", "default": False},
                "types": {"type": "array", "items": {"type": "string"}, "default": list(STATEFUL_TYPES)},
            }
        ),
    ),
    ResourceValidationPolicy(
        name="storage-least-privilege",
        description="IAM policies grant S3 and Secrets Manager actions by name on named resources: no s3:*, "
        "no secretsmanager:*, no Resource '*'.",
        validate=_least_privilege,
        enforcement_level=EnforcementLevel.MANDATORY,
    ),
]
