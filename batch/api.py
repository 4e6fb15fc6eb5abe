"""The OpenAI Batch API: ``/v1/files`` (upload, list, get, delete, content) and ``/v1/batches`` (create, get,
list, cancel), on aiohttp's server.

Who calls is the gateway's business: it checks the API key and sets the client id header (Envoy Gateway
``apiKeyAuth.forwardClientIDHeader``); this service trusts that header and keeps each client's objects under
its own keys. Per-client quotas on queued requests and queued tokens are checked at ``POST /v1/batches``: over
either, a 429 in OpenAI's error shape, before anything is stored or queued. Errors always have OpenAI's
shape (``{"error": {message, type, param, code}}``), which the official client turns into its typed errors.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import re
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from aiohttp import BodyPartReader, web

from . import lifecycle, metrics, objects
from .budget import BudgetClient
from .budget import period as budget_period
from .config import ApiConfig
from .input_file import parse
from .store import Store

log = logging.getLogger(__name__)

CLIENT_ID = re.compile(r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$")
"""The edge's client ids are lower-case DNS labels; here they are also S3 key segments."""
FILE_EXPIRY_SECONDS = (3600, 2592000)
"""``expires_after.seconds`` bounds (openai file_create_params.py: 1 hour to 30 days)."""
DEFAULT_FILE_EXPIRY_SECONDS = 30 * 24 * 3600
"""OpenAI's default for purpose=batch files: they expire after 30 days."""
METADATA_LIMITS = (16, 64, 512)
"""Batch ``metadata``: at most 16 pairs, keys up to 64 characters, values up to 512 (openai types/batch.py)."""
FILES_LIST_LIMIT = (1, 10000, 10000)
UPLOAD_CHUNK_BYTES = 1024 * 1024
BATCHES_LIST_LIMIT = (1, 100, 20)
"""(min, max, default) of ``limit`` on GET /v1/files and GET /v1/batches (openai file_list_params.py,
batch_list_params.py)."""


class ApiError(Exception):
    def __init__(self, status: int, message: str, *, code: str | None = None, param: str | None = None,
                 type_: str | None = None) -> None:  # fmt: skip
        super().__init__(message)
        self.status = status
        self.body = objects.error_body(
            message, code=code, param=param,
            type_=type_ or ("invalid_request_error" if status < 500 else "server_error"),
        )  # fmt: skip


def _json(data: Any, status: int = 200) -> web.Response:
    return web.json_response(data, status=status, dumps=lambda d: json.dumps(d, ensure_ascii=False))


@web.middleware
async def _errors(
    request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
) -> web.StreamResponse:
    try:
        return await handler(request)
    except ApiError as err:
        return _json(err.body, err.status)
    except web.HTTPRequestEntityTooLarge:
        # aiohttp's exception keeps only its text: the limit is the request's (the application's client_max_size).
        limit = request.client_max_size
        return _json(objects.error_body(f"the upload is larger than {limit} bytes", code="file_too_large"), 413)
    except web.HTTPNotFound:
        return _json(objects.error_body(f"no route {request.method} {request.path}", code="unknown_url"), 404)
    except web.HTTPMethodNotAllowed:
        return _json(
            objects.error_body(f"{request.method} is not allowed on {request.path}", code="method_not_allowed"), 405
        )
    except Exception:
        log.exception("%s %s failed", request.method, request.path)
        return _json(objects.error_body("internal error", type_="server_error"), 500)


