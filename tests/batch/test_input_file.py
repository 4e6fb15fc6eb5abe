"""The input file check: what OpenAI's Batch API requires of a line, named by physical line number."""

from __future__ import annotations

import json

from inference_platform.batch.input_file import MAX_MESSAGE_BYTES, estimate_tokens, parse


def line(custom_id="a", url="/v1/chat/completions", **body):
    body = {"model": "m", "messages": [{"role": "user", "content": "hello there"}], **body}
    return json.dumps({"custom_id": custom_id, "method": "POST", "url": url, "body": body})


def check(*lines, endpoint="/v1/chat/completions", max_requests=100):
    return parse("\n".join(lines).encode(), endpoint=endpoint, max_requests=max_requests, default_max_tokens=50)


def test_a_good_file_gives_every_request_in_order():
    parsed = check(line("a"), "", line("b", max_tokens=7))
    assert [(r.line, r.custom_id) for r in parsed.requests] == [(0, "a"), (1, "b")]
    assert parsed.errors == []
    assert parsed.requests[1].estimated_tokens == 3 + 7  # "hello there" = 11 bytes -> 3, plus max_tokens


def test_each_broken_line_is_named():
    parsed = check(
        line("a"), line("a"), "not json", line("c", url="/v1/embeddings"), line("d", stream=True),
        json.dumps({"custom_id": "e", "method": "GET", "url": "/v1/chat/completions", "body": {"model": "m"}}),
        json.dumps({"custom_id": "f", "method": "POST", "url": "/v1/chat/completions", "body": {}}),
        line("g", messages=[{"role": "user", "content": "x" * MAX_MESSAGE_BYTES}]),
    )  # fmt: skip
    assert parsed.requests == []
    assert [(e.line, e.code) for e in parsed.errors] == [
        (2, "duplicate_custom_id"), (3, "invalid_json_line"), (4, "mismatched_endpoint"), (5, "invalid_stream"),
        (6, "invalid_method"), (7, "missing_model"), (8, "line_too_large"),
    ]  # fmt: skip


def test_the_file_as_a_whole():
    assert [e.code for e in parse(b"\xff\xfe", endpoint=None, max_requests=5, default_max_tokens=1).errors] == [
        "invalid_file"
    ]
    assert [e.code for e in parse(b"\n \n", endpoint=None, max_requests=5, default_max_tokens=1).errors] == [
        "empty_file"
    ]
    assert [e.code for e in check(line("a"), line("b"), max_requests=1).errors] == ["too_many_requests"]
    assert check(line("a", url="/v1/anything"), endpoint=None).errors == []  # the url is checked at create


def test_the_token_estimate_reads_chat_and_completion_prompts():
    assert estimate_tokens({"prompt": "abcdefgh", "max_completion_tokens": 2}, 9) == 2 + 2
    assert estimate_tokens({"messages": [{"content": [{"type": "text", "text": "abcd"}]}]}, 9) == 1 + 9
