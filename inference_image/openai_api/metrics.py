"""The OpenAI server's Prometheus metrics, under vLLM's names, on ``/metrics`` of the serving port.

Why vLLM's names (``vllm:*``, cited in catalog/server_metrics.py from vLLM's
``docs/design/metrics.md`` and ``vllm/v1/metrics/loggers.py``) and not OpenTelemetry's ``gen_ai.*``: the serving
ecosystem's dashboards, autoscalers and routers read vLLM's Prometheus series (vLLM's Grafana dashboard, llm-d's
scorers for vLLM, KServe, the Gateway API Inference Extension's model-server protocol), while ``gen_ai.*`` are
OpenTelemetry semantic conventions still marked development, with no Prometheus naming in common use. One convention,
so a team's existing LLM dashboard works on this platform's replicas.

Measured at the server, from the request's arrival (so they include the server's and Triton's own time, as a client
behind the edge sees it): ``vllm:time_to_first_token_seconds``, ``vllm:inter_token_latency_seconds`` (between
successive token-bearing responses), ``vllm:e2e_request_latency_seconds``; from the engine:
``vllm:request_queue_time_seconds`` (arrival to first scheduling, the LLM API's perf metrics); counters
``vllm:prompt_tokens_total``, ``vllm:generation_tokens_total``, ``vllm:prefix_cache_queries_total`` (prompt tokens
looked up) and ``vllm:prefix_cache_hits_total`` (prompt tokens served from the KV cache), ``vllm:request_success_total``
by ``finished_reason``, and ``http_requests_total`` by handler, method and status class (the
prometheus_fastapi_instrumentator names vLLM serves) for the outcomes that never reach the engine. Every request series
carries ``model_name`` (the served model id) and ``client`` (the edge's ``x-client-id``; ``none`` without one).

The engine's own gauges, ``nv_trt_llm_request_metrics`` and ``nv_trt_llm_kv_cache_block_metrics``, are published by
the ``tensorrt_llm`` model on Triton's metrics port (``neuron_llm_request_metrics`` by the ``neuron_llm`` step on
Neuron); the server relays them here too (read from Triton at most every ``RELAY_TTL_S``; the last read is kept up to
``RELAY_STALE_S`` while the page cannot be read), because llm-d's endpoint picker scrapes the serving port only
(shared/facts/routing.md), and derives ``vllm:num_requests_running``/``vllm:num_requests_waiting``/
``vllm:kv_cache_usage_perc`` from them (Neuron's running batch is its ``active`` requests; it has no KV gauge).
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.parser import text_string_to_metric_families

from inference_platform.catalog import server_metrics as m

TTFT = m.TTFT_SECONDS
ITL = m.INTER_TOKEN_SECONDS
E2E = m.E2E_SECONDS
QUEUE = m.QUEUE_SECONDS
PROMPT_TOKENS = m.PROMPT_TOKENS
GENERATION_TOKENS = m.GENERATION_TOKENS
PREFIX_QUERIES = m.PREFIX_CACHE_QUERIES
PREFIX_HITS = m.PREFIX_CACHE_HITS
SUCCESS = m.REQUEST_SUCCESS
RUNNING = m.RUNNING
WAITING = m.WAITING
KV_USAGE = m.KV_USAGE
HTTP_REQUESTS = m.HTTP_REQUESTS
"""Counters gain ``_total`` in the exposition (``vllm:prompt_tokens_total``)."""
RELAYED = m.RELAYED_ENGINE_FAMILIES
RUNNING_TYPE = {RELAYED[0]: "scheduled", RELAYED[2]: "active"}
"""Each request family's ``request_type`` for the requests in the running batch."""
LABELS = (m.MODEL_LABEL, m.CLIENT_LABEL)
ITL_BUCKETS = (
    0.01,
    0.025,
    0.05,
    0.075,
    0.1,
    0.15,
    0.2,
    0.3,
    0.4,
    0.5,
    0.75,
    1.0,
    2.5,
    5.0,
    7.5,
    10.0,
    20.0,
    40.0,
    80.0,
)
"""vLLM's inter-token buckets (loggers.py ``time_per_output_token``), below 10 ms extended for fast decode."""
REQUEST_BUCKETS = (0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0,
                   480.0, 960.0, 1920.0, 7680.0)  # fmt: skip
