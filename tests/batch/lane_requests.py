"""Batch input files for the lane's tests, and reading their results back."""

from __future__ import annotations

import io
import json
import time
from typing import Any

POLL_SECONDS = 0.5


def chat_line(
    index: int, *, model: str = "stand-in", max_tokens: int = 8, seed: int = 7, content: str | None = None
) -> dict[str, Any]:
    return {
        "custom_id": f"req-{index:05d}",
        "method": "POST",
        "url": "/v1/chat/completions",
        "body": {
            "model": model,
            "messages": [{"role": "user", "content": content or f"Summarise ticket number {index} in a few words."}],
            "max_tokens": max_tokens,
            "seed": seed,
            "temperature": 0.7,
        },
    }


def jsonl(lines: list[dict[str, Any]]) -> io.BytesIO:
    data = io.BytesIO("".join(json.dumps(line) + "\n" for line in lines).encode())
    data.name = "requests.jsonl"
    return data


def submit(client: Any, lines: list[dict[str, Any]]) -> Any:
    uploaded = client.files.create(file=jsonl(lines), purpose="batch")
    return client.batches.create(input_file_id=uploaded.id, endpoint="/v1/chat/completions", completion_window="24h")


def wait_finished(client: Any, batch_id: str, timeout: float) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        batch = client.batches.retrieve(batch_id)
        if batch.status in ("completed", "failed", "expired", "cancelled"):
            return batch
        assert time.monotonic() < deadline, (
            f"batch {batch_id} still {batch.status} after {timeout:.0f} s: {batch.request_counts}"
        )
        time.sleep(POLL_SECONDS)


def file_lines(client: Any, file_id: str | None) -> list[dict[str, Any]]:
    if file_id is None:
        return []
    return [json.loads(line) for line in client.files.content(file_id).read().decode().splitlines()]
