"""The batch lane's exact token usage per submitting client (issue 30): each answered line's ``usage`` as the
serving endpoint reported it, counted once, when its result is written (a line retried or answered twice is
written once: ``store.write_line_once``).

``batch_tokens_total{client, model_name, kind}``: ``kind`` is ``prompt``, ``completion`` or ``cached`` (the cached
part of the prompt tokens, OpenAI's ``prompt_tokens_details.cached_tokens``). The workers call the replicas without
the edge, so the serving side counts these tokens under client ``none``; this counter gives them to the client that
submitted the batch, for showback (``inferctl usage``) and its monthly budget.
"""

from __future__ import annotations

from typing import Any

from prometheus_client import Counter

TOKENS = Counter(
    "batch_tokens",
    "Tokens of the batch lane's answered lines (their exact usage), by submitting client, model and kind",
    ["client", "model_name", "kind"],
)
KINDS = ("prompt", "completion", "cached")


def line_usage(result: dict[str, Any]) -> tuple[str, dict[str, int]] | None:
    """(model, {kind: tokens}) of a written result line whose answer carries a usage, else None."""
    response = result.get("response")
    if not isinstance(response, dict) or not 200 <= int(response.get("status_code") or 0) < 300:
        return None
    body = response.get("body")
    if not isinstance(body, dict):
        return None
    usage = body.get("usage")
    if not isinstance(usage, dict):
        return None
    details = usage.get("prompt_tokens_details")
    counts = {
        "prompt": usage.get("prompt_tokens"),
        "completion": usage.get("completion_tokens"),
        "cached": details.get("cached_tokens", 0) if isinstance(details, dict) else 0,
    }
    if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in counts.values()):
        return None
    return str(body.get("model", "")), {k: int(v) for k, v in counts.items() if v is not None}


def record(client: str, result: dict[str, Any]) -> dict[str, int] | None:
    """Count a written line's usage for ``client``; the counts, or None when it carried none."""
    found = line_usage(result)
    if found is None:
        return None
    model, counts = found
    for kind in KINDS:
        TOKENS.labels(client=client, model_name=model, kind=kind).inc(counts[kind])
    return counts