"""vLLM's ``request_latency_buckets`` (e2e and queue time)."""
FAST_ITL = (0.001, 0.0025, 0.005)
MAX_CLIENTS = 256
"""Distinct ``client`` label values kept; later ones count as ``other`` (a bounded series count per replica)."""
RELAY_TTL_S = 0.5
RELAY_STALE_S = 2.0
"""How long the last engine gauges read stay published while Triton's page cannot be read. A scrape that times out
on a replica busy enough to matter would otherwise blank the picker's view of exactly that replica; beyond this the
values are too old to route on and none is published (the picker then has no value, not a wrong one)."""
_CLIENT = re.compile(r"^[A-Za-z0-9._:-]{1,64}$")


class RequestRecord:
    """One request's timings and counts, recorded when it ends (``finish``/``fail``)."""

    def __init__(self, metrics: ServerMetrics, labels: tuple[str, str], started: float, prompt_tokens: int) -> None:
        self._metrics, self._labels, self._started = metrics, labels, started
        self._prompt_tokens = prompt_tokens
        self._first: float | None = None
        self._last: float | None = None
        self._gaps: list[float] = []

    def token(self) -> None:
        now = time.monotonic()
        if self._first is None:
            self._first = now
        elif self._last is not None:
            self._gaps.append(now - self._last)
        self._last = now

    def finish(self, usage: dict[str, Any], queue_seconds: float | None, reasons: Sequence[str]) -> None:
        m, labels = self._metrics, self._labels
        if self._first is not None:
            m.ttft.labels(*labels).observe(self._first - self._started)
        itl = m.itl.labels(*labels)
        for gap in self._gaps:
            itl.observe(gap)
        m.e2e.labels(*labels).observe(time.monotonic() - self._started)
        if queue_seconds is not None:
            m.queue.labels(*labels).observe(queue_seconds)
        self._tokens(usage)
        for reason in reasons:
            m.success.labels(*labels, reason).inc()

    def _tokens(self, usage: dict[str, Any]) -> None:
        m, labels = self._metrics, self._labels
        m.prompt_tokens.labels(*labels).inc(usage["prompt_tokens"])
        m.generation_tokens.labels(*labels).inc(usage["completion_tokens"])
        m.prefix_queries.labels(*labels).inc(usage["prompt_tokens"])
        m.prefix_hits.labels(*labels).inc(usage["prompt_tokens_details"]["cached_tokens"])

    def fail(self, usage: dict[str, Any] | None = None, *, reason: str = "error") -> None:
        """A request that ended without its answer: failed (``error``) or left by its client (``abort``, vLLM's
        reason). ``usage``: the tokens it had been reported with (a stream's running usage), counted as served,
        so the token counters agree with what the edge charged (issue 30's charged-vs-served alarm)."""
        if usage is not None:
            self._tokens(usage)
        self._metrics.success.labels(*self._labels, reason).inc()


