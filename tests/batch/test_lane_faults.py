"""The lane's faults, each on its own bucket, queues and processes: a duplicate delivery, a request that always
fails, the emulator restarted mid-batch, a client over quota, a cancel, an oversized upload, an orphan message.

These call tests/batch/openai_stand_in.py, the labelled serving stand-in, where the fault needs what the real local
stack cannot be made to do: answer 500 to one marked prompt every time (the real server fails no valid request),
or where the serving side plays no part (quotas, cancel, uploads, the emulator's outage: the stand-in only
answers). A worker's end (SIGKILL, SIGTERM) runs on the real stack: test_lane_worker_stops.py."""

from __future__ import annotations

import json
import time

import openai
import pytest

from inference_platform.batch import queue
from inference_platform.batch.input_file import Request
from tests.batch.conftest import lane_with_worker
from tests.batch.lane_requests import chat_line, file_lines, jsonl, submit, wait_finished

pytestmark = [pytest.mark.motoserver, pytest.mark.live]


def wait_for(condition, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"{what} did not happen within {timeout:.0f} s"
        time.sleep(0.1)


def assert_exactly_once_in_order(lines, output):
    assert [o["custom_id"] for o in output] == [line["custom_id"] for line in lines]


def test_a_duplicate_delivery_makes_no_second_line(lane_factory, serving):
    lane = lane_factory()
    api = lane.api()
    client = api.openai()
    lines = [chat_line(i) for i in range(5)]
    batch = submit(client, lines)
    # A standard queue may deliver a message twice: queue a copy of line 2 as the API queued it.
    copy = Request(2, lines[2]["custom_id"], lines[2]["url"], lines[2]["body"], 0)
    lane.moto.client("sqs").send_message(QueueUrl=lane.queue_url, MessageBody=queue.message(batch.id, "team-a", [copy]))
    worker = lane.worker(BATCH_SERVING_URL=serving.url, BATCH_CONCURRENCY="1")
    done = wait_finished(client, batch.id, timeout=60)
    assert done.status == "completed"
    assert_exactly_once_in_order(lines, file_lines(client, done.output_file_id))
    wait_for(lambda: worker.metric("batch_requests_total", status="duplicate") == 1, 20, "the copy dropped")
    assert worker.metric("batch_requests_total", status="completed") == 5


def test_a_request_that_always_fails_ends_in_the_error_file_and_the_dead_letter_queue(lane_factory, serving):
    lane = lane_factory(max_receives=3, BATCH_LINES_PER_MESSAGE="2")
    api = lane.api()
    client = api.openai()
    worker = lane.worker(BATCH_SERVING_URL=serving.url)
    lines = [chat_line(i) for i in range(6)]
    lines[3] = chat_line(3, content="ALWAYS-FAIL: this prompt crashes the server")
    batch = submit(client, lines)
    done = wait_finished(client, batch.id, timeout=60)
    assert done.status == "completed"
    assert (done.request_counts.completed, done.request_counts.failed) == (5, 1)
    output = file_lines(client, done.output_file_id)
    errors = file_lines(client, done.error_file_id)
    assert [o["custom_id"] for o in output] == [line["custom_id"] for i, line in enumerate(lines) if i != 3]
    assert [e["custom_id"] for e in errors] == ["req-00003"]
    assert errors[0]["response"]["status_code"] == 500
    # Tried maxReceiveCount (3) times; the redrive policy moved it to the DLQ on the next receive.
    assert worker.metric("batch_requests_total", status="retried") == 2
    wait_for(lambda: worker.metric("batch_requests_total", status="failed") == 1, 10, "the error line")
    bodies = []
    wait_for(lambda: bodies.extend(lane.dlq_bodies()) or bodies, 20, "the poison message in the DLQ")
    # The poison line's message, sent with its neighbours (answered at its first receive, skipped after).
    assert [b["batch_id"] for b in bodies] == [batch.id]
    assert "req-00003" in [x["custom_id"] for x in bodies[0]["lines"]]


def test_the_emulator_restarted_mid_batch_keeps_its_data_and_the_batch_completes(lane_factory, tmp_path):
    with lane_with_worker(lane_factory, tmp_path, slots=4, token_ms=10, concurrency=4) as (lane, client, worker, _):
        lines = [chat_line(i) for i in range(200)]
        batch = submit(client, lines)
        wait_for(lambda: worker.metric("batch_requests_total", status="completed") >= 20, 60, "20 lines done")
        lane.moto.stop()
        before = worker.metric("batch_requests_total", status="completed")
        time.sleep(3)
        during = worker.metric("batch_requests_total", status="completed")
        # Down means down: nothing is stored while the emulator is away (at most the stores already under way).
        assert during <= before + 4 and during < 200, (before, during)
        lane.moto.start()
        done = wait_finished(client, batch.id, timeout=180)
        assert done.status == "completed" and done.request_counts.completed == 200
        assert_exactly_once_in_order(lines, file_lines(client, done.output_file_id))


def test_a_client_over_its_queued_quota_gets_a_429_at_submission(lane_factory, tmp_path):
    quotas = tmp_path / "quotas.json"
    quotas.write_text(json.dumps({"team-b": {"queuedTokens": 100}}))
    lane = lane_factory()
    api = lane.api(BATCH_QUOTA_QUEUED_REQUESTS="10", BATCH_QUOTAS_FILE=str(quotas))
    team_a = api.openai("team-a", max_retries=0)
    submit(team_a, [chat_line(i) for i in range(8)])  # no workers: these stay queued
    with pytest.raises(openai.RateLimitError) as refused:
        submit(team_a, [chat_line(i) for i in range(5)])
    assert refused.value.status_code == 429
    assert refused.value.code == "batch_quota_exceeded"
    assert "13 queued requests" in refused.value.message and "quota is 10" in refused.value.message
    # Another client's queue is its own; a token quota binds on tokens (10 lines x (prompt + 8) > 100).
    submit(api.openai("team-c", max_retries=0), [chat_line(i) for i in range(10)])
    with pytest.raises(openai.RateLimitError) as tokens:
        submit(api.openai("team-b", max_retries=0), [chat_line(i) for i in range(10)])
    assert "queued tokens" in tokens.value.message
    assert api.process.metric("batch_quota_rejections_total", client="team-a", kind="requests") == 1
    assert api.process.metric("batch_quota_rejections_total", client="team-b", kind="tokens") == 1
    batches = team_a.batches.list()
    assert len(batches.data) == 1, "the refused batch must not exist"


def test_a_cancelled_batch_keeps_its_answers_and_files_the_rest_as_cancelled(lane_factory, tmp_path):
    with lane_with_worker(lane_factory, tmp_path, slots=2, token_ms=100, concurrency=2) as (_lane, client, worker, _):
        lines = [chat_line(i) for i in range(40)]
        batch = submit(client, lines)
        wait_for(lambda: worker.metric("batch_requests_total", status="completed") >= 4, 60, "4 lines done")
        assert client.batches.cancel(batch.id).status == "cancelling"
        done = wait_finished(client, batch.id, timeout=60)
        assert done.status == "cancelled" and done.cancelled_at is not None
        output = file_lines(client, done.output_file_id)
        errors = file_lines(client, done.error_file_id)
        assert 4 <= len(output) < 40 and len(output) + len(errors) == 40
        assert {e["error"]["code"] for e in errors} == {"batch_cancelled"}
        assert sorted(o["custom_id"] for o in output + errors) == [line["custom_id"] for line in lines]
        assert [o["custom_id"] for o in output] == sorted(o["custom_id"] for o in output)
        assert (done.request_counts.completed, done.request_counts.failed) == (len(output), len(errors))
        assert client.batches.cancel(batch.id).status == "cancelled", "cancelling again changes nothing"


def test_an_upload_over_the_file_limit_is_refused_while_it_streams(lane_factory):
    lane = lane_factory()
    api = lane.api(BATCH_MAX_FILE_BYTES="4096")
    client = api.openai(max_retries=0)
    with pytest.raises(openai.APIStatusError) as refused:
        client.files.create(file=jsonl([chat_line(i) for i in range(100)]), purpose="batch")
    assert refused.value.status_code == 413 and refused.value.code == "file_too_large"
    assert client.files.list().data == []
    small = client.files.create(file=jsonl([chat_line(0)]), purpose="batch")
    assert client.files.content(small.id).read() == jsonl([chat_line(0)]).read()


def test_a_message_whose_batch_has_no_record_is_kept_for_the_dead_letter_queue(lane_factory, serving):
    lane = lane_factory(max_receives=2)
    worker = lane.worker(BATCH_SERVING_URL=serving.url)
    orphan = Request(0, "req-00000", "/v1/chat/completions", chat_line(0)["body"], 0)
    lane.moto.client("sqs").send_message(
        QueueUrl=lane.queue_url, MessageBody=queue.message("batch_gone", "team-a", [orphan])
    )
    bodies = []
    wait_for(lambda: bodies.extend(lane.dlq_bodies()) or bodies, 30, "the orphan message in the DLQ")
    assert [b["batch_id"] for b in bodies] == ["batch_gone"]
    assert worker.metric("batch_worker_errors_total", reason="s3") >= 2
    assert worker.metric("batch_requests_total", status="completed") == 0
