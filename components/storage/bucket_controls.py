"""The hardening every data bucket of the stack gets, in one definition: the model store's model bucket and the
asynchronous lane's bucket are built from these blocks (policies/rules/storage.py judges the result).

- ownership enforced (ACLs off), every public access path blocked, versioning on;
- SSE-KMS under the stack's CMK with an S3 bucket key (one data key per bucket instead of one KMS call per
  object), SSE-C refused;
- a bucket policy denying requests without TLS and uploads under any other encryption or key
  (``components.storage.documents.model_bucket_policy``).
"""

from __future__ import annotations

import json

import pulumi
import pulumi_aws as aws

from inference_platform.components.storage.documents import model_bucket_policy


def private_versioned(name: str, bucket: aws.s3.Bucket, opts: pulumi.ResourceOptions) -> list[pulumi.Resource]:
    """Ownership enforced (ACLs off), every public access path blocked, versioning on."""
    ownership = aws.s3.BucketOwnershipControls(
        f"{name}-ownership", bucket=bucket.bucket, rule={"object_ownership": "BucketOwnerEnforced"}, opts=opts
    )
    public = aws.s3.BucketPublicAccessBlock(
        f"{name}-public-access",
        bucket=bucket.bucket,
        block_public_acls=True,
        block_public_policy=True,
        ignore_public_acls=True,
        restrict_public_buckets=True,
        opts=opts,
    )
    versioning = aws.s3.BucketVersioning(
        f"{name}-versioning", bucket=bucket.bucket, versioning_configuration={"status": "Enabled"}, opts=opts
    )
    return [ownership, public, versioning]


def kms_encryption(
    name: str, bucket: aws.s3.Bucket, kms_key_arn: pulumi.Input[str], opts: pulumi.ResourceOptions
) -> aws.s3.BucketServerSideEncryptionConfiguration:
    """Default SSE-KMS under ``kms_key_arn`` with a bucket key; SSE-C refused."""
    return aws.s3.BucketServerSideEncryptionConfiguration(
        f"{name}-encryption",
        bucket=bucket.bucket,
        rules=[
            {
                "apply_server_side_encryption_by_default": {
                    "sse_algorithm": "aws:kms",
                    "kms_master_key_id": kms_key_arn,
                },
                # One data key per bucket instead of one KMS call per object: model loads read thousands of
                # shards, a batch writes one result object per line; both would meet KMS request quotas.
                "bucket_key_enabled": True,
                "blocked_encryption_types": ["SSE-C"],
            }
        ],
        opts=opts,
    )


def kms_only_policy(
    name: str, bucket: aws.s3.Bucket, kms_key_arn: pulumi.Input[str], opts: pulumi.ResourceOptions
) -> aws.s3.BucketPolicy:
    """TLS only, and no upload under another encryption or key."""
    return aws.s3.BucketPolicy(
        f"{name}-policy",
        bucket=bucket.bucket,
        policy=pulumi.Output.all(bucket.arn, kms_key_arn).apply(lambda v: json.dumps(model_bucket_policy(v[0], v[1]))),
        opts=opts,
    )
