"""The batch lane end to end: the official openai client against the Batch API process, workers taking the
lines from moto's SQS, results in moto's S3, answers from the serving endpoint.

Each test starts its own bucket, queues and processes on 127.0.0.1 and stops them (conftest.py).
"""

from __future__ import annotations

import json
import urllib.request

import pytest

from tests.batch.lane_requests import chat_line, file_lines, submit, wait_finished

pytestmark = [pytest.mark.motoserver, pytest.mark.live]


def sync_answer(serving_url: str, body: dict) -> dict:
    request = urllib.request.Request(
        serving_url + "/v1/chat/completions",
        data=json.dumps(body).encode(),
        headers={"content-type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


def test_a_batch_comes_out_exactly_once_in_input_order_with_the_sync_answers(lane_factory, serving):
    lane = lane_factory()
    api = lane.api()
    lane.worker("worker-1", BATCH_SERVING_URL=serving.url, BATCH_CONCURRENCY="8")
    lane.worker("worker-2", BATCH_SERVING_URL=serving.url, BATCH_CONCURRENCY="8")
    client = api.openai()
    lines = [chat_line(i) for i in range(300)]
    batch = submit(client, lines)
    assert batch.status == "in_progress" and batch.request_counts.total == 300
    done = wait_finished(client, batch.id, timeout=180)
    assert done.status == "completed", done
    assert done.request_counts.completed == 300 and done.request_counts.failed == 0
    assert done.error_file_id is None
    output = file_lines(client, done.output_file_id)
    assert [o["custom_id"] for o in output] == [line["custom_id"] for line in lines]
    assert len({o["id"] for o in output}) == 300
    for line, out in zip(lines[::30], output[::30], strict=True):
        expected = sync_answer(serving.url, line["body"])
        assert out["response"]["status_code"] == 200 and out["error"] is None
        assert out["response"]["body"]["choices"] == expected["choices"]
    assert done.usage.output_tokens == 300 * 8
