"""The model store: a versioned, KMS-encrypted S3 bucket for model artifacts and its access-log bucket.

Both buckets are private (public access blocked, ACLs off, TLS-only policies) and versioned, so an
overwritten or deleted object stays restorable for the noncurrent-version window. In production both
are protected and retained, with every sub-resource retained too: `pulumi destroy` leaves the data
and the bucket's hardening in place. S3 server access log buckets cannot use SSE-KMS (AWS refuses log
delivery to them), so the log bucket uses SSE-S3.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_aws as aws

from inference_platform.catalog.names import fit_name
from inference_platform.components.common.errors import raise_if
from inference_platform.components.storage.bucket_controls import kms_encryption, kms_only_policy, private_versioned
from inference_platform.components.storage.documents import (
    load_balancer_log_statement,
    log_bucket_policy,
)

DEFAULT_MODEL_PREFIX = "models/"
DEFAULT_NONCURRENT_TRANSITION_DAYS = 30
DEFAULT_NONCURRENT_EXPIRATION_DAYS = 90
DEFAULT_ABORT_MULTIPART_DAYS = 7
DEFAULT_COLD_PREFIX = "archive/"
DEFAULT_COLD_TAG = ("tier", "cold")
DEFAULT_COLD_TRANSITION_DAYS = 30
DEFAULT_ACCESS_LOG_RETENTION_DAYS = 365
COLD_STORAGE_CLASSES = ("STANDARD_IA", "INTELLIGENT_TIERING")
STANDARD_IA_MIN_DAYS = 30
BUCKET_ROLE_TAG = "bucket-role"
# AWS's limit for bucket_prefix (the provider appends a 26-character unique suffix).
_BUCKET_PREFIX_MAX = 37


@dataclass(frozen=True, kw_only=True)
class LifecycleArgs:
    """Lifecycle rules of the model bucket: replaced versions, unfinished uploads and cold objects."""

    noncurrent_version_transition_days: int | None = DEFAULT_NONCURRENT_TRANSITION_DAYS
    """Default 30. Replaced versions move to STANDARD_IA after this many days (>= 30); None keeps them."""
    noncurrent_version_expiration_days: int = DEFAULT_NONCURRENT_EXPIRATION_DAYS
    """Default 90. Replaced or deleted versions are removed after this many days."""
    abort_incomplete_multipart_upload_days: int = DEFAULT_ABORT_MULTIPART_DAYS
    """Default 7. Parts of unfinished multipart uploads are discarded after this many days."""
    cold_prefix: str | None = DEFAULT_COLD_PREFIX
    """Default ``archive/``. Objects under it move to ``cold_storage_class``; None: no prefix rule."""
    cold_tag: tuple[str, str] | None = DEFAULT_COLD_TAG
    """Default ``("tier", "cold")``. Objects with this tag move to ``cold_storage_class``; None: no tag rule."""
    cold_storage_class: str = "STANDARD_IA"
    """Default ``STANDARD_IA``; or ``INTELLIGENT_TIERING``."""
    cold_transition_days: int = DEFAULT_COLD_TRANSITION_DAYS
    """Default 30. Object age before a cold object moves (>= 30 for STANDARD_IA)."""


@dataclass(frozen=True, kw_only=True)
class ModelStoreArgs:
    """What the model store needs: the bucket name prefix, account, key, lifecycle and protection."""

    name_prefix: str
    """Required. Start of both bucket names (lower-cased, cut to S3's bucket_prefix limit)."""
    account_id: str
    """Required. Only this account's buckets may deliver access logs to the log bucket."""
    kms_key_arn: pulumi.Input[str]
    """Required. The customer-managed key (the stack's storage key) for SSE-KMS with a bucket key."""
    model_prefix: str = DEFAULT_MODEL_PREFIX
    """Default ``models/``. Where model artifacts live; recorded as an output for the access roles."""
    lifecycle: LifecycleArgs = field(default_factory=LifecycleArgs)
    """Default: see :class:`LifecycleArgs`."""
    access_log_retention_days: int = DEFAULT_ACCESS_LOG_RETENTION_DAYS
    """Default 365. Access logs (and their replaced versions) are removed after this many days."""
    force_destroy: bool = False
    """Default ``False``. Let a destroy delete non-empty buckets; excludes ``protect``."""
    protect: bool = False
    """Default ``False``. Protect and retain both buckets and all their configuration (production)."""
    load_balancer_log_prefix: str | None = None
    """Default none (no load balancer writes here). Prefix under which Elastic Load Balancing may write
    this account's load-balancer access logs (the edge's ALB); needs ``region``."""
    region: str | None = None
    """Default none. The stack's region (which ELB log-delivery principal applies)."""
    partition: str = "aws"
    """Default ``aws``."""
    log_sources: Sequence[str] = ()
    """Default none. ``aws:SourceArn`` patterns (ArnLike) of the stack's other buckets whose server access logs
    the log bucket takes (the asynchronous lane's: ``arn:aws:s3:::<bucket_prefix(name_prefix, "batch")>*``)."""


class ModelStore(pulumi.ComponentResource):
    """The model store: a versioned, KMS-encrypted, private S3 bucket for model artifacts and its access-log bucket."""

    bucket_name: pulumi.Output[str]
    bucket_arn: pulumi.Output[str]
    bucket_regional_domain_name: pulumi.Output[str]
    log_bucket_name: pulumi.Output[str]
    log_bucket_arn: pulumi.Output[str]
    model_prefix: str

    def __init__(self, name: str, args: ModelStoreArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        _validate(args)
        super().__init__("inference:storage:ModelStore", name, None, opts)
        prefix = _bucket_prefix(args.name_prefix)
        # A bucket's name is fixed when it is created: a later change of how the prefix is derived (issue 17
        # §5 hashed long stack names) must never replace a data bucket, so the prefix is ignored after create.
        stateful = pulumi.ResourceOptions(
            parent=self, protect=args.protect, retain_on_delete=args.protect, ignore_changes=["bucketPrefix"]
        )
        # A retained bucket must keep its hardening: its configuration is retained along with it.
        config = pulumi.ResourceOptions(parent=self, retain_on_delete=args.protect)

        logs = aws.s3.Bucket(
            f"{name}-logs",
            bucket_prefix=f"{prefix}logs-",
            force_destroy=args.force_destroy,
            tags={BUCKET_ROLE_TAG: "access-logs"},
            opts=stateful,
        )
        log_controls = private_versioned(f"{name}-logs", logs, config)
        aws.s3.BucketServerSideEncryptionConfiguration(
            f"{name}-logs-encryption",
            bucket=logs.bucket,
            rules=[
                {
                    "apply_server_side_encryption_by_default": {"sse_algorithm": "AES256"},
                    "blocked_encryption_types": ["SSE-C"],
                }
            ],
            opts=config,
        )
        days = args.access_log_retention_days
        aws.s3.BucketLifecycleConfiguration(
            f"{name}-logs-lifecycle",
            bucket=logs.bucket,
            rules=[
                {
                    "id": "expire-access-logs",
                    "status": "Enabled",
                    "filter": {"prefix": ""},
                    "expiration": {"days": days},
                    "noncurrent_version_expiration": {"noncurrent_days": days},
                    "abort_incomplete_multipart_upload": {"days_after_initiation": 1},
                }
            ],
            opts=pulumi.ResourceOptions.merge(config, pulumi.ResourceOptions(depends_on=log_controls)),
        )

        models = aws.s3.Bucket(
            f"{name}-models",
            bucket_prefix=f"{prefix}models-",
            force_destroy=args.force_destroy,
            tags={BUCKET_ROLE_TAG: "models"},
            opts=stateful,
        )
        model_controls = private_versioned(f"{name}-models", models, config)
        kms_encryption(f"{name}-models", models, args.kms_key_arn, config)
        aws.s3.BucketLifecycleConfiguration(
            f"{name}-models-lifecycle",
            bucket=models.bucket,
            rules=lifecycle_rules(args.lifecycle),
            opts=pulumi.ResourceOptions.merge(config, pulumi.ResourceOptions(depends_on=model_controls)),
        )
        kms_only_policy(
            f"{name}-models",
            models,
            args.kms_key_arn,
            pulumi.ResourceOptions.merge(config, pulumi.ResourceOptions(depends_on=model_controls)),
        )
        log_policy = aws.s3.BucketPolicy(
            f"{name}-logs-policy",
            bucket=logs.bucket,
            policy=pulumi.Output.all(logs.arn, models.arn).apply(
                lambda v: json.dumps(
                    log_bucket_policy(v[0], [v[1], *args.log_sources], args.account_id, _log_writers(args, v[0]))
                )
            ),
            opts=pulumi.ResourceOptions.merge(config, pulumi.ResourceOptions(depends_on=log_controls)),
        )
        aws.s3.BucketLogging(
            f"{name}-models-logging",
            bucket=models.bucket,
            target_bucket=logs.bucket,
            target_prefix="models/",
            # Date-partitioned keys let Athena prune by day instead of scanning every log object.
            target_object_key_format={"partitioned_prefix": {"partition_date_source": "EventTime"}},
            opts=pulumi.ResourceOptions.merge(config, pulumi.ResourceOptions(depends_on=[log_policy])),
        )

        self.bucket_name = models.bucket
        self.bucket_arn = models.arn
        self.bucket_regional_domain_name = models.bucket_regional_domain_name
        self.log_bucket_name = logs.bucket
        self.log_bucket_arn = logs.arn
        self.model_prefix = args.model_prefix
        self.register_outputs(
            {
                "bucket_name": self.bucket_name,
                "bucket_arn": self.bucket_arn,
                "bucket_regional_domain_name": self.bucket_regional_domain_name,
                "log_bucket_name": self.log_bucket_name,
                "log_bucket_arn": self.log_bucket_arn,
                "model_prefix": self.model_prefix,
            }
        )


def lifecycle_rules(lifecycle: LifecycleArgs) -> list[dict[str, Any]]:
    """The model bucket's lifecycle rules, one per concern, each with a stable id."""
    housekeeping: dict[str, Any] = {
        "id": "noncurrent-versions",
        "status": "Enabled",
        "filter": {"prefix": ""},
        "noncurrent_version_expiration": {"noncurrent_days": lifecycle.noncurrent_version_expiration_days},
        # A delete marker with no versions left behind it only slows listings.
        "expiration": {"expired_object_delete_marker": True},
        "abort_incomplete_multipart_upload": {
            "days_after_initiation": lifecycle.abort_incomplete_multipart_upload_days
        },
    }
    if lifecycle.noncurrent_version_transition_days is not None:
        housekeeping["noncurrent_version_transitions"] = [
            {"noncurrent_days": lifecycle.noncurrent_version_transition_days, "storage_class": "STANDARD_IA"}
        ]
    rules = [housekeeping]
    cold = [{"days": lifecycle.cold_transition_days, "storage_class": lifecycle.cold_storage_class}]
    if lifecycle.cold_prefix is not None:
        rules.append(
            {"id": "cold-prefix", "status": "Enabled", "filter": {"prefix": lifecycle.cold_prefix}, "transitions": cold}
        )
    if lifecycle.cold_tag is not None:
        key, value = lifecycle.cold_tag
        rules.append(
            {
                "id": "cold-tag",
                "status": "Enabled",
                "filter": {"tag": {"key": key, "value": value}},
                "transitions": cold,
            }
        )
    return rules


def _bucket_prefix(name_prefix: str) -> str:
    """``name_prefix`` as a valid S3 bucket-name start, leaving room for the role word and suffix."""
    cleaned = re.sub(r"[^a-z0-9-]+", "-", name_prefix.lower()).strip("-")
    room = _BUCKET_PREFIX_MAX - len("models-") - 1
    return f"{fit_name(cleaned, room)}-"


def bucket_prefix(name_prefix: str, role: str) -> str:
    """The ``bucket_prefix`` of the stack's bucket for ``role`` (at most as long as ``models``):
    ``<fitted prefix>-<role>-``, the shape of the model store's own two buckets."""
    if len(role) > len("models"):
        raise ValueError(f"bucket role {role!r} is longer than 'models': the fitted prefix leaves no room for it")
    return f"{_bucket_prefix(name_prefix)}{role}-"


def _validate(args: ModelStoreArgs) -> None:
    problems = []
    life = args.lifecycle
    days = {
        "lifecycle.noncurrent_version_expiration_days": life.noncurrent_version_expiration_days,
        "lifecycle.abort_incomplete_multipart_upload_days": life.abort_incomplete_multipart_upload_days,
        "lifecycle.cold_transition_days": life.cold_transition_days,
        "access_log_retention_days": args.access_log_retention_days,
    }
    if life.noncurrent_version_transition_days is not None:
        days["lifecycle.noncurrent_version_transition_days"] = life.noncurrent_version_transition_days
    problems += [f"{k}={v} must be > 0" for k, v in days.items() if v <= 0]
    transition = life.noncurrent_version_transition_days
    if transition is not None and transition >= life.noncurrent_version_expiration_days:
        problems.append(
            f"lifecycle.noncurrent_version_transition_days={transition} must come before "
            f"noncurrent_version_expiration_days={life.noncurrent_version_expiration_days}"
        )
    if transition is not None and 0 < transition < STANDARD_IA_MIN_DAYS:
        problems.append(f"lifecycle.noncurrent_version_transition_days={transition}: STANDARD_IA needs >= 30")
    if life.cold_storage_class not in COLD_STORAGE_CLASSES:
        problems.append(f"lifecycle.cold_storage_class={life.cold_storage_class!r}: one of {COLD_STORAGE_CLASSES}")
    elif life.cold_storage_class == "STANDARD_IA" and 0 < life.cold_transition_days < STANDARD_IA_MIN_DAYS:
        problems.append(f"lifecycle.cold_transition_days={life.cold_transition_days}: STANDARD_IA needs >= 30")
    for label, prefix in (("model_prefix", args.model_prefix), ("lifecycle.cold_prefix", life.cold_prefix)):
        if prefix is not None and (not prefix.endswith("/") or prefix.startswith("/")):
            problems.append(f"{label}={prefix!r} must end with '/' and not start with '/'")
    if args.force_destroy and args.protect:
        problems.append("force_destroy and protect exclude each other: protected data is never force-destroyed")
    raise_if("ModelStore", problems)


def _log_writers(args: ModelStoreArgs, log_bucket_arn: str) -> list[dict[str, Any]]:
    if args.load_balancer_log_prefix is None or args.region is None:
        return []
    return [
        load_balancer_log_statement(
            log_bucket_arn, args.load_balancer_log_prefix, args.account_id, args.region, args.partition
        )
    ]
