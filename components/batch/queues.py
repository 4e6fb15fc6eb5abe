"""The lane's work queue and its dead-letter queue (SQS), both under the stack's CMK and TLS-only.

Standard, not FIFO. The promise is that the output file keeps the input order, and the writer keeps it: every
message names its batch and line, each line's result is written once under its line number, and the output
file is assembled in line order. Delivery order therefore does not matter, and FIFO would cost without
buying anything: its deduplication lasts 5 minutes while a redelivery after a killed worker comes a
visibility timeout later, one message group per batch would hold the whole batch behind one slow or poison
line, and a FIFO queue takes 300 messages/s per API action without high-throughput mode (Amazon SQS
Developer Guide, "FIFO queue quotas"). Exactly-once output lines come from the write-once result objects.

- Visibility timeout above the longest allowed generation (a line still generating is never handed to a
  second worker); the worker refuses to start otherwise.
- A redrive policy: after ``max_receive_count`` deliveries a message moves to the dead-letter queue (its
  line is in the error file by then); the dead-letter queue admits this work queue only (redrive allow
  policy) and keeps messages 14 days, longer than the work queue, so a dead letter never expires first.
- SSE-KMS under the stack's CMK; SQS reuses a data key for ``data_key_reuse_seconds`` (fewer KMS calls).
- Limits cited from botocore's SQS model (sqs/2012-11-05 CreateQueue Attributes), pinned in tests/data/upstream.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import pulumi
import pulumi_aws as aws

from inference_platform.catalog.names import fit_name
from inference_platform.components.batch.documents import queue_policy, redrive_allow_policy, redrive_policy
from inference_platform.components.common.errors import raise_if

MAX_VISIBILITY_SECONDS = 43_200
MAX_RETENTION_SECONDS = 1_209_600
DEAD_LETTER_RETENTION_SECONDS = MAX_RETENTION_SECONDS
MAX_RECEIVE_COUNT = 1000
MIN_DATA_KEY_REUSE_SECONDS, MAX_DATA_KEY_REUSE_SECONDS = 60, 86_400
MESSAGE_BYTES = 262_144
"""One input line per message; the Batch API refuses a line beyond 256 KiB."""
LONG_POLL_SECONDS = 20
"""ReceiveMessage waits up to 20 s (SQS's maximum): fewer empty receives, each a billed request."""
_QUEUE_NAME_MAX = 80
_SUFFIX_ROOM = 26
"""The provider appends a unique suffix to a name prefix (``terraform-provider-aws`` id.PrefixedUniqueId)."""


@dataclass(frozen=True, kw_only=True)
class BatchQueuesArgs:
    """What the lane's queues need: the name prefix, the key, visibility timeout, retention and receive limit."""

    name_prefix: str
    """Required. Start of both queue names (``<prefix>-batch-work-``, ``<prefix>-batch-dead-letter-``)."""
    kms_key_arn: pulumi.Input[str]
    """Required. The stack's CMK."""
    visibility_timeout_seconds: int
    """Required, 1..43200. Must exceed the longest generation a line may take."""
    message_retention_seconds: int
    """Required, 60..1209600. At least the completion window: a batch expires before its messages."""
    max_receive_count: int = 5
    """Default 5, 1..1000. Deliveries before a message moves to the dead-letter queue."""
    data_key_reuse_seconds: int = 300
    """Default 300, 60..86400."""
    protect: bool = False
    """Default ``False``; production. Protect both queues and retain them on delete: a replacement or a
    ``pulumi destroy`` would otherwise drop the queued lines and the dead-letter queue's evidence of the failed
    ones (``pulumi destroy`` then forgets them and leaves them in the account)."""


class BatchQueues(pulumi.ComponentResource):
    """The lane's SQS work queue and its dead-letter queue, both under the stack's key and TLS-only."""

    queue_url: pulumi.Output[str]
    queue_arn: pulumi.Output[str]
    queue_name: pulumi.Output[str]
    dead_letter_url: pulumi.Output[str]
    dead_letter_arn: pulumi.Output[str]

    def __init__(self, name: str, args: BatchQueuesArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        _validate(args)
        super().__init__("inference:batch:BatchQueues", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        stateful = pulumi.ResourceOptions(parent=self, protect=args.protect, retain_on_delete=args.protect)
        encrypted = {
            "kms_master_key_id": args.kms_key_arn,
            "kms_data_key_reuse_period_seconds": args.data_key_reuse_seconds,
        }
        dead = aws.sqs.Queue(
            f"{name}-dead-letter",
            name_prefix=_name_prefix(args.name_prefix, "batch-dead-letter"),
            message_retention_seconds=DEAD_LETTER_RETENTION_SECONDS,
            max_message_size=MESSAGE_BYTES,
            **encrypted,
            opts=stateful,
        )
        work = aws.sqs.Queue(
            f"{name}-work",
            name_prefix=_name_prefix(args.name_prefix, "batch-work"),
            visibility_timeout_seconds=args.visibility_timeout_seconds,
            message_retention_seconds=args.message_retention_seconds,
            max_message_size=MESSAGE_BYTES,
            receive_wait_time_seconds=LONG_POLL_SECONDS,
            redrive_policy=dead.arn.apply(lambda arn: json.dumps(redrive_policy(arn, args.max_receive_count))),
            **encrypted,
            opts=stateful,
        )
        aws.sqs.RedriveAllowPolicy(
            f"{name}-dead-letter-allow",
            queue_url=dead.url,
            redrive_allow_policy=work.arn.apply(lambda arn: json.dumps(redrive_allow_policy([arn]))),
            opts=child,
        )
        for role, queue in (("work", work), ("dead-letter", dead)):
            aws.sqs.QueuePolicy(
                f"{name}-{role}-policy",
                queue_url=queue.url,
                policy=queue.arn.apply(lambda arn: json.dumps(queue_policy(arn))),
                opts=child,
            )
        self.queue_url = work.url
        self.queue_arn = work.arn
        self.queue_name = work.name
        self.dead_letter_url = dead.url
        self.dead_letter_arn = dead.arn
        self.register_outputs(
            {
                "queue_url": self.queue_url,
                "queue_arn": self.queue_arn,
                "queue_name": self.queue_name,
                "dead_letter_url": self.dead_letter_url,
                "dead_letter_arn": self.dead_letter_arn,
            }
        )


def _name_prefix(name_prefix: str, role: str) -> str:
    """``<prefix>-<role>-`` within SQS's 80 characters, leaving room for the provider's unique suffix."""
    room = _QUEUE_NAME_MAX - _SUFFIX_ROOM - len(role) - 2
    return f"{fit_name(name_prefix, room)}-{role}-"


def _validate(args: BatchQueuesArgs) -> None:
    problems = []
    if not 1 <= args.visibility_timeout_seconds <= MAX_VISIBILITY_SECONDS:
        problems.append(f"visibility_timeout_seconds={args.visibility_timeout_seconds}: 1..{MAX_VISIBILITY_SECONDS}")
    if not 60 <= args.message_retention_seconds <= MAX_RETENTION_SECONDS:
        problems.append(f"message_retention_seconds={args.message_retention_seconds}: 60..{MAX_RETENTION_SECONDS}")
    if not 1 <= args.max_receive_count <= MAX_RECEIVE_COUNT:
        problems.append(f"max_receive_count={args.max_receive_count}: 1..{MAX_RECEIVE_COUNT}")
    if not MIN_DATA_KEY_REUSE_SECONDS <= args.data_key_reuse_seconds <= MAX_DATA_KEY_REUSE_SECONDS:
        problems.append(
            f"data_key_reuse_seconds={args.data_key_reuse_seconds}: "
            f"{MIN_DATA_KEY_REUSE_SECONDS}..{MAX_DATA_KEY_REUSE_SECONDS}"
        )
    if args.visibility_timeout_seconds * args.max_receive_count > args.message_retention_seconds:
        problems.append(
            f"max_receive_count={args.max_receive_count} x visibility_timeout_seconds="
            f"{args.visibility_timeout_seconds} outlast message_retention_seconds={args.message_retention_seconds}: "
            "a poison message would expire before it reaches the dead-letter queue"
        )
    raise_if("BatchQueues", problems)