class BatchApi:
    def __init__(self, config: ApiConfig, store: Store, sqs: Any) -> None:
        self.config = config
        self.store = store
        self.sqs = sqs
        self._client_locks: dict[str, asyncio.Lock] = {}
        self.budgets = BudgetClient(config.common.budgets) if config.common.budgets is not None else None

    def app(self, extra_routes: Sequence[web.RouteDef] = ()) -> web.Application:
        # The whole multipart body may hold the file plus a few small fields.
        app = web.Application(client_max_size=self.config.max_file_bytes + 64 * 1024, middlewares=[_errors])
        app.add_routes(
            [
                web.post("/v1/files", self.upload),
                web.get("/v1/files", self.list_files),
                web.get("/v1/files/{file_id}", self.get_file),
                web.delete("/v1/files/{file_id}", self.delete_file),
                web.get("/v1/files/{file_id}/content", self.file_content),
                web.post("/v1/batches", self.create_batch),
                web.get("/v1/batches", self.list_batches),
                web.get("/v1/batches/{batch_id}", self.get_batch),
                web.post("/v1/batches/{batch_id}/cancel", self.cancel_batch),
                *extra_routes,
            ]
        )
        return app

    def client(self, request: web.Request) -> str:
        values = request.headers.getall(self.config.client_id_header, [])
        if len(values) != 1:
            raise ApiError(401, "no authenticated client (the gateway sets the client id)", code="missing_client")
        if not CLIENT_ID.match(values[0]):
            raise ApiError(401, "the client id is not a lower-case DNS label", code="invalid_client")
        return values[0]

    # files
    async def upload(self, request: web.Request) -> web.Response:
        client = self.client(request)
        if not request.content_type.startswith("multipart/"):
            raise ApiError(
                400, "upload the file as multipart/form-data (fields file and purpose)", code="invalid_upload"
            )
        fields: dict[str, str] = {}
        content: bytes | None = None
        filename = "upload.jsonl"
        async for part in await request.multipart():
            # A nested multipart part comes as a MultipartReader, which has no name: not a form field.
            if not isinstance(part, BodyPartReader):
                raise ApiError(
                    400, "upload the file as multipart/form-data (fields file and purpose)", code="invalid_upload"
                )
            if part.name == "file":
                filename = part.filename or filename
                content = await self._read_limited(part)
            elif part.name:
                fields[part.name] = await part.text()
        if content is None:
            raise ApiError(400, "the multipart body has no file field", code="missing_file", param="file")
        purpose = fields.get("purpose")
        if purpose != "batch":
            raise ApiError(
                400,
                f"purpose {purpose!r} is not served here; allowed: 'batch'",
                code="invalid_purpose",
                param="purpose",
            )
        expires_in = DEFAULT_FILE_EXPIRY_SECONDS
        if "expires_after[seconds]" in fields or "expires_after[anchor]" in fields:
            expires_in = self._expiry(fields)
        parsed = await asyncio.to_thread(
            parse, content, endpoint=None, max_requests=self.config.max_requests_per_batch,
            default_max_tokens=self.config.max_output_tokens,
        )  # fmt: skip
        if parsed.errors:
            first = parsed.errors[0]
            raise ApiError(400, f"line {first.line}: {first.message}", code=first.code, param=first.param)
        created = lifecycle.now()
        file_id = objects.new_file_id()
        meta = objects.file_object(
            file_id=file_id, filename=filename, size=len(content), created_at=created, purpose="batch",
            expires_at=created + expires_in,
        )  # fmt: skip
        key = self.store.file_content_key(client, file_id)

        def save() -> None:
            self.store.put(key, content)
            self.store.put_json(self.store.file_meta_key(client, file_id), {**meta, "key": key}, if_none_match=True)

        await asyncio.to_thread(save)
        metrics.FILES.labels(purpose="batch").inc()
        return _json(meta)

    async def _read_limited(self, part: Any) -> bytes:
        """The file part, refused past BATCH_MAX_FILE_BYTES while it streams in (aiohttp's client_max_size
        does not bound a multipart body read part by part)."""
        limit = self.config.max_file_bytes
        chunks: list[bytes] = []
        size = 0
        while chunk := await part.read_chunk(UPLOAD_CHUNK_BYTES):
            size += len(chunk)
            if size > limit:
                raise ApiError(
                    413,
                    f"the file is larger than {limit} bytes (BATCH_MAX_FILE_BYTES)",
                    code="file_too_large",
                    param="file",
                )
            chunks.append(chunk)
        return b"".join(chunks)

    @staticmethod
    def _expiry(fields: dict[str, str]) -> int:
        if fields.get("expires_after[anchor]") != "created_at":
            raise ApiError(
                400, "expires_after.anchor must be 'created_at'", code="invalid_expiry", param="expires_after.anchor"
            )
        low, high = FILE_EXPIRY_SECONDS
        raw = fields.get("expires_after[seconds]", "")
        if not raw.isdigit() or not low <= int(raw) <= high:
            raise ApiError(
                400,
                f"expires_after.seconds must be an integer from {low} to {high}",
                code="invalid_expiry",
                param="expires_after.seconds",
            )
        return int(raw)

    async def _file(self, client: str, file_id: str) -> dict[str, Any]:
        meta = await asyncio.to_thread(self.store.file, client, file_id)
        if meta is None:
            raise ApiError(404, f"no file {file_id!r}", code="file_not_found", param="file_id")
        return meta

    async def list_files(self, request: web.Request) -> web.Response:
        client = self.client(request)
        limit = _limit(request, FILES_LIST_LIMIT)
        order = request.query.get("order", "desc")
        if order not in ("asc", "desc"):
            raise ApiError(400, "order must be 'asc' or 'desc'", code="invalid_order", param="order")
        metas = await asyncio.to_thread(self.store.files, client)
        purpose = request.query.get("purpose")
        metas = [m for m in metas if purpose is None or m["purpose"] == purpose]
        metas.sort(key=lambda m: (m["created_at"], m["id"]), reverse=order == "desc")
        return _json(_page([_public_file(m) for m in metas], request.query.get("after"), limit))

    async def get_file(self, request: web.Request) -> web.Response:
        return _json(_public_file(await self._file(self.client(request), request.match_info["file_id"])))

    async def delete_file(self, request: web.Request) -> web.Response:
        client = self.client(request)
        file_id = request.match_info["file_id"]
        meta = await self._file(client, file_id)

        def in_use() -> bool:
            for owner, batch_id in self.store.batch_keys(client):
                record = self.store.batch(owner, batch_id)
                if (
                    record
                    and record.data["batch"]["input_file_id"] == file_id
                    and record.data["batch"]["status"] in objects.OPEN
                ):
                    return True
            return False

        if await asyncio.to_thread(in_use):
            raise ApiError(409, f"file {file_id} is the input of a batch still running", code="file_in_use")

        def remove() -> None:
            if meta["purpose"] == "batch":
                self.store.delete(meta["key"])
            self.store.delete(self.store.file_meta_key(client, file_id))

        await asyncio.to_thread(remove)
        return _json({"id": file_id, "object": "file", "deleted": True})

    async def file_content(self, request: web.Request) -> web.Response:
        meta = await self._file(self.client(request), request.match_info["file_id"])
        found = await asyncio.to_thread(self.store.get, meta["key"])
        if found is None:
            raise ApiError(404, f"the content of {meta['id']} is gone", code="file_not_found")
        return web.Response(body=found[0], content_type="application/octet-stream")

    # batches
    async def create_batch(self, request: web.Request) -> web.Response:
        client = self.client(request)
        try:
            body = await request.json()
        except ValueError:
            raise ApiError(400, "the body is not JSON", code="invalid_json") from None
        if not isinstance(body, dict):
            raise ApiError(400, "the body must be a JSON object", code="invalid_json")
        endpoint = body.get("endpoint")
        if endpoint not in self.config.endpoints:
            raise ApiError(
                400,
                f"endpoint {endpoint!r} is not served; allowed: {', '.join(self.config.endpoints)}",
                code="invalid_endpoint",
                param="endpoint",
            )
        window = self.config.common.completion_window
        if body.get("completion_window") != window:
            raise ApiError(
                400,
                f"completion_window must be {window!r}",
                code="invalid_completion_window",
                param="completion_window",
            )
        metadata = _metadata(body.get("metadata"))
        file_id = body.get("input_file_id")
        if not isinstance(file_id, str):
            raise ApiError(400, "input_file_id is required", code="missing_input_file", param="input_file_id")
        meta = await self._file(client, file_id)
        if meta["purpose"] != "batch":
            raise ApiError(
                400,
                f"file {file_id} was not uploaded with purpose 'batch'",
                code="invalid_input_file",
                param="input_file_id",
            )
        found = await asyncio.to_thread(self.store.get, meta["key"])
        if found is None:
            raise ApiError(404, f"the content of {file_id} is gone", code="file_not_found", param="input_file_id")
        parsed = await asyncio.to_thread(
            parse, found[0], endpoint=endpoint, max_requests=self.config.max_requests_per_batch,
            default_max_tokens=self.config.max_output_tokens,
        )  # fmt: skip
        created = lifecycle.now()
        batch = objects.batch_object(
            batch_id=objects.new_batch_id(), endpoint=endpoint, input_file_id=file_id, completion_window=window,
            created_at=created, expires_at=created + self.config.common.completion_window_hours * 3600, metadata=metadata,
        )  # fmt: skip
        store_it = functools.partial(
            lifecycle.create, self.store, self.sqs, self.config.common.queue_url, owner=client, batch=batch,
            parsed=parsed, lines_per_message=self.config.lines_per_message,
        )  # fmt: skip
        if parsed.errors:
            record = await asyncio.to_thread(store_it)
            metrics.SUBMISSIONS.labels(outcome="invalid").inc()
            return _json(record["batch"])
        lock = self._client_locks.setdefault(client, asyncio.Lock())
        async with lock:
            # One submission of a client at a time in this replica, so two cannot both pass the same headroom.
            await self._check_budget(client)
            await self._check_quota(client, len(parsed.requests), parsed.estimated_tokens)
            record = await asyncio.to_thread(store_it)
        metrics.SUBMISSIONS.labels(outcome="created").inc()
        return _json(await asyncio.to_thread(lifecycle.public, self.store, record))

    async def _check_budget(self, client: str) -> None:
        """A client whose monthly token budget is spent (the edge's counter, shared with this lane) is refused
        before anything is stored or queued."""
        if self.budgets is None or await asyncio.to_thread(self.budgets.check, client):
            return
        metrics.QUOTA_REJECTIONS.labels(client=client, kind="budget").inc()
        metrics.SUBMISSIONS.labels(outcome="over_quota").inc()
        raise ApiError(
            429,
            f"client {client!r} has spent its monthly token budget for {budget_period()} (interactive and batch "
            "tokens together); batches are refused until the month turns (00:00 UTC on the 1st).",
            # OpenAI's code for a spent quota, as the edge's 429 and the workers' error file say it.
            code="insufficient_quota", type_="insufficient_quota", param="tokens_per_month",
        )  # fmt: skip

    async def _check_quota(self, client: str, requests: int, tokens: int) -> None:
        def queued() -> tuple[int, int]:
            total_requests = total_tokens = 0
            for owner, batch_id in self.store.batch_keys(client):
                record = self.store.batch(owner, batch_id)
                if record is None or record.data["batch"]["status"] not in objects.OPEN or not record.data["lines"]:
                    continue
                progress = lifecycle.progress(self.store, record.data)
                left = progress.total - progress.done
                total_requests += left
                total_tokens += record.data["estimated_tokens"] * left // progress.total
            return total_requests, total_tokens

        queued_requests, queued_tokens = await asyncio.to_thread(queued)
        quota = self.config.quota(client)
        for kind, queued_now, new, cap in (
            ("requests", queued_requests, requests, quota.queued_requests),
            ("tokens", queued_tokens, tokens, quota.queued_tokens),
        ):
            if queued_now + new > cap:
                metrics.QUOTA_REJECTIONS.labels(client=client, kind=kind).inc()
                metrics.SUBMISSIONS.labels(outcome="over_quota").inc()
                raise ApiError(
                    429,
                    f"client {client!r} would have {queued_now + new} queued {kind} (this batch {new}, already queued "
                    f"{queued_now}); its quota is {cap}. Wait for its batches to finish or cancel one.",
                    code="batch_quota_exceeded", type_="rate_limit_exceeded", param=f"queued_{kind}",
                )  # fmt: skip

    async def _record(self, client: str, batch_id: str) -> dict[str, Any]:
        record = await asyncio.to_thread(self.store.batch, client, batch_id)
        if record is None:
            raise ApiError(404, f"no batch {batch_id!r}", code="batch_not_found", param="batch_id")
        return record.data

    async def get_batch(self, request: web.Request) -> web.Response:
        record = await self._record(self.client(request), request.match_info["batch_id"])
        return _json(await asyncio.to_thread(lifecycle.public, self.store, record))

    async def list_batches(self, request: web.Request) -> web.Response:
        client = self.client(request)
        limit = _limit(request, BATCHES_LIST_LIMIT)

        def load() -> list[dict[str, Any]]:
            records = [self.store.batch(o, b) for o, b in self.store.batch_keys(client)]
            return [lifecycle.public(self.store, r.data) for r in records if r is not None]

        batches = await asyncio.to_thread(load)
        batches.sort(key=lambda b: (b["created_at"], b["id"]), reverse=True)
        return _json(_page(batches, request.query.get("after"), limit))

    async def cancel_batch(self, request: web.Request) -> web.Response:
        client = self.client(request)
        batch_id = request.match_info["batch_id"]
        await self._record(client, batch_id)
        record = await asyncio.to_thread(lifecycle.cancel, self.store, client, batch_id)
        assert record is not None
        status = record["batch"]["status"]
        if status not in ("cancelling", "cancelled"):
            raise ApiError(
                409,
                f"batch {batch_id} is {status}: only a validating or running batch can be cancelled",
                code="invalid_state",
            )
        return _json(await asyncio.to_thread(lifecycle.public, self.store, record))


