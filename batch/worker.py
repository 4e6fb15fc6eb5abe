"""The queue worker: takes one line's request from SQS, asks the serving endpoint, writes the answer once.

At-least-once delivery, exactly-once output lines: a message is deleted only after its line's result is
stored, and the result key is written once (:meth:`Store.write_line_once`), so a redelivery (a worker killed
mid-request, a delete that failed, a visibility timeout) finds its line taken and is dropped.

What becomes of an answer:
- 2xx: the output file.
- 4xx other than 408/409/429: the error file at once (the request itself is wrong; retrying cannot help).
- 408/409/429, 5xx, a timeout, a refused connection: retried. The message's visibility is cut to
  BATCH_RETRY_DELAY_SECONDS so the retry comes soon; on the receive that reaches the queue's
  ``maxReceiveCount`` the failure goes to the error file instead, and the message is left alone for SQS's
  redrive policy to move to the dead-letter queue on its next receive.
- its batch cancelled or past its completion window: the error file (``batch_cancelled``/``batch_expired``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import signal
import time
from typing import Any

import aiohttp

from . import metrics, objects, queue
from .config import WorkerConfig
from .lifecycle import CANCELLED, EXPIRED
from .queue import Delivery, QueueLimits
from .shedding import Shedder
from .store import Store

log = logging.getLogger(__name__)

RETRIABLE_STATUS = frozenset({408, 409, 429})
RECEIVE_MAX = 10
"""ReceiveMessage's MaxNumberOfMessages limit."""
RECORD_CACHE_SECONDS = 2.0
"""How long a batch's status is trusted: a cancel reaches the workers within this (the monitor writes the
cancelled lines itself anyway)."""
IDLE_SECONDS = 0.2


