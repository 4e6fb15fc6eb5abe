"""Policy documents and lifecycle rules of the asynchronous lane (pure: no Pulumi).

Who may do what, each on named resources only (the lane's bucket, its two queues, the stack's CMK only
through S3 and SQS in this region), as the Batch API service and the queue workers need it (the running
code's contract: batch/ in the repository, ``inference_platform.batch``):

- the API stores uploaded files, batch records and the assembled output files, and enqueues one message
  per input line;
- the workers read the input, write each line's result once, and receive, extend and delete messages;
- the KEDA operator reads the work queue's attributes (its aws-sqs-queue scaler: ApproximateNumberOfMessages
  and ...NotVisible), nothing else.

A queue's key is used through SQS: SendMessage needs ``kms:GenerateDataKey`` and ``kms:Decrypt`` on the
CMK, ReceiveMessage ``kms:Decrypt`` (Amazon SQS Developer Guide, "Key management", the producer and consumer
permissions).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

VERSION = "2012-10-17"
FILES_PREFIX = "files/"
"""Uploaded input files and every file's metadata, under the owning client's id."""
RESULTS_PREFIX = "results/"
"""Batch records, write-once per-line results and the assembled output and error files."""
LANE_PREFIXES = (FILES_PREFIX, RESULTS_PREFIX)
"""The key layout under the bucket (the lane's code, h7's contract §6): what the roles and the lifecycle name."""

API_S3_ACTIONS = ("s3:PutObject", "s3:GetObject", "s3:DeleteObject")
WORKER_S3_ACTIONS = ("s3:PutObject", "s3:GetObject")
"""Workers read and write results only (the line travels in its message)."""
API_SQS_ACTIONS = ("sqs:SendMessage", "sqs:GetQueueAttributes")
WORKER_SQS_ACTIONS = (
    "sqs:ReceiveMessage",
    "sqs:DeleteMessage",
    "sqs:ChangeMessageVisibility",
    "sqs:GetQueueAttributes",
)
MONITOR_SQS_ACTIONS = ("sqs:GetQueueAttributes",)
KEY_ACTIONS = ("kms:GenerateDataKey", "kms:Decrypt")


def queue_policy(queue_arn: str) -> dict[str, Any]:
    """Nobody may use the queue without TLS (the same statement as the Karpenter interruption queue's)."""
    return {
        "Version": VERSION,
        "Statement": [
            {
                "Sid": "DenyInsecureTransport",
                "Effect": "Deny",
                "Principal": "*",
                "Action": "sqs:*",
                "Resource": queue_arn,
                "Condition": {"Bool": {"aws:SecureTransport": "false"}},
            }
        ],
    }


def redrive_policy(dead_letter_arn: str, max_receive_count: int) -> dict[str, Any]:
    return {"deadLetterTargetArn": dead_letter_arn, "maxReceiveCount": max_receive_count}


def redrive_allow_policy(source_arns: Sequence[str]) -> dict[str, Any]:
    """The dead-letter queue takes messages from the lane's work queue only."""
    return {"redrivePermission": "byQueue", "sourceQueueArns": sorted(source_arns)}


def api_policy(
    bucket_arn: str, work_queue_arn: str, dead_letter_arn: str, kms_key_arn: str, region: str
) -> dict[str, Any]:
    """Files and results; enqueue on the work queue; both queues' depth (its gauges and start-up checks)."""
    return _role_policy(
        bucket_arn,
        API_S3_ACTIONS,
        LANE_PREFIXES,
        [
            ("EnqueueLines", list(API_SQS_ACTIONS), [work_queue_arn]),
            ("WatchDeadLetters", list(MONITOR_SQS_ACTIONS), [dead_letter_arn]),
        ],
        kms_key_arn,
        region,
        listing=True,
    )


def worker_policy(
    bucket_arn: str, work_queue_arn: str, dead_letter_arn: str, kms_key_arn: str, region: str
) -> dict[str, Any]:
    """Results only; take, extend and delete work messages. No dead-letter access: SQS's redrive moves a poison
    message there, the worker never does."""
    del dead_letter_arn
    return _role_policy(
        bucket_arn,
        WORKER_S3_ACTIONS,
        (RESULTS_PREFIX,),
        [("TakeWork", list(WORKER_SQS_ACTIONS), [work_queue_arn])],
        kms_key_arn,
        region,
        listing=False,
    )


def monitor_policy(queue_arns: Sequence[str]) -> dict[str, Any]:
    """The KEDA operator: the queues' attributes only (SQS metadata is not encrypted: no key)."""
    return {
        "Version": VERSION,
        "Statement": [
            {
                "Sid": "ReadQueueDepth",
                "Effect": "Allow",
                "Action": list(MONITOR_SQS_ACTIONS),
                "Resource": sorted(queue_arns),
            }
        ],
    }


def _role_policy(
    bucket_arn: str,
    s3_actions: Sequence[str],
    prefixes: Sequence[str],
    queues: Sequence[tuple[str, list[str], list[str]]],
    kms_key_arn: str,
    region: str,
    *,
    listing: bool,
) -> dict[str, Any]:
    statements: list[dict[str, Any]] = [
        {
            "Sid": "LaneObjects",
            "Effect": "Allow",
            "Action": list(s3_actions),
            "Resource": [f"{bucket_arn}/{p}*" for p in prefixes],
        },
    ]
    if listing:
        statements.append(
            {
                "Sid": "ListLanePrefixes",
                "Effect": "Allow",
                "Action": "s3:ListBucket",
                "Resource": bucket_arn,
                "Condition": {"StringLike": {"s3:prefix": [f"{p}*" for p in prefixes]}},
            }
        )
    statements += [
        {"Sid": sid, "Effect": "Allow", "Action": actions, "Resource": arns} for sid, actions, arns in queues
    ]
    statements.append(
        {
            "Sid": "StackKeyThroughS3AndSqs",
            "Effect": "Allow",
            "Action": list(KEY_ACTIONS),
            "Resource": kms_key_arn,
            "Condition": {
                "StringEquals": {"kms:ViaService": [f"s3.{region}.amazonaws.com", f"sqs.{region}.amazonaws.com"]}
            },
        }
    )
    return {"Version": VERSION, "Statement": statements}


def lifecycle_rules(*, retention_days: int) -> list[dict[str, Any]]:
    """Files and results (records, per-line results, assembled output and error files) expire after
    ``retention_days``; replaced versions a day later, unfinished uploads after a day. Stable ids."""
    rules: list[dict[str, Any]] = [
        {
            "id": f"expire-{prefix.rstrip('/')}",
            "status": "Enabled",
            "filter": {"prefix": prefix},
            "expiration": {"days": retention_days},
        }
        for prefix in LANE_PREFIXES
    ]
    rules.append(
        {
            "id": "housekeeping",
            "status": "Enabled",
            "filter": {"prefix": ""},
            "noncurrent_version_expiration": {"noncurrent_days": 1},
            "expiration": {"expired_object_delete_marker": True},
            "abort_incomplete_multipart_upload": {"days_after_initiation": 1},
        }
    )
    return rules