def _public_file(meta: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in meta.items() if k != "key"}


def _limit(request: web.Request, bounds: tuple[int, int, int]) -> int:
    low, high, default = bounds
    raw = request.query.get("limit")
    if raw is None:
        return default
    if not raw.isdigit() or not low <= int(raw) <= high:
        raise ApiError(400, f"limit must be an integer from {low} to {high}", code="invalid_limit", param="limit")
    return int(raw)


def _page(items: list[dict[str, Any]], after: str | None, limit: int) -> dict[str, Any]:
    if after is not None:
        ids = [i["id"] for i in items]
        items = items[ids.index(after) + 1 :] if after in ids else []
    page = items[:limit]
    return {
        "object": "list",
        "data": page,
        "first_id": page[0]["id"] if page else None,
        "last_id": page[-1]["id"] if page else None,
        "has_more": len(items) > limit,
    }


def _metadata(value: Any) -> dict[str, str] | None:
    if value is None:
        return None
    pairs, key_max, value_max = METADATA_LIMITS
    ok = (
        isinstance(value, dict)
        and len(value) <= pairs
        and all(
            isinstance(k, str) and len(k) <= key_max and isinstance(v, str) and len(v) <= value_max
            for k, v in value.items()
        )
    )
    if not ok:
        raise ApiError(
            400,
            f"metadata: at most {pairs} string pairs, keys up to {key_max} and values up to {value_max} characters",
            code="invalid_metadata",
            param="metadata",
        )
    return dict(value)
