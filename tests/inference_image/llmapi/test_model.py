"""The production ``tensorrt_llm`` model.py against the faithful stand-in (TensorRT-LLM 1.2.1's LLM API behaviour,
tests/inference_image/cpu_llm_api/test_upstream_behaviour.py), driven through a fake Triton backend
(tests/inference_image/llmapi/fake_triton.py). Each test fails against the model before issue 27:

- its KV-cache gauges moved only after ``get_stats_async`` ended, which under steady load is never;
- a request cancelled while waiting was aborted and then awaited forever: no final response, gauges inflated;
- ``num_cached_tokens`` was reused blocks x block size, not the engine's count.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from inference_platform.components.observability import promql
from inference_platform.inference_image.llmapi.repository import render_repository
from inference_platform.inference_image.testing.cpu_llm_api.checkpoint import write_checkpoint
from inference_platform.inference_image.testing.cpu_llm_api.local import ENGINE_MODULE, ENGINE_MODULE_ENV
from inference_platform.settings import stack_files
from tests.inference_image.llmapi import fake_triton
from tests.inference_image.llmapi.fake_triton import MetricFamily, Request, gauge

WAIT_S = 30.0
"""Bound on every wait for the model (a hung model fails the test instead of hanging it)."""


@pytest.fixture
def repository(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    def render(**serving_changes) -> Path:
        serving = stack_files.load("dev").serving.model_copy(update=serving_changes)
        render_repository(serving, tmp_path / "repo", checkpoint_dir=write_checkpoint(tmp_path / "checkpoint"))
        return tmp_path / "repo" / "tensorrt_llm"

    monkeypatch.setenv(ENGINE_MODULE_ENV, ENGINE_MODULE)
    monkeypatch.setenv("CPU_LLM_FIRST_TOKEN_DELAY_MS", "0")
    monkeypatch.setenv("CPU_LLM_PREFILL_US_PER_TOKEN", "0")
    return render


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch):
    models = []

    def start(model_dir: Path, **options):
        model, args = fake_triton.load_model(monkeypatch, model_dir, **options)
        model.module.STATS_PERIOD_S = 0.05
        model.module.STATS_TIMEOUT_S = 0.5
        model.initialize(args)
        models.append(model)
        return model

    yield start
    for model in models:
        model.finalize()


def _generate(prompt: str, max_tokens: int, *, streaming: bool = True, **extra) -> Request:
    return Request({"text_input": [prompt], "streaming": streaming, "sampling_param_max_tokens": max_tokens, **extra})


def test_the_kv_gauges_move_while_the_stats_iterator_keeps_running(repository, started, monkeypatch):
    monkeypatch.setenv("CPU_LLM_TOKEN_DELAY_MS", "20")
    model = started(repository())
    seen_under_load: list[float] = []

    def observe(family, labels, value):
        if family.name == promql.TRT_LLM_KV_CACHE and labels["kv_cache_block_type"] == "used" and model.running:
            seen_under_load.append(value)

    MetricFamily.observer = observe
    requests = [_generate("x" * 40, 60) for _ in range(4)]
    model.execute(requests)
    for request in requests:
        assert request.sender.final(WAIT_S) is not None
    # 60 tokens at 20 ms each: over a second of iterations, one stat each; the gauges were set many times meanwhile.
    assert len([v for v in seen_under_load if v > 0]) >= 3
    deadline = time.monotonic() + WAIT_S
    while gauge(promql.TRT_LLM_KV_CACHE, kv_cache_block_type="used") != 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert gauge(promql.TRT_LLM_KV_CACHE, kv_cache_block_type="used") == 0  # idle: no blocks held
    assert gauge(promql.TRT_LLM_REQUESTS, request_type="scheduled") == 0


def test_a_request_cancelled_while_waiting_gets_our_cancelled_answer_and_is_forgotten(repository, started, monkeypatch):
    monkeypatch.setenv("CPU_LLM_TOKEN_DELAY_MS", "20")
    model = started(repository(max_batch_size=1))
    running, waiting = _generate("a" * 20, 400), _generate("b", 5)
    model.execute([running])
    model.execute([waiting])
    deadline = time.monotonic() + WAIT_S
    while gauge(promql.TRT_LLM_REQUESTS, request_type="waiting") != 1 and time.monotonic() < deadline:
        time.sleep(0.01)
    waiting.sender.cancelled = True
    answer = waiting.sender.final(WAIT_S)
    assert answer is not None, "a waiting request that was cancelled never got a final response"
    assert answer.error is not None and answer.error.code == fake_triton.TritonError.CANCELLED
    assert gauge(promql.TRT_LLM_REQUESTS, request_type="waiting") == 0
    assert len(model.running) == 1
    running.sender.cancelled = True  # the running one: aborted, answered once (a second final would raise)
    assert running.sender.final(WAIT_S).error.code == fake_triton.TritonError.CANCELLED
    deadline = time.monotonic() + WAIT_S
    while model.running and time.monotonic() < deadline:
        time.sleep(0.01)
    assert model.running == {} and gauge(promql.TRT_LLM_REQUESTS, request_type="active") == 0


def test_cached_tokens_are_the_engines_exact_count(repository, started):
    model = started(repository())
    base = "a" * 80  # BOS + 80 bytes: two full blocks of 32 and 17 tokens
    counts = []
    for prompt in (base, base, base[:40] + "b" * 40):
        request = _generate(prompt, 1, streaming=False)
        model.execute([request])
        counts.append(request.sender.final(WAIT_S).value("num_cached_tokens"))
    # The two full blocks (the 17 tokens after them were never a full block, so never cached); then one full block
    # and 9 tokens of the next, reused partially: 41, where reused blocks x 32 would say 64.
    assert counts == [[0], [64], [41]]


def test_a_liveness_ping_is_answered_by_the_model_with_what_it_holds(repository, started, monkeypatch):
    monkeypatch.setenv("CPU_LLM_TOKEN_DELAY_MS", "20")
    model = started(repository())
    idle = Request({"text_input": [""], "liveness": True})
    model.execute([idle])
    answer = idle.sender.final(WAIT_S)
    assert (answer.value("liveness_in_flight"), answer.value("liveness_stalled_s")) == ([0], [0.0])
    busy = _generate("x" * 10, 100)
    model.execute([busy])
    ping = Request({"text_input": [""], "liveness": True})
    model.execute([ping])
    assert ping.sender.final(WAIT_S).value("liveness_in_flight") == [1]
    busy.sender.cancelled = True
    assert busy.sender.final(WAIT_S) is not None


def test_n_sequences_and_logprobs_travel_per_sequence(repository, started):
    model = started(repository())
    request = _generate(
        "one two three", 20, streaming=False, sampling_param_n=2, sampling_param_temperature=0.9,
        sampling_param_logprobs=2,
    )  # fmt: skip
    model.execute([request])
    answer = request.sender.final(WAIT_S)
    assert answer.error is None, answer.error and answer.error.message
    texts = [t.decode() for t in answer.value("text_output")]
    assert len(texts) == 2 and all(sorted(t.split()) == ["one", "three", "two"] for t in texts)
    assert [r.decode() for r in answer.value("finish_reason")] == ["stop", "stop"]
    import json

    for entry in answer.value("logprobs"):
        top = json.loads(entry)
        assert len(top["ids"]) == len(top["top"]) and all(len(p) == 2 for p in top["top"])


def test_threads_of_a_finalized_model_are_gone(repository, monkeypatch):
    model, args = fake_triton.load_model(monkeypatch, repository())
    model.initialize(args)
    model.finalize()
    names = {t.name for t in threading.enumerate()}
    assert not names & {"llm-api", "llm-send"}
