"""The asynchronous lane in the cost estimate: its work queue priced by the lines it carries, its dead-letter queue
free, its bucket by stored GiB and per-line requests, and the serving pool's night held at its floor (backfill)
in the expected node-hours; the prod plan prices every lane resource (none unknown)."""

from __future__ import annotations

import json

import pytest

from inference_platform.catalog import prices
from inference_platform.components.autoscaling.scaled_object import ScaleTarget, ScalingPolicy, scaled_object_spec
from inference_platform.components.batch.scaling import QueueSignal
from inference_platform.components.observability.promql import Scope
from inference_platform.planners.costing import Usage, estimate
from inference_platform.planners.night_schedule import NightSchedule
from inference_platform.planners.node_hours import schedule_of

LANE = "urn:pulumi:prod::p::inference:batch:BatchQueues$aws:sqs/queue:Queue::"
BUCKET = "urn:pulumi:prod::p::inference:batch:BatchBucket$aws:s3/bucket:Bucket::batch-bucket-bucket"


def _queue(name: str, **inputs):
    return {"type": "aws:sqs/queue:Queue", "urn": LANE + name, "name": name, "custom": True, "inputs": inputs}


def test_the_work_queue_is_priced_by_its_lines_and_the_dead_letter_queue_is_free():
    work = _queue("batch-queues-work", redrivePolicy=json.dumps({"deadLetterTargetArn": "arn", "maxReceiveCount": 5}))
    dead = _queue("batch-queues-dead-letter")
    usage = Usage(batch_lines_per_month=4_000_000, batch_sqs_requests_per_line=2.5)
    lines = {line.name: line for line in estimate([work, dead], region="us-east-1", usage=usage).lines}
    assert lines["batch-queues-work"].monthly_expected == pytest.approx(
        4e6 * 2.5 / 1e6 * prices.SQS_STANDARD_PER_MILLION
    )
    assert lines["batch-queues-work"].category == "SQS" and "4,000,000 lines/month" in lines["batch-queues-work"].basis
    assert lines["batch-queues-dead-letter"].status == "free"


def test_a_fifo_work_queue_is_priced_at_the_fifo_rate():
    work = _queue("w", fifoQueue=True, redrivePolicy="{}x")
    (line,) = estimate(
        [work], region="us-east-1", usage=Usage(batch_lines_per_month=1e6, batch_sqs_requests_per_line=2.5)
    ).lines
    assert line.monthly_expected == pytest.approx(2.5 * prices.SQS_FIFO_PER_MILLION)


def test_other_queues_stay_free():
    karpenter = {"type": "aws:sqs/queue:Queue", "urn": "urn:pulumi:p::p::inference:compute:Karpenter$aws:sqs/queue:Queue::k",
                 "name": "k", "custom": True, "inputs": {"sqsManagedSseEnabled": True}}  # fmt: skip
    (line,) = estimate([karpenter], region="us-east-1").lines
    assert line.status == "free"


def test_the_lane_bucket_is_priced_by_gib_and_per_line_requests():
    bucket = {"type": "aws:s3/bucket:Bucket", "urn": BUCKET, "name": "batch-bucket-bucket", "custom": True,
              "inputs": {"tags": {"bucket-role": "batch"}}}  # fmt: skip
    usage = Usage(batch_gib=200, batch_lines_per_month=1e6, batch_s3_puts_per_line=2, batch_s3_gets_per_line=2)
    (line,) = estimate([bucket], region="us-east-1", usage=usage).lines
    expected = (
        200 * prices.S3_STANDARD_GB_MONTH + 2e6 / 1000 * prices.S3_PUT_PER_1000 + 2e6 / 1000 * prices.S3_GET_PER_1000
    )
    assert line.monthly_expected == pytest.approx(expected) and line.basis.startswith("batch lane:")


def test_backfill_prices_the_night_at_the_held_floor():
    policy = ScalingPolicy(
        scope=Scope(namespace="inference", job="triton"),
        prometheus_url="http://p",
        min_replicas=4,
        max_replicas=8,
        night=NightSchedule(),
        backfill=QueueSignal(queue_url="https://sqs.us-east-1.amazonaws.com/1/q", region="us-east-1"),
    )
    schedule = schedule_of(scaled_object_spec(policy, ScaleTarget(name="triton")))
    assert (schedule.night.floor, schedule.night.ceiling) == (4, 4)
    assert "held at its floor" in schedule.describe() and not schedule.note


def test_the_prod_plan_prices_every_lane_resource(stack_plan):
    plan = stack_plan("prod")
    resources = [
        {"type": r.type, "urn": r.urn, "name": r.name, "custom": r.custom, "id": r.id, "inputs": r.inputs}
        for r in plan.run.resources
    ]
    est = estimate(resources, region="us-east-1")
    lane = [line for line in est.lines if line.area == "batch"]
    assert lane and not [line for line in lane if line.status == "unknown"]
    assert {line.category for line in lane if line.status == "priced"} == {"S3", "SQS"}
