"""The store's reading of S3's answers: 404 and, for a role without s3:ListBucket, 403 mean absent; a lost
conditional write is a Conflict; 409 ConditionalRequestConflict is retried (botocore's Stubber as S3)."""

from __future__ import annotations

import boto3
import pytest
from botocore.stub import Stubber

from inference_platform.batch.store import Conflict, Store


@pytest.fixture
def stubbed(aws_env):
    s3 = boto3.client("s3", region_name="us-east-1")
    with Stubber(s3) as stub:
        yield Store(s3, bucket="lane", files_prefix="files/", results_prefix="results/", kms_key_id="key-arn"), stub


def test_missing_and_forbidden_reads_are_absent_and_other_errors_raise(stubbed):
    store, stub = stubbed
    stub.add_client_error("head_object", service_error_code="404", http_status_code=404)
    stub.add_client_error("head_object", service_error_code="403", http_status_code=403)
    stub.add_client_error("get_object", service_error_code="NoSuchKey", http_status_code=404)
    stub.add_client_error("get_object", service_error_code="AccessDenied", http_status_code=403)
    stub.add_client_error("get_object", service_error_code="InternalError", http_status_code=500)
    assert store.line_done("batch_1", 0) is False
    assert store.line_done("batch_1", 0) is False
    assert store.get("k") is None and store.get("k") is None
    with pytest.raises(Exception, match="InternalError"):
        store.get("k")


def test_a_taken_line_is_a_conflict_and_a_concurrent_write_is_retried(stubbed):
    store, stub = stubbed
    expected = {"Bucket": "lane", "Key": "results/batch_1/lines/00000007.json", "Body": b'{"a":1}', "IfNoneMatch": "*",
                "ServerSideEncryption": "aws:kms", "SSEKMSKeyId": "key-arn"}  # fmt: skip
    stub.add_client_error(
        "put_object", service_error_code="PreconditionFailed", http_status_code=412, expected_params=expected
    )
    assert store.write_line_once("batch_1", 7, {"a": 1}, failed=False) is False
    stub.add_client_error(
        "put_object", service_error_code="ConditionalRequestConflict", http_status_code=409, expected_params=expected
    )
    stub.add_response("put_object", {"ETag": '"e"'}, expected_params=expected)
    assert store.write_line_once("batch_1", 7, {"a": 1}, failed=False) is True
    stub.add_client_error("put_object", service_error_code="PreconditionFailed", http_status_code=412)
    with pytest.raises(Conflict):
        store.put_json("results/batches/team-a/batch_1.json", {"x": 1}, if_match='"old"')
    stub.assert_no_pending_responses()
