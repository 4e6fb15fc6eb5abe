"""The OpenAI objects the lane stores and returns: FileObject, Batch, error bodies, output/error lines.

Shapes as the pinned ``openai`` client reads them (``openai/types/file_object.py``, ``batch.py``,
``batch_request_counts.py``, ``batch_error.py``, ``batch_usage.py``) and OpenAI's per-line
``BatchRequestOutput`` (``{id, custom_id, response: {status_code, request_id, body} | null, error: {code,
message} | null}``); ``tests/batch/test_objects.py`` parses them with the client's own models.
"""

from __future__ import annotations

import hashlib
import secrets
from typing import Any

OPEN = ("validating", "in_progress", "finalizing", "cancelling")
TERMINAL = ("failed", "completed", "expired", "cancelled")
STATUSES = OPEN + TERMINAL
OUTPUT_PURPOSE = "batch_output"


def new_file_id() -> str:
    return f"file-{secrets.token_hex(12)}"


def new_batch_id() -> str:
    return f"batch_{secrets.token_hex(12)}"


def output_file_id(batch_id: str, kind: str) -> str:
    """``file-<batch hex>-output`` / ``-errors``: derived, so a repeated finalize writes the same objects."""
    return f"file-{batch_id.removeprefix('batch_')}-{kind}"


def request_id(batch_id: str, line: int) -> str:
    """The output line's id: the same for every attempt at the line, so any winner writes the same line."""
    return "batch_req_" + hashlib.sha256(f"{batch_id}:{line}".encode()).hexdigest()[:24]


def error_body(message: str, *, type_: str = "invalid_request_error", code: str | None = None,
               param: str | None = None) -> dict[str, Any]:  # fmt: skip
    return {"error": {"message": message, "type": type_, "param": param, "code": code}}


def file_object(*, file_id: str, filename: str, size: int, created_at: int, purpose: str,
                expires_at: int | None) -> dict[str, Any]:  # fmt: skip
    return {
        "id": file_id,
        "object": "file",
        "bytes": size,
        "created_at": created_at,
        "filename": filename,
        "purpose": purpose,
        "status": "processed",
        "expires_at": expires_at,
        "status_details": None,
    }


def batch_object(*, batch_id: str, endpoint: str, input_file_id: str, completion_window: str, created_at: int,
                 expires_at: int, metadata: dict[str, str] | None) -> dict[str, Any]:  # fmt: skip
    return {
        "id": batch_id,
        "object": "batch",
        "endpoint": endpoint,
        "input_file_id": input_file_id,
        "completion_window": completion_window,
        "status": "validating",
        "output_file_id": None,
        "error_file_id": None,
        "errors": None,
        "created_at": created_at,
        "in_progress_at": None,
        "expires_at": expires_at,
        "finalizing_at": None,
        "completed_at": None,
        "failed_at": None,
        "expired_at": None,
        "cancelling_at": None,
        "cancelled_at": None,
        "request_counts": {"total": 0, "completed": 0, "failed": 0},
        "metadata": metadata,
        "model": None,
        "usage": None,
    }


def response_line(*, batch_id: str, line: int, custom_id: str, status_code: int, request_id_: str,
                  body: Any) -> dict[str, Any]:  # fmt: skip
    return {
        "id": request_id(batch_id, line),
        "custom_id": custom_id,
        "response": {"status_code": status_code, "request_id": request_id_, "body": body},
        "error": None,
    }


def error_line(*, batch_id: str, line: int, custom_id: str, code: str, message: str) -> dict[str, Any]:
    return {
        "id": request_id(batch_id, line),
        "custom_id": custom_id,
        "response": None,
        "error": {"code": code, "message": message},
    }


def is_success(result: dict[str, Any]) -> bool:
    """Output file (2xx answer) or error file (an error answer, or no answer)."""
    response = result.get("response")
    if not response:
        return False
    return 200 <= int(response.get("status_code", 0)) < 300


def usage_of(results: list[dict[str, Any]]) -> dict[str, Any]:
    """The batch's ``usage`` from its answers' ``usage`` (prompt/completion tokens, cached prompt tokens)."""
    prompt = completion = cached = 0
    for result in results:
        body = (result.get("response") or {}).get("body")
        usage = body.get("usage") if isinstance(body, dict) else None
        if not isinstance(usage, dict):
            continue
        prompt += int(usage.get("prompt_tokens") or 0)
        completion += int(usage.get("completion_tokens") or 0)
        details = usage.get("prompt_tokens_details")
        if isinstance(details, dict):
            cached += int(details.get("cached_tokens") or 0)
    return {
        "input_tokens": prompt,
        "input_tokens_details": {"cached_tokens": cached},
        "output_tokens": completion,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": prompt + completion,
    }
