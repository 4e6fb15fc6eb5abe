"""The work queue: SQS **standard** messages of up to BATCH_LINES_PER_MESSAGE consecutive input lines each, and
what the lane needs of the queue. A line is still the unit of work and of retry: a redelivered message's
lines that already have results are skipped, so a chunk costs one SQS message (a tenth of the requests,
and of SQS's price) without tying its lines' fates together, except that a poison line takes its
message, and with it the record of its already-answered siblings, to the dead-letter queue.

Standard, not FIFO: the output keeps input order because the finalizer assembles it by line number, and
a line is written once because its result key is written once (:mod:`.store`); FIFO's 5-minute
deduplication would add nothing, and a FIFO group would wait a whole visibility timeout behind a killed
worker's or a poison message.

Both roles refuse to start on a queue that could break the promises: without a redrive policy a poison
request would loop forever, and with a visibility timeout shorter than the longest allowed generation a
request still running would be handed to a second worker.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from .config import VISIBILITY_MARGIN_SECONDS, CommonConfig, ConfigError
from .input_file import MAX_MESSAGE_BYTES, MESSAGE_OVERHEAD_BYTES, Request

SEND_BATCH = 10
"""SendMessageBatch's limit (botocore sqs/2012-11-05 service-2.json: at most 10 entries)."""
MESSAGE_VERSION = 1


@dataclass(frozen=True)
class QueueLimits:
    visibility_timeout: int
    max_receives: int


def limits(sqs: Any, config: CommonConfig) -> QueueLimits:
    """The work queue's visibility timeout and redrive limit, checked against the settings (ConfigError)."""
    attributes = sqs.get_queue_attributes(
        QueueUrl=config.queue_url, AttributeNames=["VisibilityTimeout", "RedrivePolicy"]
    )["Attributes"]
    problems = []
    visibility = int(attributes.get("VisibilityTimeout", 30))
    redrive = json.loads(attributes["RedrivePolicy"]) if attributes.get("RedrivePolicy") else None
    max_receives = int(redrive["maxReceiveCount"]) if redrive else 0
    if redrive is None:
        problems.append(f"BATCH_QUEUE_URL={config.queue_url!r}: the queue has no RedrivePolicy (a dead-letter queue)")
    if visibility < config.request_timeout_seconds + VISIBILITY_MARGIN_SECONDS:
        problems.append(
            f"BATCH_REQUEST_TIMEOUT_SECONDS={config.request_timeout_seconds:g}: the queue's VisibilityTimeout "
            f"{visibility} s must be at least {VISIBILITY_MARGIN_SECONDS} s longer"
        )
    if config.expect_visibility_timeout is not None and config.expect_visibility_timeout != visibility:
        problems.append(
            f"BATCH_VISIBILITY_TIMEOUT_SECONDS={config.expect_visibility_timeout}: the queue says {visibility}"
        )
    if config.expect_max_receive_count is not None and redrive and config.expect_max_receive_count != max_receives:
        problems.append(f"BATCH_MAX_RECEIVE_COUNT={config.expect_max_receive_count}: the queue says {max_receives}")
    if problems:
        raise ConfigError(problems)
    return QueueLimits(visibility_timeout=visibility, max_receives=max_receives)


def chunks(requests: list[Request], lines_per_message: int) -> Iterator[list[Request]]:
    """Consecutive requests, at most ``lines_per_message`` and MAX_MESSAGE_BYTES of JSON to a message."""
    chunk: list[Request] = []
    size = MESSAGE_OVERHEAD_BYTES
    for request in requests:
        line_size = len(json.dumps(request.body, separators=(",", ":")).encode()) + len(request.custom_id) + 64
        if chunk and (len(chunk) == lines_per_message or size + line_size > MAX_MESSAGE_BYTES):
            yield chunk
            chunk, size = [], MESSAGE_OVERHEAD_BYTES
        chunk.append(request)
        size += line_size
    if chunk:
        yield chunk


def message(batch_id: str, owner: str, requests: list[Request]) -> str:
    return json.dumps(
        {
            "v": MESSAGE_VERSION,
            "batch_id": batch_id,
            "owner": owner,
            "url": requests[0].url,
            "lines": [{"line": r.line, "custom_id": r.custom_id, "body": r.body} for r in requests],
        },
        separators=(",", ":"),
    )


def send(
    sqs: Any, queue_url: str, batch_id: str, owner: str, requests: Iterable[Request], *, lines_per_message: int
) -> int:
    """Queue the requests, ``lines_per_message`` to a message and ten messages per call; a partly failed call
    is retried for its failed entries. Returns the messages sent."""
    messages = [message(batch_id, owner, chunk) for chunk in chunks(list(requests), lines_per_message)]
    sent = 0
    for start in range(0, len(messages), SEND_BATCH):
        entries = [
            {"Id": str(start + i), "MessageBody": body} for i, body in enumerate(messages[start : start + SEND_BATCH])
        ]
        for _attempt in range(5):
            response = sqs.send_message_batch(QueueUrl=queue_url, Entries=entries)
            sent += len(response.get("Successful", ()))
            failed = {f["Id"] for f in response.get("Failed", ())}
            entries = [e for e in entries if e["Id"] in failed]
            if not entries:
                break
        else:
            raise RuntimeError(f"SQS refused {len(entries)} messages of {batch_id} five times")
    return sent


@dataclass(frozen=True)
class Line:
    line: int
    custom_id: str
    body: dict[str, Any]


@dataclass(frozen=True)
class Delivery:
    """One received message, parsed: consecutive lines of one batch."""

    receipt: str
    receives: int
    batch_id: str
    owner: str
    url: str
    lines: tuple[Line, ...]


def parse_delivery(raw: dict[str, Any]) -> Delivery | None:
    """None for a message this code did not write (it is left to the redrive policy)."""
    try:
        data = json.loads(raw["Body"])
        if data.get("v") != MESSAGE_VERSION:
            return None
        lines = tuple(Line(int(x["line"]), str(x["custom_id"]), dict(x["body"])) for x in data["lines"])
        if not lines:
            return None
        return Delivery(
            receipt=raw["ReceiptHandle"],
            receives=int(raw.get("Attributes", {}).get("ApproximateReceiveCount", 1)),
            batch_id=str(data["batch_id"]),
            owner=str(data["owner"]),
            url=str(data["url"]),
            lines=lines,
        )
    except (KeyError, TypeError, ValueError):
        return None


def depth(sqs: Any, queue_url: str) -> dict[str, int]:
    attributes = sqs.get_queue_attributes(
        QueueUrl=queue_url,
        AttributeNames=[
            "ApproximateNumberOfMessages",
            "ApproximateNumberOfMessagesNotVisible",
            "ApproximateNumberOfMessagesDelayed",
        ],
    )["Attributes"]
    return {
        "visible": int(attributes.get("ApproximateNumberOfMessages", 0)),
        "in_flight": int(attributes.get("ApproximateNumberOfMessagesNotVisible", 0)),
        "delayed": int(attributes.get("ApproximateNumberOfMessagesDelayed", 0)),
    }
