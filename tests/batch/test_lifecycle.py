"""The monitor's steps on one batch (moto in process): the completion window expires the lines still missing,
a submission whose replica died while queueing is queued again, finalizing twice writes the same files."""

from __future__ import annotations

import json

import boto3
import pytest
from moto import mock_aws

from inference_platform.batch import lifecycle, objects
from inference_platform.batch.input_file import parse
from inference_platform.batch.store import Store
from tests.batch.lane_requests import chat_line

OWNER = "team-a"


@pytest.fixture
def aws(aws_env):
    with mock_aws():
        s3 = boto3.client("s3", region_name="us-east-1")
        sqs = boto3.client("sqs", region_name="us-east-1")
        s3.create_bucket(Bucket="lane")
        queue = sqs.create_queue(QueueName="work")["QueueUrl"]
        yield Store(s3, bucket="lane", files_prefix="files/", results_prefix="results/", kms_key_id=None), sqs, queue


def new_batch(store, sqs, queue, lines, *, created_at):
    content = "".join(json.dumps(x) + "\n" for x in lines).encode()
    store.put("files/team-a/file-in", content)
    store.put_json("files/team-a/file-in.json", {"id": "file-in", "purpose": "batch", "key": "files/team-a/file-in"})
    batch = objects.batch_object(batch_id="batch_0123", endpoint="/v1/chat/completions", input_file_id="file-in",
                                 completion_window="24h", created_at=created_at, expires_at=created_at + 86400, metadata=None)  # fmt: skip
    parsed = parse(content, endpoint="/v1/chat/completions", max_requests=100, default_max_tokens=8)
    return lifecycle.create(store, sqs, queue, owner=OWNER, batch=batch, parsed=parsed, lines_per_message=2)


def answer(store, line, custom_id):
    result = objects.response_line(batch_id="batch_0123", line=line, custom_id=custom_id, status_code=200,
                                   request_id_="r", body={"usage": {"prompt_tokens": 1, "completion_tokens": 2}})  # fmt: skip
    assert store.write_line_once("batch_0123", line, result, failed=False)


def test_past_the_window_the_missing_lines_expire_and_the_batch_closes_in_order(aws):
    store, sqs, queue = aws
    lines = [chat_line(i) for i in range(5)]
    record = new_batch(store, sqs, queue, lines, created_at=lifecycle.now() - 86400 - 5)
    assert record["batch"]["status"] == "in_progress"
    answer(store, 1, "req-00001")
    answer(store, 3, "req-00003")
    closed = lifecycle.advance(store, sqs, queue, OWNER, "batch_0123")
    batch = closed["batch"]
    assert batch["status"] == "expired" and batch["expired_at"] is not None
    assert batch["request_counts"] == {"total": 5, "completed": 2, "failed": 3}
    errors = [json.loads(x) for x in store.get("results/batch_0123/errors.jsonl")[0].splitlines()]
    assert [(e["custom_id"], e["error"]["code"]) for e in errors] == [
        ("req-00000", "batch_expired"), ("req-00002", "batch_expired"), ("req-00004", "batch_expired")
    ]  # fmt: skip
    output = store.get("results/batch_0123/output.jsonl")[0]
    assert [json.loads(x)["custom_id"] for x in output.splitlines()] == ["req-00001", "req-00003"]
    assert batch["usage"]["output_tokens"] == 4
    assert store.file(OWNER, batch["error_file_id"])["purpose"] == "batch_output"
    # Finalizing again (a replica that died half-way) changes nothing.
    assert lifecycle.finalize(store, OWNER, closed)["batch"] == batch


def test_a_submission_stuck_validating_is_queued_again_without_its_answered_lines(aws):
    store, sqs, queue = aws
    lines = [chat_line(i) for i in range(5)]
    new_batch(store, sqs, queue, lines, created_at=lifecycle.now() - lifecycle.STUCK_VALIDATING_SECONDS - 1)
    sqs.purge_queue(QueueUrl=queue)
    lifecycle.update(store, OWNER, "batch_0123", lambda d: d["batch"].update(status="validating") or True)
    answer(store, 0, "req-00000")
    record = lifecycle.advance(store, sqs, queue, OWNER, "batch_0123")
    assert record["batch"]["status"] == "in_progress"
    bodies = [json.loads(m["Body"]) for m in sqs.receive_message(QueueUrl=queue, MaxNumberOfMessages=10)["Messages"]]
    assert sorted(x["line"] for b in bodies for x in b["lines"]) == [1, 2, 3, 4]
    assert all(len(b["lines"]) <= 2 for b in bodies)
