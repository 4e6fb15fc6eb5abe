"""OpenAI chat-completion request bodies, size draws, structured requests, and stream event parsing; the retired
Triton protocol refused naming what replaced it."""

from __future__ import annotations

import json
import random

from inference_platform.loadgen.config import LoadConfig, Shape, SizeDistribution
from inference_platform.loadgen.requests import (
    STRUCTURED_MAX_TOKENS,
    draw,
    parse_event,
    plan_request,
    structured_problem,
)
from inference_platform.loadgen.structured import ANSWER_SCHEMA


def config(**overrides):
    values = {
        "url": "http://127.0.0.1:8000",
        "shape": Shape(kind="concurrency"),
        "max_requests": 10,
        "duration_s": 5.0,
        "isl": SizeDistribution(mean=20, spread=5),
        "osl": SizeDistribution(mean=30, spread=10),
        "model": "llama",
    }
    return LoadConfig(**{**values, **overrides})


def test_draws_stay_within_the_clipped_distribution_and_follow_the_mean():
    rng = random.Random(1)
    dist = SizeDistribution(mean=100, spread=20)
    values = [draw(dist, rng) for _ in range(4000)]
    assert min(values) >= 1 and max(values) <= 160
    assert abs(sum(values) / len(values) - 100) < 2
    assert draw(SizeDistribution(mean=7), rng) == 7


def test_a_request_streams_a_chat_completion_with_usage():
    planned = plan_request(config(), random.Random(0))
    assert planned.path == "/v1/chat/completions" and planned.kind == "plain"
    body = planned.body
    assert body["model"] == "llama" and body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert body["max_tokens"] == planned.max_tokens and "response_format" not in body
    assert 1 <= len(body["messages"][0]["content"].split()) <= 35


def test_structured_share_mixes_schema_constrained_requests():
    rng = random.Random(3)
    plans = [plan_request(config(structured_share=0.3), rng) for _ in range(400)]
    structured = [p for p in plans if p.kind == "structured"]
    assert 80 < len(structured) < 160
    fmt = structured[0].body["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["schema"] == ANSWER_SCHEMA
    assert structured[0].max_tokens >= STRUCTURED_MAX_TOKENS


def test_the_triton_protocol_is_refused_naming_its_replacement():
    (problem,) = config(protocol="triton").problems()
    assert problem.startswith("--protocol: got 'triton', which is retired; use the OpenAI API (openai)")
    assert config(protocol="grpc").problems() == ["--protocol: got 'grpc'; expected one of openai"]
    assert config().problems() == []


def test_stream_events():
    chunk = {"choices": [{"delta": {"content": "yo"}}]}
    assert parse_event(json.dumps(chunk).encode()).text == "yo"
    assert parse_event(b' {"choices": [{"text": "hi"}]}').text == "hi"
    assert parse_event(b'{"choices": [], "usage": {"completion_tokens": 12}}').tokens == 12
    assert parse_event(b"[DONE]").done
    assert parse_event(b'{"error": {"message": "rate limited"}}').error == "rate limited"
    assert parse_event(b"not json").error


def test_structured_answers_are_checked_against_the_schema():
    assert structured_problem('{"answer": "a", "confidence": 0.5, "tags": ["x"]}') is None
    assert "missing" in structured_problem('{"answer": "a", "confidence": 0.5}')
    assert "not JSON" in structured_problem('{"answer": "a", "conf')
