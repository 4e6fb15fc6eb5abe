"""The AWS API limits and behaviours the lane's code relies on, read from the service models of the botocore the
lane installs (botocore 1.44.8: ``botocore/data/sqs/2012-11-05/service-2.json``,
``botocore/data/s3/2006-03-01/service-2.json``), so a model that changes them fails here. The version is the
lock's (tests/locks.py)."""

from __future__ import annotations

import re

import botocore
import botocore.session
import pytest

from inference_platform.batch import config, queue, worker
from inference_platform.batch.__main__ import RECEIVE_WAIT_SECONDS
from tests.locks import moved_past, read_at, require_locked


def doc(model, operation: str, member: str | None = None) -> str:
    op = model.operation_model(operation)
    text = op.input_shape.members[member].documentation if member else op.documentation
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", text))


@pytest.fixture(scope="module")
def sqs():
    return botocore.session.get_session().get_service_model("sqs")


def test_botocore_is_the_version_read(sqs):
    assert botocore.__version__ == require_locked("botocore")  # else: broken install
    assert read_at("botocore") == botocore.__version__, moved_past("botocore")


def test_sqs_batch_and_receive_limits(sqs):
    assert "send up to 10 messages" in doc(sqs, "SendMessageBatch") and queue.SEND_BATCH == 10
    assert "Valid values: 1 to 10" in doc(sqs, "ReceiveMessage", "MaxNumberOfMessages") and worker.RECEIVE_MAX == 10
    assert "The maximum is 12 hours" in doc(sqs, "ChangeMessageVisibility")
    assert config.MAX_VISIBILITY_SECONDS == 12 * 3600
    attributes = doc(sqs, "CreateQueue", "Attributes")
    assert re.search(r"ReceiveMessageWaitTimeSeconds .{0,200}from 0 to 20", attributes) and RECEIVE_WAIT_SECONDS == 20
    assert "ApproximateReceiveCount" in doc(sqs, "ReceiveMessage", "MessageSystemAttributeNames")


def test_s3_conditional_writes():
    s3 = botocore.session.get_session().get_service_model("s3")
    if_none_match = doc(s3, "PutObject", "IfNoneMatch")
    assert "does not already exist" in if_none_match and "412 Precondition Failed" in if_none_match
    assert "409 ConditionalRequestConflict" in if_none_match and "retry the upload" in if_none_match
    assert "412 Precondition Failed" in doc(s3, "PutObject", "IfMatch")


def test_s3_answers_a_missing_key_with_403_without_list_bucket():
    s3 = botocore.session.get_session().get_service_model("s3")
    for operation in ("HeadObject", "GetObject"):
        text = doc(s3, operation)
        assert (
            "If you have the s3:ListBucket permission on the bucket, Amazon S3 returns an HTTP status code 404" in text
        )
        assert (
            "If you don\u2019t have the s3:ListBucket permission, Amazon S3 returns an HTTP status code 403"
            in text.replace("'", "\u2019")
        )
