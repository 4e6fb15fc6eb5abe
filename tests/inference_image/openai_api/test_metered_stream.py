"""The running usage a stream reports when the edge asks (``serving_contract.USAGE_METER_HEADER``, issue 30): a
comment line before each event that adds tokens and before the last one, only when asked, cumulative, and before an
error event when the engine fails after its first token. The engine is a scripted fake (its updates are what
TritonLlm yields); the path through the real engine and edge is tests/inferctl/serving/test_token_metering_live.py."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from starlette.testclient import TestClient

from inference_platform.catalog.serving_contract import USAGE_COMMENT_PREFIX, USAGE_METER_HEADER, USAGE_METER_RUNNING
from inference_platform.inference_image.openai_api.app import build_app
from inference_platform.inference_image.openai_api.llm_client import EngineError, Update
from inference_platform.inference_image.openai_api.model_files import Prompting
from inference_platform.inference_image.openai_api.requests import parse_completion
from inference_platform.inference_image.openai_api.service import Limits, RequestContext, Service
from inference_platform.inference_image.testing.cpu_llm_api.checkpoint import write_checkpoint
from tests.own_loop import run_on_own_loop

MODEL = "Llama-3.1-8B"


class _Engine:
    """Yields three tokens (cumulative counts, as our model sends them), then fails if told to; ``merged``: the
    last two arrive as one update, as TritonLlm merges the events of one read (issue 27)."""

    fail: bool = False
    merged: bool = False
    service: Service

    async def liveness(self) -> tuple[int, float]:
        return 0, 0.0

    async def close(self) -> None:
        pass

    async def generate(self, inputs: Any, *, request_id: str | None = None) -> AsyncIterator[Update]:
        steps = [("a", 1), ("bc", 3)] if self.merged else [("a", 1), ("b", 2), ("c", 3)]
        for text, n in steps:
            yield Update(deltas=(text,), input_tokens=7, output_tokens=(n,), cached_tokens=2)
            if self.fail and n == 2:
                raise EngineError("boom")
        yield Update(deltas=("",), finish_reasons=("length",), input_tokens=7, output_tokens=(3,), cached_tokens=2)


@pytest.fixture(scope="module")
def engine_and_client(tmp_path_factory):
    engine = _Engine()
    service = Service(
        served_model=MODEL,
        prompting=Prompting(write_checkpoint(tmp_path_factory.mktemp("ckpt"))),
        engine=engine,  # type: ignore[arg-type]
        limits=Limits(max_input_len=64, max_seq_len=128),
        streaming_engine=True,
    )
    engine.service = service  # type: ignore[attr-defined]
    with TestClient(build_app(service), raise_server_exceptions=False) as c:
        yield engine, c


def _stream(client: TestClient, metered: bool, **extra: Any) -> list[str]:
    headers = {USAGE_METER_HEADER: USAGE_METER_RUNNING} if metered else {}
    body = {"model": MODEL, "prompt": "hi", "stream": True, "max_tokens": 3, **extra}
    response = client.post("/v1/completions", json=body, headers=headers)
    assert response.status_code == 200
    return response.text.splitlines()


def _comments(lines: list[str]) -> list[dict[str, int]]:
    return [
        json.loads(line.removeprefix(USAGE_COMMENT_PREFIX)) for line in lines if line.startswith(USAGE_COMMENT_PREFIX)
    ]


def test_a_metered_stream_reports_its_running_usage_before_each_token_and_the_end(engine_and_client):
    engine, client = engine_and_client
    engine.fail = False
    lines = _stream(client, metered=True)
    running = _comments(lines)
    assert [u["completion_tokens"] for u in running] == [1, 2, 3, 3]
    assert all(u["prompt_tokens"] == 7 and u["cached_tokens"] == 2 for u in running)
    assert running[-1]["total_tokens"] == 10
    # Each comment comes right before the event it counts.
    first = lines.index(next(x for x in lines if x.startswith(USAGE_COMMENT_PREFIX)))
    assert lines[first + 1].startswith("data: ")
    # Not asked (a client straight to the server): no comment at all.
    assert _comments(_stream(client, metered=False)) == []


def test_a_merged_update_carries_its_last_running_count(engine_and_client):
    engine, client = engine_and_client
    engine.merged = True
    try:
        lines = _stream(client, metered=True)
    finally:
        engine.merged = False
    assert [u["completion_tokens"] for u in _comments(lines)] == [1, 3, 3]


def test_continuous_usage_is_cumulative_beside_the_running_comments(engine_and_client):
    _, client = engine_and_client
    options = {"include_usage": True, "continuous_usage_stats": True}
    lines = _stream(client, metered=True, stream_options=options)
    events = [json.loads(x.removeprefix("data: ")) for x in lines if x.startswith("data: {")]
    # Every chunk's usage is the total so far (what the edge keeps at its last value, never sums).
    completions = [e["usage"]["completion_tokens"] for e in events if e.get("usage")]
    assert completions == sorted(completions) and completions[-1] == 3
    assert _comments(lines)[-1]["completion_tokens"] == 3


def test_a_stream_failing_after_its_first_token_reports_what_was_generated(engine_and_client):
    engine, client = engine_and_client
    engine.fail = True
    try:
        lines = _stream(client, metered=True)
    finally:
        engine.fail = False
    assert _comments(lines)[-1]["completion_tokens"] == 2
    error_at = next(i for i, line in enumerate(lines) if '"error"' in line)
    assert lines[error_at - 1].startswith(USAGE_COMMENT_PREFIX)


def _served(service: Service) -> tuple[float, float]:
    """(prompt, generated) tokens the server's counters hold for the model, every client."""
    m = service.metrics
    return (
        sum(s.value for f in m.prompt_tokens.collect() for s in f.samples if s.name.endswith("_total")),
        sum(s.value for f in m.generation_tokens.collect() for s in f.samples if s.name.endswith("_total")),
    )


def test_a_failed_stream_counts_as_served_what_it_reported(engine_and_client):
    engine, client = engine_and_client
    before = _served(engine.service)
    engine.fail = True
    try:
        _stream(client, metered=True)
    finally:
        engine.fail = False
    prompt, generated = _served(engine.service)
    assert (prompt - before[0], generated - before[1]) == (7, 2)


def test_a_stream_its_client_leaves_counts_as_served_the_usage_last_sent_to_the_edge(engine_and_client):
    engine = engine_and_client[0]
    service: Service = engine.service
    generation = parse_completion({"model": MODEL, "prompt": "hi", "stream": True, "max_tokens": 3})
    before = _served(service)

    async def leave_after_the_first_token() -> list[bytes]:
        prompt, max_tokens = await service.admit(generation, RequestContext())
        events = service.events(generation, prompt, max_tokens, RequestContext(), metered=True)
        first = [await anext(events)]
        await events.aclose()  # what Starlette does when the client disconnects
        return first

    (sent,) = run_on_own_loop(leave_after_the_first_token())
    assert sent.startswith(USAGE_COMMENT_PREFIX.encode()) and b'"completion_tokens":1' in sent
    prompt, generated = _served(service)
    assert (prompt - before[0], generated - before[1]) == (7, 1)
