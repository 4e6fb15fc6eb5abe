"""Metric names and PromQL building blocks shared by the alerts, the dashboards and the scaling triggers.

Pure data and string building, no Pulumi. Each family is named exactly as its exporter publishes it:
- Triton (``nv_inference_*``): the server's own per-model counters and gauges.
- The OpenAI server (``vllm:*``, ``http_requests_total``; catalog/server_metrics.py): time to first token, inter-token
  latency, queue time, tokens, prefix-cache hits and outcomes per request, as clients see them, labelled
  ``model_name`` and ``client``.
- TensorRT-LLM (``nv_trt_llm_*``, ``nv_llm_*``): the custom metrics of NVIDIA's ``tensorrt_llm``
  model (``pb_utils.MetricFamily`` in tensorrtllm_backend), labelled ``model`` and ``version``.
- DCGM exporter (``DCGM_FI_*``) on NVIDIA nodes; neuron-monitor (``neuroncore_*``, ``neuron_*``) on Neuron nodes.
- kube-state-metrics (``kube_*``) and Envoy (``envoy_*``) for the platform around the servers.

A :class:`Scope` says which series belong to one inference workload: the labels a ServiceMonitor
puts on every scraped sample (``namespace`` and ``job``, the Service's name).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from inference_platform.catalog import server_metrics as server

# Triton server (per model and version).
UP = "up"
QUEUE_DURATION_US = "nv_inference_queue_duration_us"
COMPUTE_INFER_DURATION_US = "nv_inference_compute_infer_duration_us"
REQUEST_DURATION_US = "nv_inference_request_duration_us"
REQUEST_SUCCESS = "nv_inference_request_success"
REQUEST_FAILURE = "nv_inference_request_failure"
PENDING_REQUESTS = "nv_inference_pending_request_count"
EXEC_COUNT = "nv_inference_exec_count"
INFERENCE_COUNT = "nv_inference_count"

# The OpenAI server in the pod (catalog/server_metrics.py: vLLM's names), per model_name and client.
TTFT_SECONDS = server.TTFT_SECONDS
INTER_TOKEN_SECONDS_HISTOGRAM = server.INTER_TOKEN_SECONDS
QUEUE_SECONDS = server.QUEUE_SECONDS
PROMPT_TOKENS = server.PROMPT_TOKENS + server.COUNTER_SUFFIX
GENERATION_TOKENS = server.GENERATION_TOKENS + server.COUNTER_SUFFIX
PREFIX_CACHE_QUERIES = server.PREFIX_CACHE_QUERIES + server.COUNTER_SUFFIX
PREFIX_CACHE_HITS = server.PREFIX_CACHE_HITS + server.COUNTER_SUFFIX
REQUEST_OUTCOMES = server.REQUEST_SUCCESS + server.COUNTER_SUFFIX
HTTP_REQUESTS = server.HTTP_REQUESTS + server.COUNTER_SUFFIX

# TensorRT-LLM backend (tensorrt_llm model); the CPU stand-in publishes the same families.
TRT_LLM_REQUESTS = "nv_trt_llm_request_metrics"
"""Gauge, label ``request_type``: active, max, scheduled, context, waiting."""
TRT_LLM_KV_CACHE = "nv_trt_llm_kv_cache_block_metrics"
"""Gauge, label ``kv_cache_block_type``: max, free, used, tokens_per, fraction."""
NEURON_LLM_REQUESTS = "neuron_llm_request_metrics"
"""Gauge of the ``neuron_llm`` model, same ``request_type`` values (active, max, waiting): NeuronX has no
Triton backend publishing such gauges, so the platform's Neuron model publishes its own."""

# NVIDIA DCGM exporter (per GPU; ``Hostname`` is the node).
GPU_UTIL = "DCGM_FI_DEV_GPU_UTIL"
GPU_FB_USED_MIB = "DCGM_FI_DEV_FB_USED"
GPU_FB_FREE_MIB = "DCGM_FI_DEV_FB_FREE"
GPU_POWER_WATTS = "DCGM_FI_DEV_POWER_USAGE"
GPU_XID_LAST = "DCGM_FI_DEV_XID_ERRORS"
"""A gauge holding the LAST XID seen on the GPU, not a count: alert on changes, not on > 0."""

# AWS neuron-monitor (per NeuronCore / device).
NEURONCORE_UTIL_RATIO = "neuroncore_utilization_ratio"
NEURON_RUNTIME_MEMORY_BYTES = "neuron_runtime_memory_used_bytes"
NEURON_ECC_UNCORRECTED = ("neurondevice_hw_ecc_events_total_mem_ecc_uncorrected",
                          "neurondevice_hw_ecc_events_total_sram_ecc_uncorrected")  # fmt: skip
NEURON_EXECUTION_ERRORS = "execution_errors_total"

# kube-state-metrics.
POD_READY = "kube_pod_status_ready"
CONTAINER_RESTARTS = "kube_pod_container_status_restarts_total"
CONTAINER_LAST_TERMINATED = "kube_pod_container_status_last_terminated_reason"
CONTAINER_WAITING = "kube_pod_container_status_waiting_reason"
NODE_READY = "kube_node_status_condition"
NODE_LABELS = "kube_node_labels"
HPA_CURRENT = "kube_horizontalpodautoscaler_status_current_replicas"
HPA_MIN = "kube_horizontalpodautoscaler_spec_min_replicas"

