"""Request bodies for Triton and OpenAI, size draws, structured requests, and stream event parsing."""

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
    }
    return LoadConfig(**{**values, **overrides})


def test_draws_stay_within_the_clipped_distribution_and_follow_the_mean():
    rng = random.Random(1)
    dist = SizeDistribution(mean=100, spread=20)
    values = [draw(dist, rng) for _ in range(4000)]
    assert min(values) >= 1 and max(values) <= 160
    assert abs(sum(values) / len(values) - 100) < 2
    assert draw(SizeDistribution(mean=7), rng) == 7


def test_triton_request_streams_from_generate_stream():
    planned = plan_request(config(), random.Random(0))
    assert planned.path == "/v2/models/ensemble/generate_stream"
    assert planned.body["stream"] is True and planned.body["max_tokens"] == planned.max_tokens
    assert 1 <= len(planned.body["text_input"].split()) <= 35


def test_structured_share_mixes_schema_guided_requests():
    rng = random.Random(3)
    plans = [plan_request(config(structured_share=0.3), rng) for _ in range(400)]
    structured = [p for p in plans if p.kind == "structured"]
    assert 80 < len(structured) < 160
    body = structured[0].body
    assert body["guided_decoding_guide_type"] == "json_schema"
    assert json.loads(body["guided_decoding_guide"]) == ANSWER_SCHEMA
    assert structured[0].max_tokens >= STRUCTURED_MAX_TOKENS


def test_openai_request_and_structured_response_format():
    rng = random.Random(0)
    planned = plan_request(config(protocol="openai", model="llama", structured_share=1.0), rng)
    assert planned.path == "/v1/chat/completions"
    assert planned.body["model"] == "llama" and planned.body["stream"] is True
    assert planned.body["response_format"]["json_schema"]["schema"] == ANSWER_SCHEMA


def test_stream_events_of_both_protocols():
    assert parse_event("triton", b' {"text_output": "hi"}').text == "hi"
    assert parse_event("triton", b'{"error": "model not ready"}').error == "model not ready"
    assert parse_event("triton", b"not json").error
    chunk = {"choices": [{"delta": {"content": "yo"}}]}
    assert parse_event("openai", json.dumps(chunk).encode()).text == "yo"
    assert parse_event("openai", b'{"choices": [], "usage": {"completion_tokens": 12}}').tokens == 12
    assert parse_event("openai", b"[DONE]").done
    assert parse_event("openai", b'{"error": {"message": "rate limited"}}').error == "rate limited"


def test_structured_answers_are_checked_against_the_schema():
    assert structured_problem('{"answer": "a", "confidence": 0.5, "tags": ["x"]}') is None
    assert "missing" in structured_problem('{"answer": "a", "confidence": 0.5}')
    assert "not JSON" in structured_problem('{"answer": "a", "conf')
