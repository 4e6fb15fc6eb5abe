"""The lane's Prometheus series (names agreed with the cluster side's dashboards and alerts, docs/batch.md).

The API exports the queue and batch gauges because it always runs; KEDA scales the workers to zero.
"""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

# API
QUEUE_MESSAGES = Gauge("batch_queue_messages", "SQS approximate message counts", ["queue", "state"])
OLDEST_OPEN_AGE = Gauge("batch_oldest_open_batch_age_seconds", "Age of the oldest batch not yet finished (0: none)")
BATCHES = Gauge("batch_batches", "Stored batches by status", ["status"])
OPEN_REQUESTS = Gauge("batch_open_requests", "Lines of the open batches: total, and done (a result written)", ["state"])
QUOTA_REJECTIONS = Counter(
    "batch_quota_rejections", "Submissions refused over a queued quota (429)", ["client", "kind"]
)
SUBMISSIONS = Counter("batch_submissions", "POST /v1/batches by outcome", ["outcome"])
FILES = Counter("batch_files", "Files stored, by purpose", ["purpose"])
MONITOR_ERRORS = Counter("batch_monitor_errors", "Monitor loop steps that failed", ["reason"])

# Worker
REQUESTS = Counter("batch_requests", "Lines handled by the worker, by what became of them", ["status"])
REQUEST_SECONDS = Histogram(
    "batch_request_duration_seconds",
    "Serving call latency of batch requests",
    buckets=(0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600),
)
IN_FLIGHT = Gauge("batch_worker_in_flight", "Batch requests the worker has in flight")
CONCURRENCY_LIMIT = Gauge(
    "batch_worker_concurrency_limit", "Requests the worker may have in flight now (after shedding)"
)
SHEDDING = Gauge("batch_worker_shedding", "1 while a serving signal is above its threshold")
BACKOFF_SECONDS = Counter("batch_worker_backoff_seconds", "Time the worker spent shed")
WORKER_ERRORS = Counter("batch_worker_errors", "Worker failures by kind", ["reason"])

REQUEST_STATUSES = ("completed", "failed", "retried", "duplicate", "cancelled", "expired", "budget")
ERROR_REASONS = ("s3", "sqs", "serving", "signals")
for _status in REQUEST_STATUSES:
    REQUESTS.labels(status=_status)
for _reason in ERROR_REASONS:
    WORKER_ERRORS.labels(reason=_reason)
