"""The queue worker: takes messages of consecutive batch lines from SQS, asks the serving endpoint for each
line, writes each answer once.

At-least-once delivery, exactly-once output lines: a message is deleted only after all its lines' results
are stored, and a result key is written once (:meth:`Store.write_line_once`), so a redelivery (a worker
killed mid-request, a delete that failed, a visibility timeout) finds its lines taken and skips them.

What becomes of a line's answer:
- 2xx: the output file.
- 4xx other than 408/409/429: the error file at once (the request itself is wrong; retrying cannot help).
- 408/409/429, 5xx, a timeout, a refused connection: retried. The message's visibility is cut to
  BATCH_RETRY_DELAY_SECONDS so the retry comes soon (its answered lines are skipped then); on the receive
  that reaches the queue's ``maxReceiveCount`` the failure goes to the error file instead, and the message
  is made visible at once so that SQS's redrive policy moves it to the dead-letter queue on its next receive.
- its batch cancelled or past its completion window: the error file (``batch_cancelled``/``batch_expired``).
- its client's monthly token budget spent since the submission was admitted (``BATCH_BUDGETS``, checked once
  per message): the error file (``insufficient_quota``), never sent, never debited.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
import signal
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import aiohttp

from . import metrics, objects, queue, usage
from .budget import BudgetClient, spent_error
from .config import WorkerConfig
from .lifecycle import CANCELLED, EXPIRED
from .queue import Delivery, Line, QueueLimits
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
BUDGET_CACHE_SECONDS = 2.0
"""How long a client's budget answer is trusted. Lines already sent when the budget is spent finish and are debited
(the edge likewise lets an admitted answer cross a limit); a later message is refused within this."""


class _Outcome:
    __slots__ = ("reason", "result", "retriable")

    def __init__(self, result: dict[str, Any], *, retriable: bool, reason: str) -> None:
        self.result = result
        self.retriable = retriable
        self.reason = reason


class Worker:
    def __init__(self, config: WorkerConfig, store: Store, sqs: Any, limits: QueueLimits, *, receive_wait: int) -> None:
        self.config = config
        self.store = store
        self.sqs = sqs
        self.limits = limits
        self.receive_wait = receive_wait
        self.shedder = Shedder(config)
        self.stopping = asyncio.Event()
        self.tasks: set[asyncio.Task[None]] = set()
        self.active_lines = 0
        self.calls = 0
        """Serving calls under way: held to the shedder's limit line by line, not message by message."""
        self.lines_per_message = 1.0
        """Lines seen per message (running mean): how many messages fill the room for lines."""
        self._records: dict[str, tuple[float, dict[str, Any] | None]] = {}
        self.budgets = BudgetClient(config.common.budgets) if config.common.budgets is not None else None
        # Debits on threads of their own: one waiting for a restarting rate-limit service (budget.DEBIT_WAIT_SECONDS)
        # must not hold the default executor's few threads, which every S3 and SQS call of the worker runs on.
        self._debits = ThreadPoolExecutor(max(1, config.concurrency), thread_name_prefix="budget-debit")
        self._budgets_seen: dict[str, tuple[float, bool]] = {}
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
                if self.tasks:
                    await asyncio.wait(self.tasks, timeout=self.config.common.request_timeout_seconds + 5)
                signals.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await signals
                self._debits.shutdown(wait=False)  # every line that debited has finished, or was given up on
        log.info("worker stopped")

    async def _receive_loop(self, session: aiohttp.ClientSession) -> None:
        while not self.stopping.is_set():
            self.heartbeat()
            room = self.shedder.limit - self.active_lines
            if room <= 0:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.stopping.wait(), IDLE_SECONDS)
                continue
            # A message holds several lines: ask for as many messages as fill the room (at least one).
            count = max(1, min(RECEIVE_MAX, math.floor(room / self.lines_per_message)))
            try:
                messages = await asyncio.to_thread(self._receive, count)
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
                    log.warning("message %s is not a batch message; leaving it to the DLQ", raw.get("MessageId"))
                    continue
                self.lines_per_message = 0.8 * self.lines_per_message + 0.2 * len(delivery.lines)
                task = asyncio.create_task(self._handle(session, delivery))
                self.tasks.add(task)
                task.add_done_callback(self.tasks.discard)

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

    def _budget_left(self, owner: str) -> bool:
        """Whether ``owner``'s shared monthly budget has tokens left (``BudgetClient.check``: fails open)."""
        assert self.budgets is not None
        cached = self._budgets_seen.get(owner)
        if cached and time.monotonic() - cached[0] < BUDGET_CACHE_SECONDS:
            return cached[1]
        left = self.budgets.check(owner)
        self._budgets_seen[owner] = (time.monotonic(), left)
        return left

    async def _handle(self, session: aiohttp.ClientSession, delivery: Delivery) -> None:
        self.active_lines += len(delivery.lines)
        try:
            await self._process(session, delivery)
        except Exception:
            # S3 or SQS trouble: the message comes back after its visibility timeout and its unanswered lines
            # are tried again.
            metrics.WORKER_ERRORS.labels(reason="s3").inc()
            log.warning("message of %s: storing failed; it will be redelivered", delivery.batch_id, exc_info=True)
        finally:
            self.active_lines -= len(delivery.lines)

    async def _process(self, session: aiohttp.ClientSession, delivery: Delivery) -> None:
        batch_id = delivery.batch_id
        done = await asyncio.gather(
            *(asyncio.to_thread(self.store.line_done, batch_id, x.line) for x in delivery.lines)
        )
        todo = [x for x, finished in zip(delivery.lines, done, strict=True) if not finished]
        metrics.REQUESTS.labels(status="duplicate").inc(len(delivery.lines) - len(todo))
        if not todo:
            await self._delete(delivery)
            return
        record = await asyncio.to_thread(self._record, delivery.owner, batch_id)
        if record is None:
            # A record outlives its messages (retention: the window + a day; records: the lifecycle's 30 days), so
            # a missing one is a misconfigured key or grant: the message is kept for the DLQ, never dropped.
            metrics.WORKER_ERRORS.labels(reason="s3").inc()
            log.warning(
                "batch %s has no record; its message goes back (and to the DLQ after the receive limit)", batch_id
            )
            await self._visibility(delivery, self.config.retry_delay_seconds)
            return
        batch = record["batch"]
        if batch["status"] in ("cancelling", "cancelled") or time.time() >= batch["expires_at"]:
            status = "cancelled" if batch["status"] in ("cancelling", "cancelled") else "expired"
            code, message = CANCELLED if status == "cancelled" else EXPIRED
            for line in todo:
                result = objects.error_line(
                    batch_id=batch_id, line=line.line, custom_id=line.custom_id, code=code, message=message
                )
                await self._write(batch_id, line, result, failed=True, status=status)
            await self._delete(delivery)
            return
        if self.budgets is not None and not await asyncio.to_thread(self._budget_left, delivery.owner):
            # Spent since the submission was admitted (interactive answers, other batches): the rest of the batch is
            # refused line by line, as the edge refuses the client's next request.
            code, message = spent_error()
            for line in todo:
                result = objects.error_line(
                    batch_id=batch_id, line=line.line, custom_id=line.custom_id, code=code, message=message
                )
                await self._write(batch_id, line, result, failed=True, status="budget")
            await self._delete(delivery)
            return
        keeper = asyncio.create_task(self._keep_invisible(delivery))
        try:
            outcomes = await asyncio.gather(*(self._gated_call(session, delivery, line) for line in todo))
        finally:
            keeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await keeper
        last_try = delivery.receives >= self.limits.max_receives
        retry = False
        for line, outcome in zip(todo, outcomes, strict=True):
            if outcome.retriable and not last_try:
                retry = True
                metrics.REQUESTS.labels(status="retried").inc()
                log.info("line %s of %s: %s (receive %d of %d); retrying", line.line, batch_id, outcome.reason,
                         delivery.receives, self.limits.max_receives)  # fmt: skip
                continue
            if outcome.retriable:
                log.warning("line %s of %s: %s on the last allowed receive: error file, and its message to the DLQ",
                            line.line, batch_id, outcome.reason)  # fmt: skip
            failed = not objects.is_success(outcome.result)
            await self._write(batch_id, line, outcome.result, failed=failed, status="failed" if failed else "completed",
                              owner=delivery.owner)  # fmt: skip
        if retry:
            await self._visibility(delivery, self.config.retry_delay_seconds)
        elif last_try and any(o.retriable for o in outcomes):
            # Kept, and visible again at once: the redrive policy moves it to the DLQ on its next receive rather
            # than after another whole visibility timeout.
            await self._visibility(delivery, 0)
        else:
            await self._delete(delivery)

    async def _write(
        self, batch_id: str, line: Line, result: dict[str, Any], *, failed: bool, status: str, owner: str | None = None
    ) -> None:
        written = await asyncio.to_thread(self.store.write_line_once, batch_id, line.line, result, failed=failed)
        metrics.REQUESTS.labels(status=status if written else "duplicate").inc()
        if written and owner is not None:
            counts = usage.record(owner, result)  # once per line: the exact usage, for the submitting client
            if counts is not None and self.budgets is not None:
                # Once per written line too: the shared monthly budget, at the batch weight.
                await asyncio.get_running_loop().run_in_executor(self._debits, self.budgets.debit, owner, counts)

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

    async def _keep_invisible(self, delivery: Delivery) -> None:
        """While its lines wait for the gate or the server, the message stays hidden: its visibility is renewed
        every half timeout (a killed worker renews nothing, so its message reappears within one timeout)."""
        period = max(1.0, self.limits.visibility_timeout / 2)
        while True:
            await asyncio.sleep(period)
            try:
                await self._visibility(delivery, self.limits.visibility_timeout)
            except Exception as err:
                metrics.WORKER_ERRORS.labels(reason="sqs").inc()
                log.warning("renewing the visibility of a message of %s failed (%s)", delivery.batch_id, err)

    async def _gated_call(self, session: aiohttp.ClientSession, delivery: Delivery, line: Line) -> _Outcome:
        while self.calls >= self.shedder.limit and not self.stopping.is_set():
            await asyncio.sleep(IDLE_SECONDS / 4)
        self.calls += 1
        metrics.IN_FLIGHT.set(self.calls)
        try:
            return await self._call(session, delivery, line)
        finally:
            self.calls -= 1
            metrics.IN_FLIGHT.set(self.calls)

    async def _call(self, session: aiohttp.ClientSession, delivery: Delivery, line: Line) -> _Outcome:
        batch_id = delivery.batch_id
        url = self.config.serving_url + delivery.url
        timeout = aiohttp.ClientTimeout(total=self.config.common.request_timeout_seconds)
        started = time.monotonic()
        try:
            async with session.post(url, json=line.body, headers=self.headers(), timeout=timeout) as response:
                raw = await response.read()
                status = response.status
                request_id = response.headers.get("x-request-id", objects.request_id(batch_id, line.line))
        except (TimeoutError, aiohttp.ClientError, OSError) as err:
            metrics.WORKER_ERRORS.labels(reason="serving").inc()
            timed_out = isinstance(err, TimeoutError)
            reason = "timed out" if timed_out else f"{type(err).__name__}: {err}"
            result = objects.error_line(
                batch_id=batch_id, line=line.line, custom_id=line.custom_id,
                code="request_timeout" if timed_out else "server_unreachable", message=f"the serving endpoint {reason}",
            )  # fmt: skip
            return _Outcome(result, retriable=True, reason=reason)
        finally:
            metrics.REQUEST_SECONDS.observe(time.monotonic() - started)
        try:
            body: Any = json.loads(raw)
        except ValueError:
            text = raw[:1000].decode("utf-8", "replace")
            body = {"error": {"message": text, "type": "server_error", "param": None, "code": None}}
        result = objects.response_line(
            batch_id=batch_id,
            line=line.line,
            custom_id=line.custom_id,
            status_code=status,
            request_id_=request_id,
            body=body,
        )
        retriable = status >= 500 or status in RETRIABLE_STATUS
        if retriable:
            metrics.WORKER_ERRORS.labels(reason="serving").inc()
        return _Outcome(result, retriable=retriable, reason=f"HTTP {status}")
