"""A worker's end, on the real local serving stack (the real CPU Triton with the production ``tensorrt_llm`` model
and the stand-in engine, slowed per token so a line stays in flight, and the image's OpenAI server): SIGKILLed with
requests in flight, its messages come back after the visibility timeout and a survivor answers each line once;
stopped with SIGTERM, as Kubernetes stops a pod, it finishes what it holds and exits 0."""

from __future__ import annotations

import time

import pytest

from inference_platform.inference_image.testing.cpu_llm_api.local import Timing
from inference_platform.settings import stack_files
from tests.batch.lane_requests import chat_line, file_lines, submit, wait_finished
from tests.batch.test_lane_faults import assert_exactly_once_in_order, wait_for
from tools.local_openai_stack import openai_stack

pytestmark = [pytest.mark.triton, pytest.mark.motoserver, pytest.mark.timeout(240)]

# A chat_line (8 tokens) answers in ~0.9 s at this pace (measured on this stack): in flight long enough to be
# killed mid-request, well within the 3 s request timeout of an 8 s visibility.
TIMING = Timing(first_token_delay_ms=50, token_delay_ms=120)


@pytest.fixture(scope="module")
def serving(tmp_path_factory):
    with openai_stack(stack_files.load("dev"), tmp_path_factory.mktemp("openai"), TIMING, edge=False) as stack:
        yield stack


def test_a_worker_killed_mid_request_is_redelivered_after_the_visibility_timeout(serving, lane_factory):
    lane = lane_factory(visibility=8)  # request timeout 3 s
    client = lane.api().openai()
    first = lane.worker("doomed", BATCH_SERVING_URL=serving.openai_url, BATCH_CONCURRENCY="3")
    lines = [chat_line(i, model=serving.served_model) for i in range(3)]
    batch = submit(client, lines)
    wait_for(lambda: first.metric("batch_worker_in_flight") == 3, 20, "three requests in flight")
    first.kill()
    killed_at = time.monotonic()
    second = lane.worker("survivor", BATCH_SERVING_URL=serving.openai_url, BATCH_CONCURRENCY="3")
    done = wait_finished(client, batch.id, timeout=60)
    assert done.status == "completed" and done.request_counts.completed == 3
    assert_exactly_once_in_order(lines, file_lines(client, done.output_file_id))
    # Nothing was written before the kill, so the survivor answered all three, after their messages reappeared
    # (the visibility timeout, 8 s, counted from the receive before the kill).
    assert second.metric("batch_requests_total", status="completed") == 3
    assert time.monotonic() - killed_at >= 8 - 2


def test_a_stopped_worker_finishes_what_it_holds_and_exits_cleanly(serving, lane_factory):
    lane = lane_factory()
    client = lane.api().openai()
    worker = lane.worker(BATCH_SERVING_URL=serving.openai_url, BATCH_CONCURRENCY="2")
    lines = [chat_line(i, model=serving.served_model) for i in range(2)]
    batch = submit(client, lines)
    wait_for(lambda: worker.metric("batch_worker_in_flight") == 2, 20, "two requests in flight")
    assert worker.terminate() == 0  # SIGTERM, as Kubernetes stops a pod
    # Both answers were stored before it exited: the monitor closes the batch with no worker left.
    done = wait_finished(client, batch.id, timeout=30)
    assert done.status == "completed" and done.request_counts.completed == 2
    assert "worker stopped" in worker.log.read_text()
