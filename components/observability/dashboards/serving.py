"""The serving dashboard: TTFT, inter-token latency, tokens/s, queue, batch and KV cache, per model."""

from __future__ import annotations

from typing import Any

from inference_platform.components.observability import promql as q
from inference_platform.components.observability.dashboards import rollouts
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
S = f'{W},model_name=~"$served"'
"""The OpenAI server's series (vLLM's names) carry model_name, the served model id; Triton's carry model."""


def build() -> Any:
    llm_requests = f'{{__name__=~"{q.TRT_LLM_REQUESTS}|{q.NEURON_LLM_REQUESTS}",{W}}}'
    built = (
        dashboard(
            UID,
            "Inference: serving",
            "Triton + TensorRT-LLM per model: latency, throughput, queue, batch, KV cache and replicas.",
            ["serving"],
        )
        .with_variable(label_variable("namespace", "namespace", q.REQUEST_SUCCESS))
        .with_variable(label_variable("model", "model", q.REQUEST_SUCCESS, depends=W))
        .with_variable(label_variable("served", "model_name", q.REQUEST_OUTCOMES, depends=W))
        .with_panel(single("Requests/s", f"sum(rate({q.REQUEST_OUTCOMES}{{{S}}}[{RATE}]))", unit="reqps"))
        .with_panel(single("Output tokens/s", f"sum(rate({q.GENERATION_TOKENS}{{{S}}}[{RATE}]))", unit="short"))
        .with_panel(
            single("Requests in flight", f'sum({llm_requests[:-1]},request_type=~"active|waiting"}})', unit="short")
        )
        .with_panel(single("Replicas", f"count(count by (pod) ({q.REQUEST_SUCCESS}{{{W}}}))", unit="short"))
        .with_panel(
            series(
                "Time to first token",
                [
                    (_quantile(0.5, q.TTFT_SECONDS), "p50 {{model_name}}"),
                    (_quantile(0.95, q.TTFT_SECONDS), "p95 {{model_name}}"),
                ],
                unit="s",
                description="The OpenAI server's histogram, from each request's arrival to its first token.",
            )
        )
        .with_panel(
            series(
                "Inter-token latency",
                [
                    (_quantile(0.5, q.INTER_TOKEN_SECONDS_HISTOGRAM), "p50 {{model_name}}"),
                    (_quantile(0.95, q.INTER_TOKEN_SECONDS_HISTOGRAM), "p95 {{model_name}}"),
                ],
                unit="s",
                description="The OpenAI server's histogram of the gaps between successive tokens.",
            )
        )
        .with_panel(
            series(
                "Tokens/s",
                [
                    (f"sum by (model_name) (rate({q.GENERATION_TOKENS}{{{S}}}[{RATE}]))", "output {{model_name}}"),
                    (f"sum by (model_name) (rate({q.PROMPT_TOKENS}{{{S}}}[{RATE}]))", "prompt {{model_name}}"),
                    (f"sum by (model_name) (rate({q.PREFIX_CACHE_HITS}{{{S}}}[{RATE}]))", "cached {{model_name}}"),
                ],
                unit="short",
            )
        )
        .with_panel(
            series(
                "Requests/s by outcome and client",
                [
                    (f"sum by (finished_reason) (rate({q.REQUEST_OUTCOMES}{{{S}}}[{RATE}]))", "{{finished_reason}}"),
                    (f"sum by (status) (rate({q.HTTP_REQUESTS}{{{W}}}[{RATE}]))", "HTTP {{status}}"),
                    (f"sum by (client) (rate({q.REQUEST_OUTCOMES}{{{S}}}[{RATE}]))", "client {{client}}"),
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
                    (f"{q.QUEUE_SECONDS_PER_REQUEST}{{{S}}}", "queue s {{model_name}}"),
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
    )
    for panel in rollouts.panels():  # each version of a model side by side (a canary's promotion, rollback)
        built = built.with_panel(panel)
    return built.build()


def _quantile(level: float, histogram: str) -> str:
    return f"histogram_quantile({level}, sum by (model_name, le) (rate({histogram}_bucket{{{S}}}[{RATE}])))"
