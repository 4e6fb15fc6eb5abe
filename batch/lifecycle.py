"""A batch from submission to its output files: the state changes the API and its monitor loop make.

validating -> in_progress -> finalizing -> completed | expired | cancelled, or validating -> failed (a bad
input file: ``errors`` names the lines). Every change is a read-modify-write of the batch record guarded
by its ETag (:func:`update`), so API replicas may race. The workers never change a record: they only
write line results once, and read the record to skip cancelled or expired work.

Finishing does not depend on the queue draining: past ``expires_at`` (the completion window) the monitor
writes every line still missing as ``batch_expired``, and on cancel as ``batch_cancelled``, both into the
error file. That also finishes a line whose message went to the dead-letter queue without a result (a
worker killed on the last allowed receive).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from . import objects, queue
from .input_file import Parsed, Request, parse
from .store import Conflict, Record, Store

log = logging.getLogger(__name__)

UPDATE_ATTEMPTS = 20
STUCK_VALIDATING_SECONDS = 120
"""A batch still validating this long after its creation lost its API replica while queueing: the monitor
queues the lines that have no result yet (a line queued twice is still written once)."""


S3_PARALLEL = 16
"""S3 requests under way at once when a monitor step writes or reads every line of a batch (one request per
line; S3 serves thousands per second per prefix, a serial loop would take minutes for 50,000 lines)."""


def _parallel(fn: Callable[[Any], Any], items: Iterable[Any]) -> list[Any]:
    """``[fn(x) for x in items]`` with S3_PARALLEL threads, in order; the first exception is raised."""
    with ThreadPoolExecutor(max_workers=S3_PARALLEL) as pool:
        return list(pool.map(fn, items))


def now() -> int:
    return int(time.time())


@dataclass(frozen=True)
class Progress:
    total: int
    done: int
    failed: int


def update(store: Store, owner: str, batch_id: str, change: Callable[[dict[str, Any]], bool]) -> dict[str, Any] | None:
    """Apply ``change`` to the stored record (it returns False to leave it as is); None if there is none."""
    for _attempt in range(UPDATE_ATTEMPTS):
        record = store.batch(owner, batch_id)
        if record is None:
            return None
        data = record.data
        if not change(data):
            return data
        try:
            store.put_json(store.batch_key(owner, batch_id), data, if_match=record.etag)
        except Conflict:
            continue
        return data
    raise RuntimeError(f"batch {batch_id}: the record kept changing under {UPDATE_ATTEMPTS} updates")


def progress(store: Store, record: dict[str, Any]) -> Progress:
    batch = record["batch"]
    if batch["status"] in objects.TERMINAL:
        counts = batch["request_counts"]
        return Progress(counts["total"], counts["completed"] + counts["failed"], counts["failed"])
    done = len(store.done_lines(batch["id"]))
    return Progress(record["lines"], done, store.failed_count(batch["id"]))


def public(store: Store, record: dict[str, Any]) -> dict[str, Any]:
    """The Batch object as the API returns it: live request counts while it runs."""
    batch = dict(record["batch"])
    if batch["status"] not in objects.TERMINAL and batch["status"] != "validating":
        counts = progress(store, record)
        batch["request_counts"] = {
            "total": counts.total,
            "completed": counts.done - counts.failed,
            "failed": counts.failed,
        }
    return batch


def create(
    store: Store, sqs: Any, queue_url: str, *, owner: str, batch: dict[str, Any], parsed: Parsed, lines_per_message: int
) -> dict[str, Any]:
    """Store the batch, queue its lines, and return its record (status in_progress, or failed with errors)."""
    record = {
        "batch": batch,
        "owner": owner,
        "lines": len(parsed.requests),
        "estimated_tokens": parsed.estimated_tokens,
        "lines_per_message": lines_per_message,
    }
    key = store.batch_key(owner, batch["id"])
    if parsed.errors:
        batch.update(
            status="failed", failed_at=now(), errors={"object": "list", "data": [e.as_dict() for e in parsed.errors]}
        )
        store.put_json(key, record, if_none_match=True)
        return record
    batch["request_counts"] = {"total": len(parsed.requests), "completed": 0, "failed": 0}
    batch["model"] = parsed.requests[0].body.get("model")
    store.put_json(key, record, if_none_match=True)
    queue.send(sqs, queue_url, batch["id"], owner, parsed.requests, lines_per_message=lines_per_message)

    def start(data: dict[str, Any]) -> bool:
        if data["batch"]["status"] != "validating":
            return False
        data["batch"].update(status="in_progress", in_progress_at=now())
        return True

    return update(store, owner, batch["id"], start) or record


def cancel(store: Store, owner: str, batch_id: str) -> dict[str, Any] | None:
    def change(data: dict[str, Any]) -> bool:
        if data["batch"]["status"] not in ("validating", "in_progress"):
            return False
        data["batch"].update(status="cancelling", cancelling_at=now())
        return True

    return update(store, owner, batch_id, change)


def _write_missing(store: Store, record: dict[str, Any], done: set[int], code: str, message: str) -> None:
    """Error lines for every line without a result (the input file gives their custom_ids)."""
    batch = record["batch"]
    missing = [r for r in input_requests(store, record) if r.line not in done]

    def write(request: Request) -> None:
        line = objects.error_line(
            batch_id=batch["id"], line=request.line, custom_id=request.custom_id, code=code, message=message
        )
        store.write_line_once(batch["id"], request.line, line, failed=True)

    _parallel(write, missing)


def input_requests(store: Store, record: dict[str, Any]) -> list[Request]:
    batch = record["batch"]
    meta = store.file(record["owner"], batch["input_file_id"])
    found = store.get(meta["key"]) if meta else None
    if found is None:
        raise RuntimeError(f"batch {batch['id']}: its input file {batch['input_file_id']} is gone")
    # Already validated at creation; parse again only to recover each line's custom_id and body.
    return parse(found[0], endpoint=batch["endpoint"], max_requests=10**9, default_max_tokens=0).requests


EXPIRED = ("batch_expired", "This request could not be executed before the completion window expired.")
CANCELLED = ("batch_cancelled", "This request was not executed: the batch was cancelled.")


def advance(store: Store, sqs: Any, queue_url: str, owner: str, batch_id: str) -> dict[str, Any] | None:
    """One monitor step for an open batch: requeue a stuck submission, expire or cancel what is left, and
    finalize once every line has a result. Returns the record as it now stands."""
    record = store.batch(owner, batch_id)
    if record is None:
        return None
    data = record.data
    batch = data["batch"]
    status = batch["status"]
    if status == "validating":
        if now() - batch["created_at"] < STUCK_VALIDATING_SECONDS:
            return data
        done = store.done_lines(batch_id)
        missing = [r for r in input_requests(store, data) if r.line not in done]
        queue.send(sqs, queue_url, batch_id, owner, missing, lines_per_message=data.get("lines_per_message", 1))

        def start(d: dict[str, Any]) -> bool:
            if d["batch"]["status"] != "validating":
                return False
            d["batch"].update(status="in_progress", in_progress_at=now())
            return True

        return update(store, owner, batch_id, start)
    if status in ("in_progress", "cancelling"):
        done = store.done_lines(batch_id)
        outcome = "cancelled" if status == "cancelling" else "completed"
        if len(done) < data["lines"] and status == "cancelling":
            _write_missing(store, data, done, *CANCELLED)
        elif len(done) < data["lines"] and now() >= batch["expires_at"]:
            _write_missing(store, data, done, *EXPIRED)
            outcome = "expired"
        elif len(done) < data["lines"]:
            return data
        if len(store.done_lines(batch_id)) < data["lines"]:
            return data

        def finalizing(d: dict[str, Any]) -> bool:
            if d["batch"]["status"] not in ("in_progress", "cancelling"):
                return False
            d["batch"].update(status="finalizing", finalizing_at=now())
            d["outcome"] = outcome
            return True

        data = update(store, owner, batch_id, finalizing) or data
    if data["batch"]["status"] == "finalizing":
        return finalize(store, owner, data)
    return data


def finalize(store: Store, owner: str, record: dict[str, Any]) -> dict[str, Any]:
    """Assemble the output and error files in input order and close the batch. Repeatable: every write is
    derived from the stored results, so a replica that dies half-way is simply run again."""
    batch = record["batch"]
    batch_id = batch["id"]
    results = _parallel(lambda line: json.loads(store.line_result(batch_id, line)), range(record["lines"]))
    ok = [r for r in results if objects.is_success(r)]
    failed = [r for r in results if not objects.is_success(r)]
    created = now()
    files = {}
    for kind, lines in (("output", ok), ("errors", failed)):
        if not lines:
            continue
        content = b"".join(
            json.dumps(line, separators=(",", ":"), ensure_ascii=False).encode() + b"\n" for line in lines
        )
        key = store.assembled_key(batch_id, kind)
        store.put(key, content)
        file_id = objects.output_file_id(batch_id, kind)
        meta = objects.file_object(
            file_id=file_id, filename=f"{batch_id}_{kind}.jsonl", size=len(content), created_at=created,
            purpose=objects.OUTPUT_PURPOSE, expires_at=None,
        )  # fmt: skip
        store.put_json(store.file_meta_key(owner, file_id), {**meta, "key": key})
        files[kind] = file_id
    outcome = record.get("outcome", "completed")

    def close(d: dict[str, Any]) -> bool:
        if d["batch"]["status"] != "finalizing":
            return False
        d["batch"].update(
            status=outcome,
            output_file_id=files.get("output"),
            error_file_id=files.get("errors"),
            request_counts={"total": len(results), "completed": len(ok), "failed": len(failed)},
            usage=objects.usage_of(ok),
        )
        d["batch"][f"{outcome}_at"] = now()
        return True

    closed = update(store, owner, batch_id, close) or record
    log.info("batch %s %s: %d lines, %d failed", batch_id, closed["batch"]["status"], len(results), len(failed))
    return closed


def open_batches(store: Store) -> list[Record]:
    """Every stored record (terminal ones included; callers filter)."""
    found = []
    for owner, batch_id in store.batch_keys():
        record = store.batch(owner, batch_id)
        if record is not None:
            found.append(record)
    return found
