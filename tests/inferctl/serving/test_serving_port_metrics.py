"""What llm-d's endpoint picker reads from a replica, read as it reads it: from ``/metrics`` of the serving port (the
OpenAI server's; the EPP scrapes ``podIP:<targetPort>/metrics``, never Triton's metrics port), with its
``triton-tensorrt-llm`` engine's metric specs and subset label matching, on the real local stack under a load that
saturates the engine's batch.

The specs (shared/facts/routing.md section 3, read at llm-d/llm-d-router v0.10.0 ``pkg/epp/.../extractor/metrics``:
README.md's engine table; spec.go ``labelsMatch`` is a subset match, so our ``model``/``version`` labels do not hide a
sample): queue ``nv_trt_llm_request_metrics{request_type="waiting"}``, running ``{request_type="scheduled"}``, KV usage
``nv_trt_llm_kv_cache_block_metrics{kv_cache_block_type="fraction"}``, block size and count ``{...="tokens_per"}`` and
``{...="max"}``. Issue 29's scheduler builds on these.
"""

from __future__ import annotations

import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import openai
import pytest
from prometheus_client.parser import text_string_to_metric_families

from inference_platform.catalog import server_metrics
from inference_platform.inference_image.llmapi.repository import TOKENS_PER_BLOCK
from inference_platform.settings import stack_files

pytestmark = [pytest.mark.triton, pytest.mark.timeout(240)]

EPP_SPECS = {
    "queue": ("nv_trt_llm_request_metrics", {"request_type": "waiting"}),
    "running": ("nv_trt_llm_request_metrics", {"request_type": "scheduled"}),
    "kv_usage": ("nv_trt_llm_kv_cache_block_metrics", {"kv_cache_block_type": "fraction"}),
    "block_size": ("nv_trt_llm_kv_cache_block_metrics", {"kv_cache_block_type": "tokens_per"}),
    "blocks": ("nv_trt_llm_kv_cache_block_metrics", {"kv_cache_block_type": "max"}),
}
"""The EPP's ``triton-tensorrt-llm`` engine config: what it reads -> (family, labels a sample must carry)."""
WORDS = 60
"""Each stream's answer (~500 tokens at the shared stack's 3 ms a token): every stream is still running when the
last one starts, so the ones beyond max_batch_size wait."""


def epp_view(page: str) -> dict[str, float | None]:
    """Each spec's value as the EPP extracts it: a sample of the family whose labels include the spec's; ``None``
    when none matches (the EPP would then have no value for the endpoint)."""
    samples = [s for family in text_string_to_metric_families(page) for s in family.samples]
    view: dict[str, float | None] = {}
    for name, (family, labels) in EPP_SPECS.items():
        matching = [s.value for s in samples if s.name == family and labels.items() <= s.labels.items()]
        assert len(matching) <= 1, f"{name}: {len(matching)} samples match {family}{labels}; the served model has one"
        view[name] = matching[0] if matching else None
    return view


def scrape(url: str) -> str:
    with urllib.request.urlopen(f"{url}/metrics", timeout=5) as response:
        return response.read().decode()


def test_the_serving_port_publishes_what_the_endpoint_picker_reads_and_it_moves_under_load(shared_stack):
    stack = shared_stack
    serving = stack_files.load("dev").serving
    batch = serving.max_batch_size
    pool = serving.max_batch_size * serving.max_seq_len // TOKENS_PER_BLOCK  # the stand-in's KV pool (kv_cache.py)
    # Every spec has a sample from the start; the block size is the configuration's (published at start-up), the
    # pool's size the engine's (0 until its first iteration stats: a GPU sizes it from free memory).
    before = epp_view(scrape(stack.openai_url))
    assert None not in before.values(), before
    assert before["block_size"] == TOKENS_PER_BLOCK and before["blocks"] in (0, pool), before

    # One client built before the streams and a barrier they all pass together: on a starved machine, building a
    # client per stream (an SSL context each) spread the starts so far apart that the first streams had ended
    # before the last began, and nothing ever waited.
    client = openai.OpenAI(base_url=f"{stack.openai_url}/v1", api_key="unused", max_retries=0, timeout=60)
    start = threading.Barrier(batch + 4)

    def ask(i: int) -> str:
        start.wait(timeout=60)
        chunks = client.chat.completions.create(
            model=stack.served_model, messages=[{"role": "user", "content": f"route {i} " * WORDS}], stream=True
        )
        return "".join(ch.choices[0].delta.content or "" for ch in chunks if ch.choices)

    seen: list[dict[str, float | None]] = []
    with client, ThreadPoolExecutor(max_workers=batch + 4) as pool_of_clients:
        futures = [pool_of_clients.submit(ask, i) for i in range(batch + 4)]
        while not all(f.done() for f in futures):
            seen.append(epp_view(scrape(stack.openai_url)))
            time.sleep(0.05)  # the EPP's own scrape interval
        answers = [f.result() for f in futures]
    assert answers == [(f"route {i} " * WORDS).strip() for i in range(batch + 4)]
    # Under load the queue shows the streams beyond the batch, the engine reports the batch it schedules (never more
    # than max_batch_size) and blocks in use; the pool's shape holds.
    assert max(v["queue"] or 0 for v in seen) >= 1, seen
    assert 1 <= max(v["running"] or 0 for v in seen) <= batch, seen
    assert 0 < max(v["kv_usage"] or 0 for v in seen) <= 1, seen
    assert {v["block_size"] for v in seen} == {TOKENS_PER_BLOCK} and {v["blocks"] for v in seen} <= {0, pool}, seen
    assert seen[-1]["blocks"] == pool, seen
    # When the load ends the gauges say so (the engine's at its first iteration-stats timeout with nothing in flight).
    wait_idle(stack.openai_url)


def wait_idle(url: str) -> dict[str, float | None]:
    """The EPP's view once the engine reports nothing queued, running or held (within 30 s)."""
    deadline = time.monotonic() + 30
    while (now := epp_view(scrape(url))) and (now["queue"], now["running"], now["kv_usage"]) != (0, 0, 0):
        assert time.monotonic() < deadline, f"the EPP's view never went idle: {now}"
        time.sleep(0.2)
    return now


def test_the_relayed_gauges_feed_vllms_names_on_the_same_page(shared_stack):
    """The vLLM-named gauges the same page carries (for routers and dashboards that read vLLM's) are the relayed
    engine values, not a second bookkeeping."""
    wait_idle(shared_stack.openai_url)  # the shared stack may still be settling from another test's load
    families = {f.name: f for f in text_string_to_metric_families(scrape(shared_stack.openai_url))}
    view = epp_view(scrape(shared_stack.openai_url))
    for name, key in ((server_metrics.WAITING, "queue"), (server_metrics.RUNNING, "running"),
                      (server_metrics.KV_USAGE, "kv_usage")):  # fmt: skip
        (sample,) = families[name].samples
        assert sample.labels == {server_metrics.MODEL_LABEL: shared_stack.served_model}
        assert sample.value == view[key] == 0, (name, sample, view)
