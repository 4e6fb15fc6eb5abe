"""The serving dashboard: TTFT, inter-token latency, tokens/s, queue, batch and KV cache, per model."""

from __future__ import annotations

from typing import Any

from inference_platform.components.observability import promql as q
from inference_platform.components.observability.dashboards.panels import (
    RATE,
    dashboard,
    label_variable,
    series,
    single,
)

UID = "inference-serving"
W = 'namespace=~"$namespace"'
M = f'{W},model=~"$model"'


def build() -> Any:
    llm_requests = f'{{__name__=~"{q.TRT_LLM_REQUESTS}|{q.NEURON_LLM_REQUESTS}",{W}}}'
    return (
        dashboard(
            UID,
            "Inference: serving",
            "Triton + TensorRT-LLM per model: latency, throughput, queue, batch, KV cache and replicas.",
            ["serving"],
        )
        .with_variable(label_variable("namespace", "namespace", q.REQUEST_SUCCESS))
        .with_variable(label_variable("model", "model", q.REQUEST_SUCCESS, depends=W))
        .with_panel(single("Requests/s", f"sum(rate({q.REQUEST_SUCCESS}{{{M}}}[{RATE}]))", unit="reqps"))
        .with_panel(single("Output tokens/s", f"sum(rate({q.LLM_OUTPUT_TOKENS}_sum{{{W}}}[{RATE}]))", unit="short"))
        .with_panel(
            single("Requests in flight", f'sum({llm_requests[:-1]},request_type=~"active|waiting"}})', unit="short")
        )
        .with_panel(single("Replicas", f"count(count by (pod) ({q.REQUEST_SUCCESS}{{{W}}}))", unit="short"))
        .with_panel(
            series(
                "Time to first token",
                [
                    (_quantile(0.5), "p50 {{model}}"),
                    (_quantile(0.95), "p95 {{model}}"),
                ],
                unit="s",
                description="Triton's first-response histogram (--metrics-config histogram_latencies=true).",
            )
        )
        .with_panel(
            series(
                "Inter-token latency (mean)",
                [(f"{q.INTER_TOKEN_SECONDS}{{{W}}}", "{{job}}")],
                unit="s",
                description="(request time - first response) / (tokens - 1) over 5 min; no backend publishes an "
                "inter-token histogram, so this is the mean, a lower bound of p95.",
            )
        )
        .with_panel(
            series(
                "Tokens/s",
                [
                    (f"sum by (model) (rate({q.LLM_OUTPUT_TOKENS}_sum{{{W}}}[{RATE}]))", "output {{model}}"),
                    (f"sum by (model) (rate({q.LLM_INPUT_TOKENS}_sum{{{W}}}[{RATE}]))", "input {{model}}"),
                ],
                unit="short",
            )
        )
        .with_panel(
            series(
                "Requests/s by model",
                [
                    (f"sum by (model) (rate({q.REQUEST_SUCCESS}{{{M}}}[{RATE}]))", "ok {{model}}"),
                    (f"sum by (model) (rate({q.REQUEST_FAILURE}{{{M}}}[{RATE}]))", "failed {{model}}"),
                ],
                unit="reqps",
            )
        )
        .with_panel(
            series(
                "Queue: requests waiting and active",
                [
                    (
                        f'sum by (pod, request_type) ({llm_requests[:-1]},request_type=~"active|waiting"}})',
                        "{{request_type}} {{pod}}",
                    )
                ],
                unit="short",
            )
        )
        .with_panel(
            series(
                "Queue time per request and queue/compute ratio",
                [
                    (f"{q.QUEUE_SECONDS_PER_REQUEST}{{{M}}}", "queue s {{model}}"),
                    (f"sum by (model) ({q.QUEUE_COMPUTE_RATIO}{{{M}}})", "queue/compute {{model}}"),
                ],
                unit="short",
            )
        )
        .with_panel(
            series(
                "Batch",
                [
                    (
                        f'sum by (pod) ({llm_requests[:-1]},request_type="active"}})'
                        f' / sum by (pod) ({llm_requests[:-1]},request_type="max"}})',
                        "slots used {{pod}}",
                    ),
                    (
                        f"sum by (model) (rate({q.INFERENCE_COUNT}{{{M}}}[{RATE}]))"
                        f" / sum by (model) (rate({q.EXEC_COUNT}{{{M}}}[{RATE}]))",
                        "Triton batch {{model}}",
                    ),
                ],
                unit="short",
                description="In-flight batch slots used (active / max) and Triton's inferences per execution.",
            )
        )
        .with_panel(
            series(
                "KV cache",
                [(f"{q.KV_CACHE_UTILISATION}{{{W}}}", "{{pod}}")],
                unit="percentunit",
                description="Used / allocated KV-cache blocks per replica (TensorRT-LLM).",
            )
        )
        .with_panel(
            series(
                "Replicas: current and desired (HPA)",
                [
                    (f"{q.HPA_CURRENT}{{{W}}}", "current {{horizontalpodautoscaler}}"),
                    (
                        f"kube_horizontalpodautoscaler_status_desired_replicas{{{W}}}",
                        "desired {{horizontalpodautoscaler}}",
                    ),
                ],
                unit="short",
            )
        )
        .build()
    )


def _quantile(level: float) -> str:
    return (
        f"histogram_quantile({level}, sum by (model, le) "
        f"(rate({q.FIRST_RESPONSE_HISTOGRAM_MS}_bucket{{{M}}}[{RATE}]))) / 1000"
    )
