"""The KV-cache block gauges the alert and KEDA read, published by the production ``tensorrt_llm`` model on the real
CPU Triton from the stand-in engine's iteration stats (its own block accounting): scraped from Triton's /metrics,
``used`` rises with requests in flight and falls back to 0 when they end; ``max`` and ``tokens_per`` hold.

The kvCacheStats key names are TensorRT-LLM's (``KV_STATS_SOURCE``), pinned here; the stand-in's values are its
own (a pool of max_batch_size x max_seq_len tokens), not a GPU's.
"""

from __future__ import annotations

import re
import threading
import time
import urllib.request

import pytest

from inference_platform.components.observability import promql
from inference_platform.inference_image.llmapi import kv_cache_gauges
from inference_platform.inference_image.llmapi.repository import TOKENS_PER_BLOCK
from inference_platform.inference_image.testing.cpu_llm_api.local import Timing
from inference_platform.settings import stack_files
from tools.local_openai_stack import openai_stack

TIMING = Timing(first_token_delay_ms=10, token_delay_ms=20)
IN_FLIGHT = 4
MAX_TOKENS = 120
SEEN_WITHIN_S = 20.0


def test_the_gauges_read_tensorrt_llms_kv_cache_stats_names():
    # Upstream (KV_STATS_SOURCE): trtllm-serve's /metrics returns get_stats_async's stats; the PyTorch LLM's
    # carry kvCacheStats.{maxNumBlocks, freeNumBlocks, usedNumBlocks, tokensPerBlock} (the test there asserts each).
    assert kv_cache_gauges.BLOCK_TYPES == {
        "max": "maxNumBlocks",
        "free": "freeNumBlocks",
        "used": "usedNumBlocks",
        "tokens_per": "tokensPerBlock",
    }
    assert "0ffe4707945e91577f8b4bdafc3c3ef6963662c6" in kv_cache_gauges.KV_STATS_SOURCE
    # What the alert and KEDA's trigger query (kv_cache_block_type used / max).
    assert kv_cache_gauges.KV_CACHE_FAMILY == promql.TRT_LLM_KV_CACHE
    stat = '{"iter": 3, "kvCacheStats": {"maxNumBlocks": 100, "freeNumBlocks": 75, "usedNumBlocks": 25, "tokensPerBlock": 32}}'
    assert kv_cache_gauges.kv_values(stat) == {"max": 100, "free": 75, "used": 25, "tokens_per": 32, "fraction": 0.25}
    assert kv_cache_gauges.kv_values({"iter": 1}) is None
    assert kv_cache_gauges.kv_values({"kvCacheStats": {"maxNumBlocks": 1}}) is None


def _gauges(url: str) -> dict[str, float]:
    with urllib.request.urlopen(url, timeout=5) as response:
        page = response.read().decode()
    found = {}
    pattern = rf"^{promql.TRT_LLM_KV_CACHE}\{{([^}}]*)\}} (\S+)$"
    for labels, value in re.findall(pattern, page, re.MULTILINE):
        if 'model="tensorrt_llm"' in labels:
            block_type = re.search(r'kv_cache_block_type="([^"]+)"', labels).group(1)
            found[block_type] = float(value)
    return found


def _wait(url: str, ok, what: str) -> dict[str, float]:
    deadline = time.monotonic() + SEEN_WITHIN_S
    while time.monotonic() < deadline:
        gauges = _gauges(url)
        if ok(gauges):
            return gauges
        time.sleep(0.2)
    raise AssertionError(f"{what} within {SEEN_WITHIN_S} s; last scrape: {_gauges(url)}")


@pytest.mark.triton
@pytest.mark.timeout(240)
def test_the_live_model_publishes_kv_block_gauges_that_move_under_load(tmp_path):
    import openai

    dev = stack_files.load("dev")
    with openai_stack(dev, tmp_path, TIMING, edge=False) as stack:
        url = stack.triton_metrics_url
        serving = dev.serving
        # The stand-in's pool: room for max_batch_size sequences of max_seq_len (kv_cache.PrefixCache).
        pool = serving.max_batch_size * serving.max_seq_len // TOKENS_PER_BLOCK
        # Published from the start (zeros until the first iteration's stats), under the names the rules read.
        assert set(_gauges(url)) == {"max", "free", "used", "tokens_per", "fraction"}
        errors: list[BaseException] = []

        def ask() -> None:
            try:
                with openai.OpenAI(base_url=f"{stack.openai_url}/v1", api_key="unused", max_retries=0) as client:
                    client.completions.create(
                        model=stack.served_model, prompt="count the blocks " * 20, max_tokens=MAX_TOKENS
                    )
            except BaseException as err:  # reported by the main thread
                errors.append(err)

        threads = [threading.Thread(target=ask) for _ in range(IN_FLIGHT)]
        for t in threads:
            t.start()
        busy = _wait(url, lambda g: g.get("used", 0) >= IN_FLIGHT, f"used >= {IN_FLIGHT} blocks under load")
        assert busy["max"] == pool and busy["tokens_per"] == TOKENS_PER_BLOCK
        assert busy["free"] == busy["max"] - busy["used"] and 0 < busy["fraction"] < 1
        for t in threads:
            t.join(timeout=120)
        assert not errors, errors
        idle = _wait(url, lambda g: g.get("used") == 0, "used back to 0 when the requests ended")
        assert idle["free"] == pool and idle["fraction"] == 0
        print(f"\nKV blocks under {IN_FLIGHT} requests: used {busy['used']:g} of {busy['max']:g}; idle used 0")
