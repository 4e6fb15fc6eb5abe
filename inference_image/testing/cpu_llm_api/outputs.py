"""TEST DOUBLE: what a caller reads from a generation result: ``CompletionOutput``, ``Logprob`` and the per-request
performance metrics, with TensorRT-LLM's names (``tensorrt_llm/executor/result.py`` @ a678b91a: ``CompletionOutput``
with ``text_diff``/``token_ids_diff``/``logprobs_diff``; ``Logprob(logprob, rank)``; ``TokenLogprobs`` a list of
``{token_id: Logprob}`` per generated token), and ``request_perf_metrics.kv_cache_metrics`` as upstream's Triton model
reads it (``triton_backend/all_models/llmapi/tensorrt_llm/1/model.py`` @ 044a90d2 ``_create_response``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta


@dataclass
class Logprob:
    logprob: float
    rank: int | None = None


TokenLogprobs = list[dict[int, Logprob]]


@dataclass
class KvCacheMetrics:
    num_total_allocated_blocks: int = 0
    num_new_allocated_blocks: int = 0
    num_reused_blocks: int = 0
    num_missed_blocks: int = 0
    kv_cache_hit_rate: float = 0.0


@dataclass
class TimingMetrics:
    """Steady-clock instants of one request (upstream reads them with ``pd.Timedelta(...).value`` in ns)."""

    arrival_time: timedelta = timedelta(0)
    first_scheduled_time: timedelta = timedelta(0)
    first_token_time: timedelta = timedelta(0)
    last_token_time: timedelta = timedelta(0)


@dataclass
class RequestPerfMetrics:
    kv_cache_metrics: KvCacheMetrics = field(default_factory=KvCacheMetrics)
    timing_metrics: TimingMetrics = field(default_factory=TimingMetrics)


@dataclass
class CompletionOutput:
    index: int
    text: str = ""
    token_ids: list[int] = field(default_factory=list)
    cumulative_logprob: float | None = None
    logprobs: TokenLogprobs = field(default_factory=list)
    finish_reason: str | None = None
    stop_reason: int | str | None = None
    request_perf_metrics: RequestPerfMetrics | None = None
    _last_text_len: int = field(default=0, repr=False)
    _last_token_ids_len: int = field(default=0, repr=False)
    _last_logprobs_len: int = field(default=0, repr=False)

    @property
    def length(self) -> int:
        return len(self.token_ids)

    @property
    def text_diff(self) -> str:
        return self.text[self._last_text_len :]

    @property
    def token_ids_diff(self) -> list[int]:
        return self.token_ids[self._last_token_ids_len :]

    @property
    def logprobs_diff(self) -> TokenLogprobs:
        return self.logprobs[self._last_logprobs_len :]
