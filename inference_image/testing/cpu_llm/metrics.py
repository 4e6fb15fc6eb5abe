"""TEST DOUBLE: the CPU stand-in publishes TensorRT-LLM's metric families, named exactly as the real
``tensorrt_llm`` model names them, through the Python backend's custom-metrics API.

The names, kinds and labels are those of NVIDIA's tensorrtllm_backend (``create_metrics`` of its
Python ``tensorrt_llm`` model): ``nv_trt_llm_request_metrics{request_type=active|max|scheduled|
context|waiting}``, ``nv_trt_llm_kv_cache_block_metrics{kv_cache_block_type=max|free|used|tokens_per|
fraction}`` and the ``nv_llm_output_token_len`` / ``nv_llm_input_token_len`` histograms, all labelled
``model`` and ``version``. So the alerts, dashboards and KEDA queries run unchanged against it.

The VALUES are the stand-in's: ``active`` counts requests running in its thread pool (its in-flight
batch, at most max_batch_size), ``waiting`` those submitted but not yet started, ``context`` those
before their first token. Its "KV cache" is bookkeeping, not memory: a paged pool of
``max_batch_size x STAND_IN_BLOCKS_PER_SLOT`` blocks of ``TOKENS_PER_BLOCK`` tokens, each running
sequence holding ceil((prompt + generated) / TOKENS_PER_BLOCK) blocks.
"""

from __future__ import annotations

import itertools
import math
import threading
from dataclasses import dataclass

TOKENS_PER_BLOCK = 64
"""TensorRT-LLM's default tokens per KV-cache block."""
STAND_IN_BLOCKS_PER_SLOT = 16
"""The stand-in's pool: 1,024 tokens per batch slot."""
TOKEN_BUCKETS = [1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0, 500.0, 1000.0]
"""tensorrtllm_backend's build_1_2_5_buckets(1000)."""
REQUEST_TYPES = ("active", "max", "scheduled", "context", "waiting")
KV_TYPES = ("max", "free", "used", "tokens_per", "fraction")
NEURON_MODEL = "neuron_llm"
NEURON_REQUEST_FAMILY = "neuron_llm_request_metrics"
"""Standing in for ``neuron_llm``, the stand-in publishes that model's request gauges instead (same
``request_type`` values) and no KV-cache family: the Neuron engine has no paged KV cache."""


@dataclass(frozen=True)
class Snapshot:
    requests: dict[str, float]
    kv_cache: dict[str, float]


class RequestBook:
    """Thread-safe counts of the stand-in's requests and the KV blocks they would hold."""

    def __init__(self, max_active: int, kv_blocks: int, tokens_per_block: int = TOKENS_PER_BLOCK) -> None:
        self.max_active = max_active
        self.kv_blocks = kv_blocks
        self.tokens_per_block = tokens_per_block
        self._lock = threading.Lock()
        self._keys = itertools.count()
        self._waiting = 0
        self._prompt: dict[int, int] = {}  # running request -> prompt tokens
        self._generated: dict[int, int] = {}  # running request -> tokens generated so far

    def queued(self) -> None:
        with self._lock:
            self._waiting += 1

    def start(self) -> int:
        """A queued request starts running; returns its key."""
        with self._lock:
            key = next(self._keys)
            self._waiting = max(0, self._waiting - 1)
            self._prompt[key] = 0
            self._generated[key] = 0
            return key

    def prompt(self, key: int, tokens: int) -> None:
        with self._lock:
            if key in self._prompt:
                self._prompt[key] = tokens

    def token(self, key: int) -> bool:
        """One more token; True when a gauge changes (first token, or a new KV block taken)."""
        with self._lock:
            if key not in self._generated:
                return False
            self._generated[key] += 1
            held = self._prompt[key] + self._generated[key]
            return self._generated[key] == 1 or held % self.tokens_per_block == 1

    def finish(self, key: int) -> int:
        """The request ended; returns the tokens it generated."""
        with self._lock:
            self._prompt.pop(key, None)
            return self._generated.pop(key, 0)

    def snapshot(self) -> Snapshot:
        with self._lock:
            active = len(self._prompt)
            held = (math.ceil((p + self._generated[k]) / self.tokens_per_block) for k, p in self._prompt.items())
            used = min(self.kv_blocks, sum(held))
            requests = {
                "active": active,
                "max": self.max_active,
                "scheduled": active,
                "context": sum(1 for n in self._generated.values() if n == 0),
                "waiting": self._waiting,
            }
        kv = {
            "max": self.kv_blocks,
            "free": self.kv_blocks - used,
            "used": used,
            "tokens_per": self.tokens_per_block,
            "fraction": used / self.kv_blocks if self.kv_blocks else 0.0,
        }
        return Snapshot(requests=requests, kv_cache=kv)


class StandInMetrics:
    """The families on Triton's metrics endpoint, updated on every change of the book."""

    def __init__(self, pb_utils, *, model: str, version: str, max_batch_size: int) -> None:
        self.book = RequestBook(max_active=max_batch_size, kv_blocks=max_batch_size * STAND_IN_BLOCKS_PER_SLOT)
        # The stub's metric calls are messages to the server over one shared-memory channel; calls from
        # the request threads at once abort the server (std::bad_alloc), so they go one at a time.
        self._calls = threading.Lock()
        labels = {"model": model, "version": version}
        gauge, histogram = pb_utils.MetricFamily.GAUGE, pb_utils.MetricFamily.HISTOGRAM
        # The families must outlive their metrics (the backend refuses the other order): keep both.
        self._families = [
            pb_utils.MetricFamily(name="nv_trt_llm_request_metrics", description="TRT LLM request metrics", kind=gauge),
            pb_utils.MetricFamily(
                name="nv_trt_llm_kv_cache_block_metrics", description="TRT LLM KV cache block metrics", kind=gauge
            ),
            pb_utils.MetricFamily(
                name="nv_llm_input_token_len", description="TRT LLM response metrics", kind=histogram
            ),
            pb_utils.MetricFamily(
                name="nv_llm_output_token_len", description="TRT LLM response metrics", kind=histogram
            ),
        ]
        requests, kv, inputs, outputs = self._families
        self._requests = {t: requests.Metric(labels={"request_type": t, **labels}) for t in REQUEST_TYPES}
        self._kv = {t: kv.Metric(labels={"kv_cache_block_type": t, **labels}) for t in KV_TYPES}
        self._input_tokens = inputs.Metric(
            labels={"response_metric_type": "total_input_tokens", **labels}, buckets=TOKEN_BUCKETS
        )
        self._output_tokens = outputs.Metric(
            labels={"response_metric_type": "total_output_tokens", **labels}, buckets=TOKEN_BUCKETS
        )
        self._publish()

    def queued(self) -> None:
        self.book.queued()
        self._publish()

    def start(self) -> int:
        key = self.book.start()
        self._publish()
        return key

    def prompt(self, key: int, tokens: int) -> None:
        self.book.prompt(key, tokens)
        with self._calls:
            self._input_tokens.observe(tokens)
        self._publish()

    def token(self, key: int) -> None:
        # Each set() is a message to the server process: publish only when a value changes.
        if self.book.token(key):
            self._publish()

    def finish(self, key: int) -> None:
        generated = self.book.finish(key)
        with self._calls:
            self._output_tokens.observe(generated)
        self._publish()

    def _publish(self) -> None:
        with self._calls:
            self._set(self.book.snapshot())

    def _set(self, snap: Snapshot) -> None:
        for name, value in snap.requests.items():
            self._requests[name].set(value)
        for name, metric in self._kv.items():
            metric.set(snap.kv_cache[name])
