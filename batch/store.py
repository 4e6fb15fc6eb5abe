"""Where the lane keeps its state: one S3 bucket, laid out so that S3's conditional writes do the locking.

- ``<files>/<client>/<file_id>.json`` a FileObject (+ where its bytes are); ``<files>/<client>/<file_id>`` the
  bytes of an upload. Keys carry the client id, so one client can neither list nor read another's files.
- ``<results>batches/<client>/<batch_id>.json`` the batch record, replaced only with ``If-Match`` on the ETag
  it was read with (API replicas race on status changes; the loser re-reads).
- ``<results><batch_id>/lines/<line>.json`` the result of one input line, written once (``If-None-Match: *``):
  a redelivered message finds it taken and is dropped. This, not the queue, makes output lines exactly once.
- ``<results><batch_id>/failed/<line>`` an empty marker per error-file line (``request_counts.failed``).
- ``<results><batch_id>/output.jsonl`` / ``errors.jsonl`` assembled in input order when the batch finishes.

Sources: AWS S3 conditional writes (PutObject ``If-None-Match``/``If-Match``: 412 PreconditionFailed when the
condition fails, 409 ConditionalRequestConflict "you should retry" when another conditional write of the key is
under way; botocore 1.44.8 ``s3/2006-03-01/service-2.json``, pinned in tests/batch/test_upstream_pins.py),
emulated by moto 5.2.5 (``moto/s3/responses.py``), which the tests run.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

LINE_DIGITS = 8
_PRECONDITION_FAILED = "PreconditionFailed"
_CONDITIONAL_CONFLICT = "ConditionalRequestConflict"
CONFLICT_RETRIES = 5
_MISSING_CODES = {"NoSuchKey", "404", "NotFound"}
_FORBIDDEN_CODES = {"AccessDenied", "403", "Forbidden"}
"""S3 answers a missing key with 403, not 404, to a role without s3:ListBucket on the bucket (HeadObject and
GetObject, botocore 1.44.8 s3 model, pinned in tests/batch/test_upstream_pins.py). The lane's keys are only
ever read where the code expects them or their absence, so 403 is read as absent, with one warning naming
the grant that restores 404 (a real permission problem then shows on the writes, which never read as 403)."""


log = logging.getLogger(__name__)


class Conflict(Exception):
    """A conditional write lost: the key exists (If-None-Match) or changed since it was read (If-Match)."""


@dataclass(frozen=True)
class Record:
    data: dict[str, Any]
    etag: str


def line_name(line: int) -> str:
    return f"{line:0{LINE_DIGITS}d}"


class Store:
    def __init__(self, s3: Any, *, bucket: str, files_prefix: str, results_prefix: str, kms_key_id: str | None) -> None:
        self.s3 = s3
        self.bucket = bucket
        self.files_prefix = files_prefix
        self.results_prefix = results_prefix
        self._sse = {"ServerSideEncryption": "aws:kms", "SSEKMSKeyId": kms_key_id} if kms_key_id else {}

    # keys
    def file_meta_key(self, client: str, file_id: str) -> str:
        return f"{self.files_prefix}{client}/{file_id}.json"

    def file_content_key(self, client: str, file_id: str) -> str:
        return f"{self.files_prefix}{client}/{file_id}"

    def batch_key(self, client: str, batch_id: str) -> str:
        return f"{self.results_prefix}batches/{client}/{batch_id}.json"

    def line_key(self, batch_id: str, line: int) -> str:
        return f"{self.results_prefix}{batch_id}/lines/{line_name(line)}.json"

    def failed_key(self, batch_id: str, line: int) -> str:
        return f"{self.results_prefix}{batch_id}/failed/{line_name(line)}"

    def assembled_key(self, batch_id: str, kind: str) -> str:
        return f"{self.results_prefix}{batch_id}/{kind}.jsonl"

    # primitives
    def put(self, key: str, body: bytes, *, if_none_match: bool = False, if_match: str | None = None) -> str:
        extra: dict[str, Any] = dict(self._sse)
        if if_none_match:
            extra["IfNoneMatch"] = "*"
        if if_match is not None:
            extra["IfMatch"] = if_match
        for attempt in range(CONFLICT_RETRIES):
            try:
                response = self.s3.put_object(Bucket=self.bucket, Key=key, Body=body, **extra)
            except ClientError as err:
                code = err.response.get("Error", {}).get("Code")
                if code == _PRECONDITION_FAILED:
                    raise Conflict(key) from None
                if code == _CONDITIONAL_CONFLICT and attempt + 1 < CONFLICT_RETRIES:
                    # Another conditional write of the key was under way: S3 says to retry; the retry then
                    # meets that write's result (412 if it stored the key).
                    time.sleep(0.05 * (attempt + 1))
                    continue
                raise
            return str(response["ETag"])
        raise AssertionError("unreachable")

    def get(self, key: str) -> tuple[bytes, str] | None:
        try:
            response = self.s3.get_object(Bucket=self.bucket, Key=key)
        except ClientError as err:
            if self._absent(err, key):
                return None
            raise
        return response["Body"].read(), str(response["ETag"])

    def exists(self, key: str) -> bool:
        try:
            self.s3.head_object(Bucket=self.bucket, Key=key)
        except ClientError as err:
            if self._absent(err, key):
                return False
            raise
        return True

    _warned = False

    def _absent(self, err: ClientError, key: str) -> bool:
        code = str(err.response.get("Error", {}).get("Code"))
        if code in _FORBIDDEN_CODES and not Store._warned:
            Store._warned = True
            log.warning("S3 answered 403 for %s: read as absent; grant s3:ListBucket on the bucket for 404s", key)
        return code in _MISSING_CODES or code in _FORBIDDEN_CODES

    def keys(self, prefix: str) -> Iterator[str]:
        for page in self.s3.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=prefix):
            for item in page.get("Contents", ()):
                yield str(item["Key"])

    def delete(self, key: str) -> None:
        self.s3.delete_object(Bucket=self.bucket, Key=key)

    def get_json(self, key: str) -> Record | None:
        found = self.get(key)
        return None if found is None else Record(json.loads(found[0]), found[1])

    def put_json(self, key: str, data: dict[str, Any], **conditions: Any) -> str:
        return self.put(key, json.dumps(data, separators=(",", ":"), sort_keys=True).encode(), **conditions)

    # files
    def file(self, client: str, file_id: str) -> dict[str, Any] | None:
        record = self.get_json(self.file_meta_key(client, file_id))
        return None if record is None else record.data

    def files(self, client: str) -> list[dict[str, Any]]:
        prefix = f"{self.files_prefix}{client}/"
        metas = [self.get_json(key) for key in self.keys(prefix) if key.endswith(".json")]
        return [m.data for m in metas if m is not None]

    # batches
    def batch(self, client: str, batch_id: str) -> Record | None:
        return self.get_json(self.batch_key(client, batch_id))

    def batch_keys(self, client: str | None = None) -> Iterator[tuple[str, str]]:
        """(client, batch id) of every stored batch record (of one client, if given)."""
        prefix = f"{self.results_prefix}batches/" + (f"{client}/" if client else "")
        for key in self.keys(prefix):
            owner, name = key[len(f"{self.results_prefix}batches/") :].split("/", 1)
            yield owner, name.removesuffix(".json")

    # results
    def write_line_once(self, batch_id: str, line: int, result: dict[str, Any], *, failed: bool) -> bool:
        """Store a line's result unless one is stored already; False when it was (a redelivery)."""
        try:
            self.put_json(self.line_key(batch_id, line), result, if_none_match=True)
        except Conflict:
            return False
        if failed:
            # After the result: a marker without its result would count a line that is not done. A crash between
            # the two leaves the marker missing; the assembly recounts failures from the results themselves.
            self.put(self.failed_key(batch_id, line), b"")
        return True

    def line_done(self, batch_id: str, line: int) -> bool:
        return self.exists(self.line_key(batch_id, line))

    def done_lines(self, batch_id: str) -> set[int]:
        prefix = f"{self.results_prefix}{batch_id}/lines/"
        return {int(key[len(prefix) :].removesuffix(".json")) for key in self.keys(prefix)}

    def failed_count(self, batch_id: str) -> int:
        return sum(1 for _ in self.keys(f"{self.results_prefix}{batch_id}/failed/"))

    def line_result(self, batch_id: str, line: int) -> bytes:
        found = self.get(self.line_key(batch_id, line))
        if found is None:
            raise KeyError(f"{batch_id} line {line} has no result")
        return found[0]
