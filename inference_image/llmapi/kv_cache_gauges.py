"""KV-cache block gauges of the LLM-API model, from the LLM API's own iteration stats.

The C++ TensorRT-LLM backend published ``nv_trt_llm_kv_cache_block_metrics{kv_cache_block_type=max|free|used|
tokens_per|fraction}``; the KV-cache alert (components/observability/rules.py) and KEDA's kvCacheTarget trigger
(components/autoscaling/scaled_object.py) read ``used`` and ``max``. The Python LLM API publishes no Triton
metrics, so the ``tensorrt_llm`` model sets these from ``LLM.get_stats_async``: each stat is one executor
iteration, a dict (or its JSON) whose ``kvCacheStats`` holds ``maxNumBlocks``, ``freeNumBlocks``,
``usedNumBlocks`` and ``tokensPerBlock`` (``KV_STATS_SOURCE``). The executor records them only with
``enable_iter_perf_stats`` (the renderer writes it), and only while it iterates: between requests the gauges keep
the last iteration's values.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from typing import Any

KV_CACHE_FAMILY = "nv_trt_llm_kv_cache_block_metrics"
"""components/observability/promql.py TRT_LLM_KV_CACHE."""
KV_STATS_SOURCE = (
    "NVIDIA/TensorRT-LLM tests/unittest/llmapi/apps/_test_openai_metrics.py @ 0ffe4707945e91577f8b4bdafc3c3ef6963662c6 "
    "(the PyTorch LLM with enable_iter_perf_stats; /metrics = get_stats_async's stats; kvCacheStats keys) and "
    "tensorrt_llm/llmapi/llm.py @ 00966934ce32e0603a33f8c922525cf3678afab4 (get_stats_async(timeout=2) -> an async "
    "iterable of the runtime's stats; the same signature in the 1.2-line copy, there @set_api_status('beta'))"
)
KV_STATS_KEY = "kvCacheStats"
BATCH_STATS_KEY = "inflightBatchingStats"
ENGINE_REQUESTS = {"scheduled": "numScheduledRequests", "context": "numContextRequests"}
"""nv_trt_llm_request_metrics request_type -> the inflightBatchingStats key it reads (the PyTorch executor fills them
each iteration: py_executor.py ``_update_iter_stats``, 1.2-era copies)."""
BLOCK_TYPES = {"max": "maxNumBlocks", "free": "freeNumBlocks", "used": "usedNumBlocks", "tokens_per": "tokensPerBlock"}
"""kv_cache_block_type -> the kvCacheStats key it reads; ``fraction`` is used / max."""


def kv_values(stat: Any) -> dict[str, float] | None:
    """The gauge values of one iteration stat; None when it carries no complete kvCacheStats."""
    if isinstance(stat, str | bytes):
        stat = json.loads(stat)
    kv = stat.get(KV_STATS_KEY) if isinstance(stat, Mapping) else None
    if not isinstance(kv, Mapping) or any(not isinstance(kv.get(k), int | float) for k in BLOCK_TYPES.values()):
        return None
    values = {block_type: float(kv[key]) for block_type, key in BLOCK_TYPES.items()}
    values["fraction"] = values["used"] / values["max"] if values["max"] > 0 else 0.0
    return values


def engine_values(stat: Any) -> dict[str, float] | None:
    """The KV-cache gauge values of one iteration stat, plus ``scheduled``/``context`` requests when it has them."""
    if isinstance(stat, str | bytes):
        stat = json.loads(stat)
    values = kv_values(stat)
    if values is None:
        return None
    batch = stat.get(BATCH_STATS_KEY) if isinstance(stat, Mapping) else None
    if isinstance(batch, Mapping):
        for request_type, key in ENGINE_REQUESTS.items():
            if isinstance(batch.get(key), int | float):
                values[request_type] = float(batch[key])
    return values


def idle_values(last: Mapping[str, float]) -> dict[str, float]:
    """The gauges of an engine holding no request: no blocks used, nothing scheduled; the pool's size stays."""
    out = dict(last)
    out.update(used=0.0, free=last.get("max", 0.0), fraction=0.0)
    for request_type in ENGINE_REQUESTS:
        if request_type in out:
            out[request_type] = 0.0
    return out


class KvCacheGauges:
    """``nv_trt_llm_kv_cache_block_metrics{kv_cache_block_type, model, version}``."""

    def __init__(self, pb_utils: Any, *, model: str, version: str) -> None:
        labels = {"model": model, "version": version}
        # The family must outlive its metrics (the backend refuses the other order): keep it.
        self._family = pb_utils.MetricFamily(
            name=KV_CACHE_FAMILY,
            description="KV cache blocks (max, free, used, tokens_per, fraction)",
            kind=pb_utils.MetricFamily.GAUGE,
        )
        self._metrics = {
            t: self._family.Metric(labels={"kv_cache_block_type": t, **labels}) for t in (*BLOCK_TYPES, "fraction")
        }
        self._lock = threading.Lock()

    def update(self, values: Mapping[str, float]) -> None:
        with self._lock:
            for block_type, value in values.items():
                self._metrics[block_type].set(value)
