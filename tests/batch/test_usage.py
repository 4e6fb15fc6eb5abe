"""The batch lane's exact usage per submitting client (batch/usage.py, issue 30): what a written result line counts,
and what it does not (errors, answers without a usage, malformed counts)."""

from __future__ import annotations

from inference_platform.batch import objects, usage


def _line(status: int, body: object) -> dict:
    return objects.response_line(batch_id="b", line=1, custom_id="c", status_code=status, request_id_="r", body=body)


def _count(client: str, kind: str) -> float:
    return usage.TOKENS.labels(client=client, model_name="m", kind=kind)._value.get()


def test_an_answered_line_counts_its_usage_for_the_submitting_client():
    body = {
        "model": "m",
        "usage": {"prompt_tokens": 11, "completion_tokens": 5, "prompt_tokens_details": {"cached_tokens": 4}},
    }
    before = {k: _count("acme", k) for k in usage.KINDS}
    assert usage.record("acme", _line(200, body)) == {"prompt": 11, "completion": 5, "cached": 4}
    assert {k: _count("acme", k) - before[k] for k in usage.KINDS} == {"prompt": 11, "completion": 5, "cached": 4}


def test_lines_without_a_usage_count_nothing():
    error = objects.error_line(batch_id="b", line=2, custom_id="c", code="request_timeout", message="x")
    refused = _line(400, {"error": {"message": "no", "type": "invalid_request_error", "param": None, "code": None}})
    odd = _line(200, {"model": "m", "usage": {"prompt_tokens": -1, "completion_tokens": "5"}})
    flag = _line(200, {"model": "m", "usage": {"prompt_tokens": True, "completion_tokens": 1}})
    assert [usage.record("zed", r) for r in (error, refused, odd, flag)] == [None, None, None, None]
