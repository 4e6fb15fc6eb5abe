"""The OpenAI server's Prometheus series: the names the image publishes (inference_image/openai_api/metrics.py) and
the rules, dashboards and scaling triggers read (components/observability/promql.py). One list, both sides import it.

vLLM's names (``vllm:*``), chosen because the serving ecosystem's dashboards, autoscalers and routers read them
(vllm-project/vllm ``docs/design/metrics.md`` @ 0328b592, ``vllm/v1/metrics/loggers.py`` @ a6f0308c; the reasons are in
metrics.py). Every request series is labelled ``model_name`` (the served model id) and ``client`` (the edge's client id).
"""

from typing import Final

TTFT_SECONDS: Final = "vllm:time_to_first_token_seconds"
"""Histogram: request arrival at the server to its first token."""
INTER_TOKEN_SECONDS: Final = "vllm:inter_token_latency_seconds"
"""Histogram: between successive token-bearing engine responses."""
E2E_SECONDS: Final = "vllm:e2e_request_latency_seconds"
"""Histogram: request arrival to its last token."""
QUEUE_SECONDS: Final = "vllm:request_queue_time_seconds"
"""Histogram: the engine's arrival to first scheduling (the LLM API's perf metrics)."""
PROMPT_TOKENS: Final = "vllm:prompt_tokens"
GENERATION_TOKENS: Final = "vllm:generation_tokens"
PREFIX_CACHE_QUERIES: Final = "vllm:prefix_cache_queries"
"""Counter: prompt tokens looked up in the KV cache."""
PREFIX_CACHE_HITS: Final = "vllm:prefix_cache_hits"
"""Counter: prompt tokens served from the KV cache (the engine's exact cached_tokens)."""
REQUEST_SUCCESS: Final = "vllm:request_success"
"""Counter by ``finished_reason`` (stop, length, tool_calls, error)."""
HTTP_REQUESTS: Final = "http_requests"
"""Counter by ``handler``, ``method``, ``status`` (``2xx``...): outcomes that never reach the engine too."""
RUNNING: Final = "vllm:num_requests_running"
WAITING: Final = "vllm:num_requests_waiting"
KV_USAGE: Final = "vllm:kv_cache_usage_perc"
MODEL_LABEL: Final = "model_name"
CLIENT_LABEL: Final = "client"
COUNTER_SUFFIX: Final = "_total"
"""Counters are exposed with it (``vllm:prompt_tokens_total``)."""
RELAYED_ENGINE_FAMILIES: Final = (
    "nv_trt_llm_request_metrics",
    "nv_trt_llm_kv_cache_block_metrics",
    "neuron_llm_request_metrics",
)
"""The engine's gauges the OpenAI server relays from Triton's metrics page onto its own (the endpoint picker scrapes
the serving port only). The ServiceMonitor drops them from that port: Prometheus reads them once, from Triton's."""
