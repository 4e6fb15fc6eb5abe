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
LOAD_BALANCER_LOG_DELIVERY_SERVICE = "logdelivery.elasticloadbalancing.amazonaws.com"
# Elastic Load Balancing's log-writing account in each region opened before August 2022; newer regions
# deliver through LOAD_BALANCER_LOG_DELIVERY_SERVICE instead (AWS ALB user guide, "Enable access logs";
# the table of terraform-provider-aws internal/service/elb/service_account_data_source.go).
ELB_LOG_ACCOUNTS: dict[str, str] = {
    "af-south-1": "098369216593",
    "ap-east-1": "754344448648",
    "ap-northeast-1": "582318560864",
    "ap-northeast-2": "600734575887",
    "ap-northeast-3": "383597477331",
    "ap-south-1": "718504428378",
    "ap-southeast-1": "114774131450",
    "ap-southeast-2": "783225319266",
    "ap-southeast-3": "589379963580",
    "ca-central-1": "985666609251",
    "cn-north-1": "638102146993",
    "cn-northwest-1": "037604701340",
    "eu-central-1": "054676820928",
    "eu-north-1": "897822967062",
    "eu-south-1": "635631232127",
    "eu-west-1": "156460612806",
    "eu-west-2": "652711504416",
    "eu-west-3": "009996457667",
    "me-south-1": "076674570225",
    "sa-east-1": "507241528517",
    "us-east-1": "127311923021",
    "us-east-2": "033677994240",
    "us-gov-east-1": "190560391635",
    "us-gov-west-1": "048591011584",
    "us-west-1": "027434742980",
    "us-west-2": "797873946194",
}

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


def load_balancer_log_statement(
    log_bucket_arn: str, prefix: str, account_id: str, region: str, partition: str = "aws"
) -> dict[str, Any]:
    """Elastic Load Balancing may write this account's load-balancer access logs under ``prefix``."""
    elb_account = ELB_LOG_ACCOUNTS.get(region)
    principal = (
        {"AWS": f"arn:{partition}:iam::{elb_account}:root"}
        if elb_account
        else {"Service": LOAD_BALANCER_LOG_DELIVERY_SERVICE}
    )
    return {
        "Sid": "AllowLoadBalancerAccessLogs",
        "Effect": "Allow",
        "Principal": principal,
        "Action": "s3:PutObject",
        "Resource": f"{log_bucket_arn}/{prefix.strip('/')}/AWSLogs/{account_id}/*",
    }


def log_bucket_policy(
    log_bucket_arn: str,
    source_bucket_arns: Sequence[str],
    account_id: str,
    extra_statements: Sequence[dict[str, Any]] = (),
) -> dict[str, Any]:
    """TLS only; S3's log delivery may write access logs of this account's source buckets, and whatever
    ``extra_statements`` admit (the ALB's access logs), nothing else."""
    return {
        "Version": VERSION,
        "Statement": [
            *extra_statements,
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
