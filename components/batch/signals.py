"""What the lane measures and watches, as plain data: its metric names, recording rules, alerts, the worker's
back-off rules and its Grafana dashboard.

Metric names are the running code's (``inference_platform.batch.metrics``, batch/metrics.py). SQS's own
ApproximateAgeOfOldestMessage is a CloudWatch metric only, so the completion window is watched through the age
of the oldest open batch, which the Batch API exports; queue depth and the dead-letter count are the queues'
GetQueueAttributes as the API exports them (it always runs; KEDA scales the workers to zero; with two API
replicas both export the same value: rules take the max).

Alerts (each with a runbook section in docs/runbooks.md):
- ``BatchCompletionWindowAtRisk`` (critical): the oldest open batch is older than ``window_share`` of the
  completion window; past the window it expires with its remaining lines unanswered.
- ``BatchDeadLetters`` (warning): the dead-letter queue is not empty: lines failed every delivery.
- ``BatchWorkerErrors`` (warning): the workers keep failing against S3, SQS, the servers or the signals.
- ``BatchQueueStalled`` (warning): messages wait while nothing completes (workers absent or all shedding).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from inference_platform.components.batch.pods import ShedRule
from inference_platform.components.observability import promql as q
from inference_platform.components.observability.alerting import alert
from inference_platform.components.observability.promql import Scope

QUEUE_MESSAGES = "batch_queue_messages"
"""Gauge (the API), labels ``queue`` (work, dead_letter) and ``state`` (visible, in_flight, delayed)."""
OLDEST_OPEN_BATCH_SECONDS = "batch_oldest_open_batch_age_seconds"
"""Gauge (the API): age of the oldest batch not yet finished, 0 when none is open."""
OPEN_REQUESTS = "batch_open_requests"
"""Gauge (the API), label ``state`` (total, done): lines of the open batches."""
BATCHES = "batch_batches"
"""Gauge (the API), label ``status``: stored batches by status."""
REQUESTS = "batch_requests_total"
"""Counter (workers), label ``status`` (completed, failed, retried, duplicate, cancelled, expired, budget)."""
WORKER_ERRORS = "batch_worker_errors_total"
"""Counter (workers), label ``reason`` (s3, sqs, serving, signals)."""
SHEDDING = "batch_worker_shedding"
IN_FLIGHT = "batch_worker_in_flight"
QUOTA_REJECTIONS = "batch_quota_rejections_total"
"""Counter (the API), labels ``client`` and ``kind`` (requests, tokens): 429s at submission."""

PROGRESS = "batch:open_requests_done:ratio"
QUEUED = "batch:work_queue_messages:max"
DEAD_LETTERS = "batch:dead_letter_messages:max"
RUNBOOK_BASE = "docs/runbooks.md"


@dataclass(frozen=True, kw_only=True)
class LaneWatch:
    """What the lane watches: its namespace, completion window and the error rate its alerts allow."""

    namespace: str
    """The lane's namespace (the scrape's ``namespace`` label)."""
    completion_window_hours: int
    window_share: float = 0.75
    """Default 0.75. Share of the completion window the oldest open batch may reach before the alert."""
    error_rate: float = 0.1
    """Default 0.1. Worker errors per second (10-minute rate) that warn."""

    def selector(self, **extra: str) -> str:
        return q.selector({"namespace": self.namespace, **extra})


def recording_rules(watch: LaneWatch) -> list[dict[str, Any]]:
    s = watch.selector
    return [
        {"record": QUEUED, "expr": f"max({QUEUE_MESSAGES}{s(queue='work', state='=~visible|in_flight')}) or vector(0)"},
        {
            "record": DEAD_LETTERS,
            "expr": f"max({QUEUE_MESSAGES}{s(queue='dead_letter', state='visible')}) or vector(0)",
        },
        {
            "record": PROGRESS,
            "expr": f"max({OPEN_REQUESTS}{s(state='done')}) / clamp_min(max({OPEN_REQUESTS}{s(state='total')}), 1)",
        },
    ]


def rule_groups(watch: LaneWatch) -> list[dict[str, Any]]:
    if not 0 < watch.window_share <= 1:
        raise ValueError(f"window_share={watch.window_share}: in (0, 1]")
    s = watch.selector
    limit = watch.completion_window_hours * 3600 * watch.window_share
    done = f"sum(increase({REQUESTS}{s(status='=~completed|failed')}[15m]))"
    alerts = [
        alert(
            "BatchCompletionWindowAtRisk",
            f"max({OLDEST_OPEN_BATCH_SECONDS}{s()}) > {limit:g}",
            for_="5m",
            severity="critical",
            summary="A batch is close to its completion window",
            description=f"The oldest open batch is {{{{ $value | humanizeDuration }}}} old: beyond {watch.window_share:.0%} of the "
            f"{watch.completion_window_hours} h completion window; when the window ends it expires unfinished.",
            runbook_base=RUNBOOK_BASE,
        ),
        alert(
            "BatchDeadLetters",
            f"{DEAD_LETTERS} > 0",
            for_="5m",
            severity="warning",
            summary="Batch lines are in the dead-letter queue",
            description="{{ $value }} message(s) failed every delivery (maxReceiveCount) and sit in the dead-letter queue; "
            "their lines are in the batches' error files.",
            runbook_base=RUNBOOK_BASE,
        ),
        alert(
            "BatchWorkerErrors",
            f"sum(rate({WORKER_ERRORS}{s()}[10m])) > {watch.error_rate:g}",
            for_="15m",
            severity="warning",
            summary="Batch workers keep failing",
            description="{{ $value }} errors/s against S3, SQS, the serving endpoint or the back-off signals.",
            runbook_base=RUNBOOK_BASE,
        ),
        alert(
            "BatchQueueStalled",
            f"{QUEUED} > 0 and on() ({done} or vector(0)) == 0",
            for_="30m",
            severity="warning",
            summary="Batch work waits and nothing completes",
            description="Messages are queued but no line completed in 15 minutes: no worker runs, or every worker sheds "
            "because the interactive tier keeps the servers busy.",
            runbook_base=RUNBOOK_BASE,
        ),
    ]
    name = f"{watch.namespace}-lane"
    return [{"name": f"{name}.recording", "rules": recording_rules(watch)}, {"name": f"{name}.alerts", "rules": alerts}]


def shed_rules(scope: Scope, *, waiting_per_replica: float, kv_cache_ratio: float) -> list[ShedRule]:
    """The worker pauses while the servers' waiting requests per replica or their KV-cache use is above these:
    interactive requests come first (the backends without KV-cache metrics get the first rule only)."""
    waiting = f"sum({scope.request_metrics}{scope.selector(model=scope.llm_model, request_type='waiting')})"
    replicas = f"clamp_min(count({q.UP}{scope.selector()} == 1), 1)"
    rules = [ShedRule(expr=f"{waiting} / {replicas}", above=waiting_per_replica)]
    if scope.has_kv_cache_metrics:
        rules.append(ShedRule(expr=q.kv_cache_utilisation(scope), above=kv_cache_ratio))
    return rules