# Envoy (Envoy Gateway's proxies), per upstream cluster (``envoy_cluster_name``).
ENVOY_UPSTREAM_RQ_TOTAL = "envoy_cluster_upstream_rq_total"
ENVOY_UPSTREAM_RQ_XX = "envoy_cluster_upstream_rq_xx"
"""Counter by ``envoy_response_code_class`` (1-5)."""
ENVOY_UPSTREAM_RQ = "envoy_cluster_upstream_rq"
"""Counter by ``envoy_response_code``."""
ENVOY_RATELIMIT_OVER_LIMIT = "envoy_cluster_ratelimit_over_limit"
"""Requests the global rate limit refused with 429 (they never reach the upstream)."""
ENVOY_RATELIMIT_ERROR = "envoy_cluster_ratelimit_error"
"""Requests for which the rate-limit service gave no answer (down, absent, timed out): let through
unlimited when failing open, refused with 500 when failing closed."""
ENVOY_CLUSTER_MEMBERSHIP_HEALTHY = "envoy_cluster_membership_healthy"
"""Healthy hosts of an Envoy cluster (gauge)."""
RATE_LIMIT_SERVICE_CLUSTER = "ratelimit_cluster"
"""Envoy Gateway's cluster of its rate-limit service (v1.9.0 internal/xds/translator/ratelimit.go)."""
ENVOY_DOWNSTREAM_RQ_XX = "envoy_http_downstream_rq_xx"
"""Counter by ``envoy_response_code_class`` per listener (``envoy_http_conn_manager_prefix``)."""

# Node provisioning.
KARPENTER_NODECLAIMS_TERMINATED = "karpenter_nodeclaims_terminated_total"
KARPENTER_LAUNCH_FAILURES = "karpenter_cloudprovider_errors_total"
CLUSTER_AUTOSCALER_FAILED_SCALE_UPS = "cluster_autoscaler_failed_scale_ups_total"

# Recording rules (level:metric:operations, Prometheus naming practice).
QUEUE_COMPUTE_RATIO = "triton:queue_compute:ratio"
"""NVIDIA's Triton autoscaling tutorial: queue time over compute time, per model and pod."""
REQUESTS_IN_FLIGHT = "triton:llm_requests_in_flight:sum"
KV_CACHE_UTILISATION = "triton:llm_kv_cache_utilisation:ratio"
TTFT_P95_SECONDS = "inference:time_to_first_token_seconds:p95"
QUEUE_SECONDS_PER_REQUEST = "inference:queue_seconds_per_request:rate5m"
INTER_TOKEN_SECONDS = "inference:inter_token_seconds:p95"
OUTPUT_TOKENS_PER_SECOND = "inference:output_tokens:rate5m"
PREFIX_CACHE_HIT_RATIO = "inference:prefix_cache_hit:ratio5m"

_LABEL_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")


@dataclass(frozen=True, kw_only=True)
class Scope:
    """The series of one inference workload, as its ServiceMonitor labels them."""

    namespace: str
    """Required. The workload's namespace (the scrape adds ``namespace``)."""
    job: str
    """Required. The Service's name (a ServiceMonitor sets ``job`` to it)."""
    backend: Literal["tensorrtllm", "neuron"] = "tensorrtllm"
    """Default ``tensorrtllm``. ``neuron``: the LLM step is ``neuron_llm``, which has no paged KV cache
    and publishes its request gauges as ``neuron_llm_request_metrics``."""

    @property
    def llm_model(self) -> str:
        """The repository's LLM step (serving settings' ``llm_model_name``)."""
        return "neuron_llm" if self.backend == "neuron" else "tensorrt_llm"

    @property
    def request_metrics(self) -> str:
        return NEURON_LLM_REQUESTS if self.backend == "neuron" else TRT_LLM_REQUESTS

    @property
    def has_kv_cache_metrics(self) -> bool:
        return self.backend == "tensorrtllm"

    def labels(self, **extra: str) -> dict[str, str]:
        return {"namespace": self.namespace, "job": self.job, **extra}

    def selector(self, **extra: str) -> str:
        """``{namespace="...",job="...",...}`` for this workload, plus ``extra`` matchers."""
        return selector(self.labels(**extra))


def selector(matchers: Mapping[str, str]) -> str:
    """A PromQL selector; a value starting with ``=~`` or ``!=`` keeps its operator."""
    parts = []
    for name, value in matchers.items():
        if not _LABEL_NAME.match(name):
            raise ValueError(f"{name!r} is not a Prometheus label name")
        op = "="
        for prefix in ("=~", "!~", "!="):
            if value.startswith(prefix):
                op, value = prefix, value[len(prefix) :]
                break
        parts.append(f"{name}{op}{_quote(value)}")
    return "{" + ",".join(parts) + "}"


def _quote(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def requests_in_flight(scope: Scope) -> str:
    """Requests the LLM step holds (active in the batch + waiting for a slot), summed over replicas."""
    return f"sum({scope.request_metrics}{scope.selector(model=scope.llm_model, request_type='=~active|waiting')})"


def kv_cache_utilisation(scope: Scope) -> str:
    """Used over allocated KV-cache blocks across replicas (0-1)."""
    used = f"sum({TRT_LLM_KV_CACHE}{scope.selector(model=scope.llm_model, kv_cache_block_type='used')})"
    total = f"sum({TRT_LLM_KV_CACHE}{scope.selector(model=scope.llm_model, kv_cache_block_type='max')})"
    return f"{used} / clamp_min({total}, 1)"


def queue_compute_ratio(scope: Scope) -> str:
    """Sum over replicas of NVIDIA's recorded queue/compute ratio for the LLM step."""
    return f"sum({QUEUE_COMPUTE_RATIO}{scope.selector(model=scope.llm_model)})"


def server_quantile(histogram: str, level: float, scope: Scope, window: str) -> str:
    """The ``level`` quantile of one of the OpenAI server's histograms over ``window``, per workload and model."""
    return (
        f"histogram_quantile({level:g}, sum by (namespace, job, {server.MODEL_LABEL}, le) "
        f"(rate({histogram}_bucket{scope.selector()}[{window}])))"
    )
