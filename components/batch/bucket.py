"""The asynchronous lane's bucket: uploaded request files, batch records, per-line results and the assembled
output and error files.

Hardened as the model store's bucket is, from the same blocks (``components.storage.bucket_controls``):
private, versioned, SSE-KMS under the stack's CMK with a bucket key, TLS-only and KMS-only uploads, server
access logs to the stack's log bucket. Unlike models, everything here is transient: a lifecycle expires files
and results (batch records, per-line results, assembled output files) after ``retention_days``. In
production the bucket is protected and retained like every stateful resource: clients' files outlive a
mistaken ``pulumi destroy``.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_aws as aws

from inference_platform.components.batch.documents import lifecycle_rules
from inference_platform.components.common.errors import raise_if
from inference_platform.components.storage.bucket_controls import kms_encryption, kms_only_policy, private_versioned
from inference_platform.components.storage.model_store import BUCKET_ROLE_TAG, bucket_prefix

BUCKET_ROLE = "batch"
DEFAULT_RETENTION_DAYS = 30
"""OpenAI's default for batch files."""
ACCESS_LOG_PREFIX = "batch/"


@dataclass(frozen=True, kw_only=True)
class BatchBucketArgs:
    """What the lane's bucket needs: the name prefix, the key, the access-log bucket, retention and protection."""

    name_prefix: str
    """Required. Start of the bucket name (lower-cased, fitted to S3's bucket_prefix limit)."""
    kms_key_arn: pulumi.Input[str]
    """Required. The stack's storage CMK (SSE-KMS with a bucket key)."""
    log_bucket: pulumi.Input[str]
    """Required. The stack's access-log bucket (the model store's; it admits this bucket's deliveries)."""
    retention_days: int = DEFAULT_RETENTION_DAYS
    """Default 30, >= 1. Files and results expire after this many days."""
    protect: bool = False
    """Default ``False``. Protect and retain the bucket and its configuration (production)."""
    force_destroy: bool = False
    """Default ``False``. Let a destroy delete the bucket with objects in it; excludes ``protect``."""


class BatchBucket(pulumi.ComponentResource):
    """The lane's encrypted S3 bucket: uploaded request files, batch records, per-line results and output files."""

    bucket_name: pulumi.Output[str]
    bucket_arn: pulumi.Output[str]

    def __init__(self, name: str, args: BatchBucketArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        _validate(args)
        super().__init__("inference:batch:BatchBucket", name, None, opts)
        stateful = pulumi.ResourceOptions(
            parent=self, protect=args.protect, retain_on_delete=args.protect, ignore_changes=["bucketPrefix"]
        )
        config = pulumi.ResourceOptions(parent=self, retain_on_delete=args.protect)
        bucket = aws.s3.Bucket(
            f"{name}-bucket",
            bucket_prefix=bucket_prefix(args.name_prefix, BUCKET_ROLE),
            force_destroy=args.force_destroy,
            tags={BUCKET_ROLE_TAG: BUCKET_ROLE},
            opts=stateful,
        )
        controls = private_versioned(f"{name}-bucket", bucket, config)
        after_controls = pulumi.ResourceOptions.merge(config, pulumi.ResourceOptions(depends_on=controls))
        kms_encryption(f"{name}-bucket", bucket, args.kms_key_arn, config)
        aws.s3.BucketLifecycleConfiguration(
            f"{name}-bucket-lifecycle",
            bucket=bucket.bucket,
            rules=lifecycle_rules(retention_days=args.retention_days),
            opts=after_controls,
        )
        kms_only_policy(f"{name}-bucket", bucket, args.kms_key_arn, after_controls)
        aws.s3.BucketLogging(
            f"{name}-bucket-logging",
            bucket=bucket.bucket,
            target_bucket=args.log_bucket,
            target_prefix=ACCESS_LOG_PREFIX,
            target_object_key_format={"partitioned_prefix": {"partition_date_source": "EventTime"}},
            opts=config,
        )
        self.bucket_name = bucket.bucket
        self.bucket_arn = bucket.arn
        self.register_outputs({"bucket_name": self.bucket_name, "bucket_arn": self.bucket_arn})


def _validate(args: BatchBucketArgs) -> None:
    problems = []
    if args.retention_days < 1:
        problems.append(f"retention_days={args.retention_days} must be >= 1")
    if args.force_destroy and args.protect:
        problems.append("force_destroy and protect exclude each other: protected data is never force-destroyed")
    raise_if("BatchBucket", problems)