class Worker:
    def __init__(self, config: WorkerConfig, store: Store, sqs: Any, limits: QueueLimits, *, receive_wait: int) -> None:
        self.config = config
        self.store = store
        self.sqs = sqs
        self.limits = limits
        self.receive_wait = receive_wait
        self.shedder = Shedder(config)
        self.stopping = asyncio.Event()
        self.in_flight: set[asyncio.Task[None]] = set()
        self._records: dict[str, tuple[float, dict[str, Any] | None]] = {}
        self.heartbeat = lambda: None

    def headers(self) -> dict[str, str]:
        headers = {"content-type": "application/json"}
        if self.config.api_key:
            header = self.config.api_key_header
            headers[header] = f"Bearer {self.config.api_key}" if header == "authorization" else self.config.api_key
        return headers

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self.stopping.set)
        connector = aiohttp.TCPConnector(limit=self.config.concurrency + 4)
        async with aiohttp.ClientSession(connector=connector) as session:
            signals = asyncio.create_task(self.shedder.run(session, self.stopping))
            try:
                await self._receive_loop(session)
            finally:
                self.stopping.set()
                # Let what is running finish (Kubernetes' grace period covers the request timeout).
                if self.in_flight:
                    await asyncio.wait(self.in_flight, timeout=self.config.common.request_timeout_seconds)
                signals.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await signals
        log.info("worker stopped")

    async def _receive_loop(self, session: aiohttp.ClientSession) -> None:
        while not self.stopping.is_set():
            self.heartbeat()
            room = self.shedder.limit - len(self.in_flight)
            metrics.IN_FLIGHT.set(len(self.in_flight))
            if room <= 0:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.stopping.wait(), IDLE_SECONDS)
                continue
            try:
                messages = await asyncio.to_thread(self._receive, min(RECEIVE_MAX, room))
            except Exception as err:
                metrics.WORKER_ERRORS.labels(reason="sqs").inc()
                log.warning("receiving failed (%s); retrying", err)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.stopping.wait(), 1.0)
                continue
            for raw in messages:
                delivery = queue.parse_delivery(raw)
                if delivery is None:
                    # Not ours to read: left for the redrive policy (it reaches the DLQ after maxReceiveCount).
                    log.warning(
                        "message %s is not a batch line; leaving it to the dead-letter queue", raw.get("MessageId")
                    )
                    continue
                task = asyncio.create_task(self._handle(session, delivery))
                self.in_flight.add(task)
                task.add_done_callback(self.in_flight.discard)

    def _receive(self, count: int) -> list[dict[str, Any]]:
        response = self.sqs.receive_message(
            QueueUrl=self.config.common.queue_url,
            MaxNumberOfMessages=count,
            WaitTimeSeconds=self.receive_wait,
            MessageSystemAttributeNames=["ApproximateReceiveCount"],
        )
        return list(response.get("Messages", ()))

    def _record(self, owner: str, batch_id: str) -> dict[str, Any] | None:
        cached = self._records.get(batch_id)
        if cached and time.monotonic() - cached[0] < RECORD_CACHE_SECONDS:
            return cached[1]
        record = self.store.batch(owner, batch_id)
        data = record.data if record else None
        self._records[batch_id] = (time.monotonic(), data)
        return data

    async def _handle(self, session: aiohttp.ClientSession, delivery: Delivery) -> None:
        try:
            await self._process(session, delivery)
        except Exception:
            # S3 or SQS trouble: the message comes back after its visibility timeout and is tried again.
            metrics.WORKER_ERRORS.labels(reason="s3").inc()
            log.warning(
                "line %s of %s: storing failed; it will be redelivered", delivery.line, delivery.batch_id, exc_info=True
            )

    async def _process(self, session: aiohttp.ClientSession, delivery: Delivery) -> None:
        batch_id, line = delivery.batch_id, delivery.line
        if await asyncio.to_thread(self.store.line_done, batch_id, line):
            metrics.REQUESTS.labels(status="duplicate").inc()
            await self._delete(delivery)
            return
        record = await asyncio.to_thread(self._record, delivery.owner, batch_id)
        if record is None:
            log.warning("line %s of %s: the batch is gone; dropping the message", line, batch_id)
            await self._delete(delivery)
            return
        batch = record["batch"]
        if batch["status"] in ("cancelling", "cancelled") or time.time() >= batch["expires_at"]:
            status = "cancelled" if batch["status"] in ("cancelling", "cancelled") else "expired"
            code, message = CANCELLED if status == "cancelled" else EXPIRED
            result = objects.error_line(
                batch_id=batch_id, line=line, custom_id=delivery.custom_id, code=code, message=message
            )
            await self._write(delivery, result, failed=True, status=status)
            return
        outcome = await self._call(session, delivery)
        last_try = delivery.receives >= self.limits.max_receives
        if outcome.retriable and not last_try:
            metrics.REQUESTS.labels(status="retried").inc()
            log.info(
                "line %s of %s: %s (receive %d of %d); retrying",
                line,
                batch_id,
                outcome.reason,
                delivery.receives,
                self.limits.max_receives,
            )
            await self._visibility(delivery, self.config.retry_delay_seconds)
            return
        failed = not objects.is_success(outcome.result)
        if outcome.retriable:
            log.warning(
                "line %s of %s: %s on the last allowed receive: error file, then the dead-letter queue",
                line,
                batch_id,
                outcome.reason,
            )
        await self._write(
            delivery,
            outcome.result,
            failed=failed,
            status="failed" if failed else "completed",
            delete=not outcome.retriable,
        )
        if outcome.retriable:
            # The last failing try keeps its message, visible again at once: the redrive policy moves it to the
            # DLQ on its next receive, not after another whole visibility timeout.
            await self._visibility(delivery, 0)

    async def _write(
        self, delivery: Delivery, result: dict[str, Any], *, failed: bool, status: str, delete: bool = True
    ) -> None:
        written = await asyncio.to_thread(
            self.store.write_line_once, delivery.batch_id, delivery.line, result, failed=failed
        )
        metrics.REQUESTS.labels(status=status if written else "duplicate").inc()
        if delete:
            await self._delete(delivery)

    async def _visibility(self, delivery: Delivery, seconds: int) -> None:
        await asyncio.to_thread(
            self.sqs.change_message_visibility,
            QueueUrl=self.config.common.queue_url,
            ReceiptHandle=delivery.receipt,
            VisibilityTimeout=seconds,
        )

    async def _delete(self, delivery: Delivery) -> None:
        await asyncio.to_thread(
            self.sqs.delete_message, QueueUrl=self.config.common.queue_url, ReceiptHandle=delivery.receipt
        )

    async def _call(self, session: aiohttp.ClientSession, delivery: Delivery) -> _Outcome:
        url = self.config.serving_url + delivery.url
        timeout = aiohttp.ClientTimeout(total=self.config.common.request_timeout_seconds)
        started = time.monotonic()
        try:
            async with session.post(url, json=delivery.body, headers=self.headers(), timeout=timeout) as response:
                raw = await response.read()
                status = response.status
                request_id = response.headers.get("x-request-id", objects.request_id(delivery.batch_id, delivery.line))
        except (TimeoutError, aiohttp.ClientError, OSError) as err:
            metrics.WORKER_ERRORS.labels(reason="serving").inc()
            reason = "timed out" if isinstance(err, TimeoutError) else f"{type(err).__name__}: {err}"
            result = objects.error_line(
                batch_id=delivery.batch_id, line=delivery.line, custom_id=delivery.custom_id,
                code="request_timeout" if isinstance(err, TimeoutError) else "server_unreachable",
                message=f"the serving endpoint {reason}",
            )  # fmt: skip
            return _Outcome(result, retriable=True, reason=reason)
        finally:
            metrics.REQUEST_SECONDS.observe(time.monotonic() - started)
        try:
            body: Any = json.loads(raw)
        except ValueError:
            body = {
                "error": {
                    "message": raw[:1000].decode("utf-8", "replace"),
                    "type": "server_error",
                    "param": None,
                    "code": None,
                }
            }
        result = objects.response_line(
            batch_id=delivery.batch_id, line=delivery.line, custom_id=delivery.custom_id, status_code=status,
            request_id_=request_id, body=body,
        )  # fmt: skip
        retriable = status >= 500 or status in RETRIABLE_STATUS
        if retriable:
            metrics.WORKER_ERRORS.labels(reason="serving").inc()
        return _Outcome(result, retriable=retriable, reason=f"HTTP {status}")


class _Outcome:
    __slots__ = ("reason", "result", "retriable")

    def __init__(self, result: dict[str, Any], *, retriable: bool, reason: str) -> None:
        self.result = result
        self.retriable = retriable
        self.reason = reason
