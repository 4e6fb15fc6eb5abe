"""A Batch API input file: JSONL, one request a line, checked before anything is queued.

Each line is ``{"custom_id": str, "method": "POST", "url": <the batch's endpoint>, "body": {...}}`` (OpenAI's
BatchRequestInput). ``custom_id`` is unique in the file, ``body.model`` is named, ``body.stream`` is not true
(a batch answer is one JSON body). A line whose queue message would pass SQS's 256 KiB limit is refused here,
naming it, instead of failing later in SendMessageBatch.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

MAX_MESSAGE_BYTES = 256 * 1024
"""SQS's message size limit (botocore sqs/2012-11-05 MaximumMessageSize default; AWS raised the maximum to
1 MiB in 2025, but 256 KiB is what a queue created with defaults before then still enforces)."""
MESSAGE_OVERHEAD_BYTES = 512
"""The envelope around a line's request in its message (batch id, owner, line number, custom_id twice)."""
MAX_ERRORS = 100
"""Errors reported per file (``batch.errors.data``); past that the first ones are enough to act on."""
BYTES_PER_TOKEN = 4
"""Queued-token estimate without a tokenizer: ~4 bytes of English text per token (OpenAI's rule of thumb)."""


@dataclass(frozen=True)
class Request:
    line: int
    """0-based line number (also the position in the output file)."""
    custom_id: str
    url: str
    body: dict[str, Any]
    estimated_tokens: int


@dataclass(frozen=True)
class LineError:
    line: int
    """1-based, as shown to the user (OpenAI's BatchError.line)."""
    code: str
    message: str
    param: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"code": self.code, "line": self.line, "message": self.message, "param": self.param}


@dataclass(frozen=True)
class Parsed:
    requests: list[Request]
    errors: list[LineError]

    @property
    def estimated_tokens(self) -> int:
        return sum(r.estimated_tokens for r in self.requests)


def _prompt_text(body: dict[str, Any]) -> str:
    parts: list[str] = []
    messages = body.get("messages")
    if isinstance(messages, list):
        for message in messages:
            content = message.get("content") if isinstance(message, dict) else None
            if isinstance(content, str):
                parts.append(content)
            elif isinstance(content, list):
                parts.extend(str(p.get("text", "")) for p in content if isinstance(p, dict))
    prompt = body.get("prompt")
    if isinstance(prompt, str):
        parts.append(prompt)
    elif isinstance(prompt, list):
        parts.extend(p for p in prompt if isinstance(p, str))
    return "\n".join(parts)


def estimate_tokens(body: dict[str, Any], default_max_tokens: int) -> int:
    """Prompt bytes / 4 rounded up, plus the output the line may ask for."""
    prompt = math.ceil(len(_prompt_text(body).encode("utf-8")) / BYTES_PER_TOKEN)
    limit = body.get("max_completion_tokens", body.get("max_tokens"))
    output = limit if isinstance(limit, int) and not isinstance(limit, bool) and limit > 0 else default_max_tokens
    return prompt + output


def parse(content: bytes, *, endpoint: str | None, max_requests: int, default_max_tokens: int) -> Parsed:
    """Every request of ``content``, or the reasons it cannot run (at most MAX_ERRORS). ``endpoint`` None
    (at upload) skips the url check, which needs the batch's endpoint."""
    errors: list[LineError] = []
    requests: list[Request] = []
    seen: set[str] = set()

    def fail(line: int, code: str, message: str, param: str | None = None) -> None:
        if len(errors) < MAX_ERRORS:
            errors.append(LineError(line + 1, code, message, param))

    try:
        text = content.decode("utf-8")
    except UnicodeDecodeError as err:
        return Parsed([], [LineError(content[: err.start].count(b"\n") + 1, "invalid_file", "the file is not UTF-8")])
    # (physical line number, text) of the non-blank lines: errors name the line as an editor shows it.
    lines = [(number, line) for number, line in enumerate(text.split("\n")) if line.strip()]
    if not lines:
        return Parsed([], [LineError(1, "empty_file", "the file holds no request")])
    if len(lines) > max_requests:
        return Parsed(
            [],
            [
                LineError(
                    max_requests + 1,
                    "too_many_requests",
                    f"at most {max_requests} requests per batch, the file has {len(lines)}",
                )
            ],
        )
    for position, (index, raw) in enumerate(lines):
        if len(raw.encode("utf-8")) + MESSAGE_OVERHEAD_BYTES > MAX_MESSAGE_BYTES:
            fail(
                index, "line_too_large", f"a request may be at most {MAX_MESSAGE_BYTES - MESSAGE_OVERHEAD_BYTES} bytes"
            )
            continue
        try:
            item = json.loads(raw)
        except ValueError:
            fail(index, "invalid_json_line", "not a JSON object")
            continue
        if not isinstance(item, dict):
            fail(index, "invalid_json_line", "not a JSON object")
            continue
        custom_id = item.get("custom_id")
        if not isinstance(custom_id, str) or not custom_id or len(custom_id) > 512:
            fail(index, "invalid_custom_id", "custom_id must be a string of 1 to 512 characters", "custom_id")
            continue
        if custom_id in seen:
            fail(index, "duplicate_custom_id", f"custom_id {custom_id!r} appears more than once", "custom_id")
            continue
        seen.add(custom_id)
        if item.get("method") != "POST":
            fail(index, "invalid_method", "method must be POST", "method")
            continue
        url = item.get("url")
        if not isinstance(url, str) or (endpoint is not None and url != endpoint):
            fail(index, "mismatched_endpoint", f"url must be the batch's endpoint {endpoint or ''}".rstrip(), "url")
            continue
        body = item.get("body")
        if not isinstance(body, dict):
            fail(index, "invalid_body", "body must be a JSON object", "body")
            continue
        if not isinstance(body.get("model"), str) or not body["model"]:
            fail(index, "missing_model", "body.model must name a model", "body.model")
            continue
        if body.get("stream") is True:
            fail(index, "invalid_stream", "body.stream must not be true in a batch", "body.stream")
            continue
        requests.append(Request(position, custom_id, url, body, estimate_tokens(body, default_max_tokens)))
    return Parsed(requests if not errors else [], errors)
