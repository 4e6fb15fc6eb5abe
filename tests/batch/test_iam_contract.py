"""Every AWS call the roles' code makes is allowed by the role the cluster side grants it (components/batch/
documents.py), and the code makes no call this list does not name: a new call fails here until both agree.

IAM actions per operation from the Service Authorization Reference (S3: HeadObject and GetObject need
s3:GetObject, ListObjectsV2 s3:ListBucket; SQS: SendMessageBatch is authorised as sqs:SendMessage)."""

from __future__ import annotations

import re
from pathlib import Path

from inference_platform.components.batch import documents

BATCH = Path(__file__).resolve().parents[2] / "batch"
ACTION = {
    "put_object": "s3:PutObject", "get_object": "s3:GetObject", "head_object": "s3:GetObject",
    "delete_object": "s3:DeleteObject", "list_objects_v2": "s3:ListBucket", "get_paginator": "s3:ListBucket",
    "send_message_batch": "sqs:SendMessage", "get_queue_attributes": "sqs:GetQueueAttributes",
    "receive_message": "sqs:ReceiveMessage", "delete_message": "sqs:DeleteMessage",
    "change_message_visibility": "sqs:ChangeMessageVisibility",
}  # fmt: skip
API_CALLS = {"put_object", "get_object", "head_object", "delete_object", "list_objects_v2", "get_paginator",
             "send_message_batch", "get_queue_attributes"}  # fmt: skip
WORKER_CALLS = {"put_object", "get_object", "head_object", "receive_message", "delete_message",
                "change_message_visibility", "get_queue_attributes"}  # fmt: skip
CALL = re.compile(r"\b(?:self\.)?(?:s3|sqs)\.([a-z_0-9]+)\b")


def test_the_code_makes_only_the_calls_named_here():
    made = {name for path in BATCH.glob("*.py") for name in CALL.findall(path.read_text())}
    made -= {"put", "get"}  # Store's own methods on self.store, not boto3's
    assert made == API_CALLS | WORKER_CALLS, (
        f"calls not named per role here: {sorted(made ^ (API_CALLS | WORKER_CALLS))}"
    )
    worker_code = (BATCH / "worker.py").read_text()
    assert not re.search(r"\b(?:list_objects|get_paginator|send_message)", worker_code)


def test_each_roles_calls_are_granted():
    api = set(documents.API_S3_ACTIONS) | set(documents.API_SQS_ACTIONS) | {"s3:ListBucket"}
    worker = set(documents.WORKER_S3_ACTIONS) | set(documents.WORKER_SQS_ACTIONS)
    assert {ACTION[c] for c in API_CALLS} <= api
    assert {ACTION[c] for c in WORKER_CALLS} <= worker
