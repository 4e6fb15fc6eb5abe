"""The API's loop: advance every open batch (requeue a stuck submission, expire or cancel what is left,
finalize), and refresh the queue and batch gauges. It runs in the API because the API always runs, while
KEDA scales the workers to zero once the queue is empty."""

from __future__ import annotations

import logging
from typing import Any

from . import lifecycle, metrics, objects, queue
from .store import Store

log = logging.getLogger(__name__)


class Monitor:
    """The API's loop: advance every open batch (finalize, expire, requeue), refresh the gauges."""

    def __init__(self, store: Store, sqs: Any, queue_url: str, dlq_url: str) -> None:
        self.store = store
        self.sqs = sqs
        self.queue_url = queue_url
        self.dlq_url = dlq_url
        self._terminal: dict[tuple[str, str], str] = {}
        """Records that can no longer change (terminal status), by (owner, batch id): never read again."""

    def step(self) -> None:
        for name, url in (("work", self.queue_url), ("dead_letter", self.dlq_url)):
            try:
                for state, count in queue.depth(self.sqs, url).items():
                    metrics.QUEUE_MESSAGES.labels(queue=name, state=state).set(count)
            except Exception:
                metrics.MONITOR_ERRORS.labels(reason="sqs").inc()
                log.warning("reading the depth of %s failed", url, exc_info=True)
        statuses = dict.fromkeys(objects.STATUSES, 0)
        oldest = None
        total = done = 0
        for owner, batch_id in list(self.store.batch_keys()):
            key = (owner, batch_id)
            if key in self._terminal:
                statuses[self._terminal[key]] += 1
                continue
            try:
                record = lifecycle.advance(self.store, self.sqs, self.queue_url, owner, batch_id)
            except Exception:
                metrics.MONITOR_ERRORS.labels(reason="advance").inc()
                log.warning("advancing %s failed", batch_id, exc_info=True)
                continue
            if record is None:
                continue
            batch = record["batch"]
            statuses[batch["status"]] += 1
            if batch["status"] in objects.TERMINAL:
                self._terminal[key] = batch["status"]
                continue
            oldest = batch["created_at"] if oldest is None else min(oldest, batch["created_at"])
            if batch["status"] != "validating":
                progress = lifecycle.progress(self.store, record)
                total += progress.total
                done += progress.done
        for status, count in statuses.items():
            metrics.BATCHES.labels(status=status).set(count)
        metrics.OLDEST_OPEN_AGE.set(0 if oldest is None else max(0, lifecycle.now() - oldest))
        metrics.OPEN_REQUESTS.labels(state="total").set(total)
        metrics.OPEN_REQUESTS.labels(state="done").set(done)
