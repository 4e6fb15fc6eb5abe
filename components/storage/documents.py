"""Policy documents of the model store, its access roles and the secrets (pure: no Pulumi).

Roles assumed by pods trust EKS Pod Identity through components/identity/pod_identity.py's trust policy.

Every document names its resources: no ``Resource: "*"`` and no service-wide ``s3:*`` grants. The
components call these inside ``apply`` only to serialise; no resource is ever created there.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

VERSION = "2012-10-17"
S3_LOG_DELIVERY_SERVICE = "logging.s3.amazonaws.com"

# Inference pods: read objects and list under the model prefix, nothing else.
MODEL_READ_ACTIONS: tuple[str, ...] = ("s3:GetObject",)
# Model sync / engine build: what `inferctl artifacts upload` needs (PutObject covers the multipart
# calls; the manifest of a failed upload is deleted, which versioning turns into a delete marker).
MODEL_WRITE_ACTIONS: tuple[str, ...] = (
    "s3:GetObject",
    "s3:PutObject",
    "s3:DeleteObject",
    "s3:AbortMultipartUpload",
    "s3:ListMultipartUploadParts",
)
SECRET_READ_ACTIONS: tuple[str, ...] = ("secretsmanager:GetSecretValue", "secretsmanager:DescribeSecret")


def deny_insecure_transport(bucket_arn: str) -> dict[str, Any]:
    return {
        "Sid": "DenyInsecureTransport",
        "Effect": "Deny",
        "Principal": "*",
        "Action": "s3:*",
        "Resource": [bucket_arn, f"{bucket_arn}/*"],
        "Condition": {"Bool": {"aws:SecureTransport": "false"}},
    }


def model_bucket_policy(bucket_arn: str, kms_key_arn: str) -> dict[str, Any]:
    """TLS only, and no object may be written with any encryption but SSE-KMS under the storage key.

    The conditions are ``IfExists``: an upload without encryption headers gets the bucket's default
    (SSE-KMS, storage key), so it is encrypted as required and clients need no extra headers.
    """
    objects = f"{bucket_arn}/*"
    return {
        "Version": VERSION,
        "Statement": [
            deny_insecure_transport(bucket_arn),
            {
                "Sid": "DenyUploadsWithoutSseKms",
                "Effect": "Deny",
                "Principal": "*",
                "Action": "s3:PutObject",
                "Resource": objects,
                "Condition": {"StringNotEqualsIfExists": {"s3:x-amz-server-side-encryption": "aws:kms"}},
            },
            {
                "Sid": "DenyUploadsWithAnotherKey",
                "Effect": "Deny",
                "Principal": "*",
                "Action": "s3:PutObject",
                "Resource": objects,
                "Condition": {
                    "StringNotEqualsIfExists": {"s3:x-amz-server-side-encryption-aws-kms-key-id": kms_key_arn}
                },
            },
        ],
    }


def log_bucket_policy(log_bucket_arn: str, source_bucket_arns: Sequence[str], account_id: str) -> dict[str, Any]:
    """TLS only; S3's log delivery may write access logs of this account's source buckets, nothing else."""
    return {
        "Version": VERSION,
        "Statement": [
            deny_insecure_transport(log_bucket_arn),
            {
                "Sid": "AllowServerAccessLogDelivery",
                "Effect": "Allow",
                "Principal": {"Service": S3_LOG_DELIVERY_SERVICE},
                "Action": "s3:PutObject",
                "Resource": f"{log_bucket_arn}/*",
                "Condition": {
                    "ArnLike": {"aws:SourceArn": sorted(source_bucket_arns)},
                    "StringEquals": {"aws:SourceAccount": account_id},
                },
            },
        ],
    }


def model_access_policy(bucket_arn: str, prefix: str, kms_key_arn: str, region: str, *, write: bool) -> dict[str, Any]:
    """Objects under ``prefix`` only; the key only through S3 in this region."""
    objects = f"{bucket_arn}/{prefix}*"
    kms_actions = ["kms:Decrypt", "kms:GenerateDataKey"] if write else ["kms:Decrypt"]
    listing: dict[str, Any] = {
        "Sid": "ListModelPrefix",
        "Effect": "Allow",
        "Action": "s3:ListBucket",
        "Resource": bucket_arn,
    }
    if write:
        # HeadObject answers 404 (not 403) for a missing key only to callers allowed to list without a
        # prefix condition; `inferctl artifacts upload` relies on that to refuse overwriting a version.
        listing["Sid"] = "ListBucket"
    else:
        listing["Condition"] = {"StringLike": {"s3:prefix": [prefix, f"{prefix}*"]}}
    return {
        "Version": VERSION,
        "Statement": [
            {
                "Sid": "ModelObjects",
                "Effect": "Allow",
                "Action": list(MODEL_WRITE_ACTIONS if write else MODEL_READ_ACTIONS),
                "Resource": objects,
            },
            listing,
            {
                "Sid": "StorageKeyThroughS3",
                "Effect": "Allow",
                "Action": kms_actions,
                "Resource": kms_key_arn,
                "Condition": {"StringEquals": {"kms:ViaService": f"s3.{region}.amazonaws.com"}},
            },
        ],
    }


def secret_read_policy(secret_arns: Sequence[str], kms_key_arn: str, region: str) -> dict[str, Any]:
    """The named secrets only; their key only through Secrets Manager in this region."""
    return {
        "Version": VERSION,
        "Statement": [
            {
                "Sid": "ReadSecrets",
                "Effect": "Allow",
                "Action": list(SECRET_READ_ACTIONS),
                "Resource": sorted(secret_arns),
            },
            {
                "Sid": "SecretKeyThroughSecretsManager",
                "Effect": "Allow",
                "Action": ["kms:Decrypt"],
                "Resource": kms_key_arn,
                "Condition": {"StringEquals": {"kms:ViaService": f"secretsmanager.{region}.amazonaws.com"}},
            },
        ],
    }
