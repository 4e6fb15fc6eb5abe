"""The lane's queues: a standard work queue and its dead-letter queue under the stack's CMK, a redrive policy
and its allow policy, TLS-only queue policies, limits from botocore's SQS model; and what the rendered queues
do in moto's SQS (a message received maxReceiveCount times moves to the dead-letter queue)."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import botocore
import pytest

from inference_platform.components.batch.queues import (
    DEAD_LETTER_RETENTION_SECONDS,
    MAX_DATA_KEY_REUSE_SECONDS,
    MAX_RECEIVE_COUNT,
    MAX_RETENTION_SECONDS,
    MAX_VISIBILITY_SECONDS,
    MESSAGE_BYTES,
    MIN_DATA_KEY_REUSE_SECONDS,
    BatchQueues,
    BatchQueuesArgs,
)
from inference_platform.components.common.errors import ComponentArgsError
from tests.conftest import by_type, one

KEY = "arn:aws:kms:us-east-1:123456789012:key/11111111-2222-3333-4444-555555555555"


def queue_args(**overrides) -> BatchQueuesArgs:
    values = dict(
        name_prefix="inference-platform-prod",
        kms_key_arn=KEY,
        visibility_timeout_seconds=660,
        message_retention_seconds=172_800,
        max_receive_count=5,
    )
    values.update(overrides)
    return BatchQueuesArgs(**values)


@pytest.fixture
def queues(run_components):
    return run_components(lambda: BatchQueues("lane", queue_args())).resources


def test_both_queues_are_standard_and_encrypted_with_the_stack_key(queues):
    for queue in by_type(queues, "aws:sqs/queue:Queue"):
        assert "fifoQueue" not in queue.inputs, "standard: the writer keeps the input order"
        assert queue.inputs["kmsMasterKeyId"] == KEY
        assert queue.inputs["kmsDataKeyReusePeriodSeconds"] == 300
        assert "sqsManagedSseEnabled" not in queue.inputs
        assert queue.inputs["maxMessageSize"] == MESSAGE_BYTES


@pytest.mark.parametrize("protect", [True, False])
def test_both_queues_are_protected_and_retained_exactly_when_asked(run_components, protect):
    """Issue 28 R8: production keeps the queued lines and the dead-letter evidence through a replacement or a
    destroy (the policies and what they configure go with the stack)."""
    resources = run_components(lambda: BatchQueues("lane", queue_args(protect=protect))).resources
    queues = by_type(resources, "aws:sqs/queue:Queue")
    assert len(queues) == 2
    assert all(q.protect is protect and q.retain_on_delete is protect for q in queues)
    assert not [r for r in resources if r.type != "aws:sqs/queue:Queue" and r.custom and r.protect]


def test_the_work_queue_redrives_to_the_dead_letter_queue_and_only_it_may(queues):
    work, dead = one(queues, "lane-work"), one(queues, "lane-dead-letter")
    redrive = json.loads(work.inputs["redrivePolicy"])
    assert redrive["maxReceiveCount"] == 5
    assert redrive["deadLetterTargetArn"].split(":")[-1].startswith("lane-dead-letter")
    assert work.property_dependencies["redrivePolicy"] == [dead.urn]
    allow = one(queues, "lane-dead-letter-allow")
    assert json.loads(allow.inputs["redriveAllowPolicy"])["redrivePermission"] == "byQueue"
    assert allow.property_dependencies["redriveAllowPolicy"] == [work.urn]
    assert allow.property_dependencies["queueUrl"] == [dead.urn]
    assert (
        dead.inputs["messageRetentionSeconds"] == DEAD_LETTER_RETENTION_SECONDS > work.inputs["messageRetentionSeconds"]
    )


def test_the_work_queue_long_polls_and_hides_a_message_for_the_visibility_timeout(queues):
    work = one(queues, "lane-work")
    assert work.inputs["visibilityTimeoutSeconds"] == 660
    assert work.inputs["receiveWaitTimeSeconds"] == 20
    assert work.inputs["namePrefix"] == "inference-platform-prod-batch-work-"


@pytest.mark.parametrize("role", ["work", "dead-letter"])
def test_each_queue_denies_requests_without_tls(queues, role):
    policy = one(queues, f"lane-{role}-policy")
    assert policy.property_dependencies["queueUrl"] == [one(queues, f"lane-{role}").urn]
    (statement,) = json.loads(policy.inputs["policy"])["Statement"]
    assert statement["Effect"] == "Deny" and statement["Principal"] == "*" and statement["Action"] == "sqs:*"
    assert statement["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"visibility_timeout_seconds": 0}, "visibility_timeout_seconds"),
        ({"visibility_timeout_seconds": 43_201}, "visibility_timeout_seconds"),
        ({"message_retention_seconds": 59}, "message_retention_seconds"),
        ({"max_receive_count": 1001}, "max_receive_count"),
        ({"data_key_reuse_seconds": 59}, "data_key_reuse_seconds"),
        ({"max_receive_count": 300, "visibility_timeout_seconds": 600}, "outlast message_retention_seconds"),
    ],
)
def test_values_sqs_refuses_are_refused_naming_the_field(overrides, field):
    with pytest.raises(ComponentArgsError, match=field):
        BatchQueues("lane", queue_args(**overrides))


def _create_queue_attributes() -> str:
    model = Path(botocore.__file__).parent / "data" / "sqs" / "2012-11-05" / "service-2.json.gz"
    shapes = json.loads(gzip.decompress(model.read_bytes()))["shapes"]
    return re.sub(r"<[^>]+>", "", shapes["CreateQueueRequest"]["members"]["Attributes"]["documentation"])


def test_the_limits_are_sqs_own_as_botocore_models_them():
    text = _create_queue_attributes()
    assert "An integer from 0 to 43,200 (12 hours)" in text and MAX_VISIBILITY_SECONDS == 43_200
    assert "to 1,209,600 seconds (14 days)" in text and MAX_RETENTION_SECONDS == 1_209_600
    assert "between 60 seconds (1 minute) and 86,400 seconds (24 hours)" in text
    assert (MIN_DATA_KEY_REUSE_SECONDS, MAX_DATA_KEY_REUSE_SECONDS) == (60, 86_400)
    assert "from 1,024 bytes (1 KiB) to 1,048,576 bytes (1 MiB)" in text and 1024 <= MESSAGE_BYTES <= 1_048_576
    assert "maxReceiveCount" in text and MAX_RECEIVE_COUNT == 1000


def test_the_rendered_queues_redrive_a_message_in_moto_after_the_receive_limit(run_components, aws_env):
    """The attributes the component renders, created as they are in moto's SQS: a message received
    maxReceiveCount times without being deleted ends in the dead-letter queue."""
    import boto3
    from moto import mock_aws

    resources = run_components(
        lambda: BatchQueues("lane", queue_args(visibility_timeout_seconds=1, max_receive_count=2))
    ).resources
    work, dead = one(resources, "lane-work").inputs, one(resources, "lane-dead-letter").inputs
    attributes = {
        "visibilityTimeoutSeconds": "VisibilityTimeout",
        "messageRetentionSeconds": "MessageRetentionPeriod",
        "maxMessageSize": "MaximumMessageSize",
        "receiveWaitTimeSeconds": "ReceiveMessageWaitTimeSeconds",
        "kmsDataKeyReusePeriodSeconds": "KmsDataKeyReusePeriodSeconds",
    }
    with mock_aws():
        sqs = boto3.client("sqs", region_name="us-east-1")
        dead_url = sqs.create_queue(
            QueueName="dead", Attributes={attributes[k]: str(int(v)) for k, v in dead.items() if k in attributes}
        )["QueueUrl"]
        dead_arn = sqs.get_queue_attributes(QueueUrl=dead_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        redrive = {**json.loads(work["redrivePolicy"]), "deadLetterTargetArn": dead_arn}
        rendered = {attributes[k]: str(int(v)) for k, v in work.items() if k in attributes}
        work_url = sqs.create_queue(
            QueueName="work",
            Attributes={**rendered, "ReceiveMessageWaitTimeSeconds": "0", "RedrivePolicy": json.dumps(redrive)},
        )["QueueUrl"]
        sqs.send_message(QueueUrl=work_url, MessageBody='{"line": 0}')
        import time

        received = 0
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            got = sqs.receive_message(QueueUrl=work_url, MaxNumberOfMessages=1).get("Messages", [])
            received += len(got)
            moved = sqs.receive_message(QueueUrl=dead_url, MaxNumberOfMessages=1).get("Messages", [])
            if moved:
                break
            time.sleep(1.1)
        assert moved and moved[0]["Body"] == '{"line": 0}'
        assert received == 2, "delivered maxReceiveCount times, then moved"