class ServerMetrics:
    def __init__(
        self, served_model: str, ttft_buckets: Iterable[float], *, triton_metrics_url: str | None = None
    ) -> None:
        self.served_model = served_model
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.ttft = Histogram(
            TTFT, "Histogram of time to first token in seconds.", LABELS, buckets=tuple(ttft_buckets), registry=r
        )
        self.itl = Histogram(ITL, "Histogram of inter-token latency in seconds.", LABELS,
                             buckets=tuple(sorted({*FAST_ITL, *ITL_BUCKETS})), registry=r)  # fmt: skip
        self.e2e = Histogram(
            E2E, "Histogram of e2e request latency in seconds.", LABELS, buckets=REQUEST_BUCKETS, registry=r
        )
        self.queue = Histogram(QUEUE, "Histogram of time spent in WAITING phase for request.", LABELS,
                               buckets=REQUEST_BUCKETS, registry=r)  # fmt: skip
        self.prompt_tokens = Counter(PROMPT_TOKENS, "Number of prefill tokens processed.", LABELS, registry=r)
        self.generation_tokens = Counter(
            GENERATION_TOKENS, "Number of generation tokens processed.", LABELS, registry=r
        )
        self.prefix_queries = Counter(PREFIX_QUERIES, "Prefix cache queries, in terms of number of queried tokens.",
                                      LABELS, registry=r)  # fmt: skip
        self.prefix_hits = Counter(
            PREFIX_HITS, "Prefix cache hits, in terms of number of cached tokens.", LABELS, registry=r
        )
        self.success = Counter(
            SUCCESS, "Count of successfully processed requests.", (*LABELS, "finished_reason"), registry=r
        )
        self.http = Counter(HTTP_REQUESTS, "Total number of requests by method, status and handler.",
                            ("handler", "method", "status"), registry=r)  # fmt: skip
        self.relay = EngineRelay(triton_metrics_url, served_model)
        r.register(self.relay)
        self._clients: set[str] = set()
        self._lock = threading.Lock()

    def start(self, *, client: str, started: float, prompt_tokens: int) -> RequestRecord:
        """A request's record: ``client`` the edge's client id, ``started`` its arrival (``time.monotonic()``)."""
        return RequestRecord(self, (self.served_model, self.client_label(client)), started, prompt_tokens)

    def client_label(self, client: str) -> str:
        if client in self._clients:
            return client
        with self._lock:
            if len(self._clients) >= MAX_CLIENTS:
                return "other"
            self._clients.add(client)
        return client

    def count_http(self, handler: str, method: str, status: int) -> None:
        self.http.labels(handler, method, f"{status // 100}xx").inc()

    async def exposition(self) -> bytes:
        await self.relay.refresh()
        return generate_latest(self.registry)


def client_id(header: str | None) -> str:
    """The edge's client id as a label value: ``none`` without one, ``invalid`` for one that is not a plain name."""
    if not header:
        return "none"
    return header if _CLIENT.match(header) else "invalid"


class EngineRelay:
    """The engine's gauges, read from Triton's metrics page and published again on the server's."""

    def __init__(self, url: str | None, served_model: str) -> None:
        self.url = url
        self.served_model = served_model
        self._families: list[Metric] = []
        self._fetched = 0.0
        self._read_at = float("-inf")

    async def refresh(self) -> None:
        if self.url is None or time.monotonic() - self._fetched < RELAY_TTL_S:
            return
        import aiohttp

        self._fetched = time.monotonic()
        try:
            async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=1.0)) as session, \
                    session.get(self.url, raise_for_status=True) as response:  # fmt: skip  # a 5xx page is no reading
                text = await response.text()
        except (aiohttp.ClientError, TimeoutError):
            if time.monotonic() - self._read_at > RELAY_STALE_S:
                self._families = []  # gauges this old would lie: none is better
            return
        self._families = [f for f in text_string_to_metric_families(text) if f.name in RELAYED]
        self._read_at = time.monotonic()

    def describe(self) -> list[Metric]:
        return []

    def collect(self) -> Iterator[Metric]:
        running = waiting = usage = None
        for family in self._families:
            out = GaugeMetricFamily(family.name, family.documentation, labels=None)
            for sample in family.samples:
                out.add_sample(family.name, sample.labels, sample.value)
                kind = sample.labels.get("request_type") or sample.labels.get("kv_cache_block_type")
                if kind is not None and kind == RUNNING_TYPE.get(family.name):
                    running = sample.value
                elif family.name in RUNNING_TYPE and kind == "waiting":
                    waiting = sample.value
                elif family.name == RELAYED[1] and kind == "fraction":
                    usage = sample.value
            yield out
        for name, help_text, value in ((RUNNING, "Number of requests in model execution batches.", running),
                                       (WAITING, "Number of requests waiting to be processed.", waiting),
                                       (KV_USAGE, "KV-cache usage. 1 means 100 percent usage.", usage)):  # fmt: skip
            if value is not None:
                gauge = GaugeMetricFamily(name, help_text, labels=["model_name"])
                gauge.add_metric([self.served_model], value)
                yield gauge
