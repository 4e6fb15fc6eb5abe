"""A request's streamed responses that queued up behind a slow send, merged into one before they go to Triton.

Why: every response Triton's HTTP ``generate_stream`` receives is written by a callback it defers to its HTTP thread
with ``evthr_defer``, whose result it ignores (``src/http_server.cc`` ``GenerateRequestClass::InferResponseComplete``,
v2.51.0 to v2.59.1); libevhtp's ``evthr_defer`` returns ``EVTHR_RES_RETRY`` without queuing when that thread's
non-blocking socketpair is full (``thread.c``). On a starved machine, one response per token fills it and a reply ends
a response short (two loaded clean-clone runs lost the last response of most of 16 concurrent streams; the OpenAI
server now says so, ``openai_api.llm_client.LOST_FINAL``). The model's one send thread (``model.py``) is behind
exactly when the machine is: the responses waiting for it are sent as one, so Triton sees fewer under load and
none fewer when idle (what TensorRT-LLM's ``stream_interval`` does at a fixed rate, here only when behind).

A merged response is what the later one says, with the text (and the logprobs, when asked) of both: the text outputs
are each response's new text, the token counts and finish reasons are cumulative (``llm_client`` reads them so).
Errors and cancellations pass through unmerged and end a run.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np

FINAL_FLAG_UNSET = 0


def merge(earlier: dict[str, Any], later: dict[str, Any]) -> dict[str, Any]:
    """One response with ``earlier``'s and ``later``'s new text (per sequence), ``later``'s counts and reasons."""
    out = dict(later)
    out["text_output"] = np.array(
        [a + b for a, b in zip(earlier["text_output"], later["text_output"], strict=True)], dtype=np.object_
    )
    out["finish_reason"] = np.array(
        [b or a for a, b in zip(earlier["finish_reason"], later["finish_reason"], strict=True)], dtype=np.object_
    )
    if "logprobs" in earlier and "logprobs" in later:
        out["logprobs"] = np.array(
            [_join_logprobs(a, b) for a, b in zip(earlier["logprobs"], later["logprobs"], strict=True)],
            dtype=np.object_,
        )
    if "queue_time_s" not in later and "queue_time_s" in earlier:
        out["queue_time_s"] = earlier["queue_time_s"]
    return out


def coalesce(items: Sequence[tuple[Any, Any, int]]) -> list[tuple[Any, Any, int]]:
    """``(sender, payload, flags)`` in send order; a payload is a response's tensors (a dict) or a built response
    (an error, a cancellation). Per sender, in order, a run of tensors whose earlier ones are not final becomes one;
    senders keep their first appearance's order (their requests are independent)."""
    by_sender: dict[int, list[tuple[Any, Any, int]]] = {}
    for sender, payload, flags in items:
        run = by_sender.setdefault(id(sender), [])
        if run and isinstance(payload, dict):
            last_sender, last_payload, last_flags = run[-1]
            if isinstance(last_payload, dict) and last_flags == FINAL_FLAG_UNSET:
                run[-1] = (last_sender, merge(last_payload, payload), flags)
                continue
        run.append((sender, payload, flags))
    return [item for run in by_sender.values() for item in run]


def _join_logprobs(a: bytes, b: bytes) -> bytes:
    first, second = json.loads(a or b"{}"), json.loads(b or b"{}")
    return json.dumps(
        {
            "ids": [*first.get("ids", []), *second.get("ids", [])],
            "top": [*first.get("top", []), *second.get("top", [])],
        },
        separators=(",", ":"),
    ).encode()
