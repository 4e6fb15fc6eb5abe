"""The first-response (TTFT) histogram buckets a served model's ``config.pbtxt`` overrides, in one place for the
LLM-API repository (GPU pods and the offline plan's rendered repository) and the engine flow's until it goes."""

from __future__ import annotations

from inference_platform.catalog.serving_contract import TTFT_BUCKETS_MS, TTFT_HISTOGRAM_FAMILY
from inference_platform.settings.serving import ServingSettings


def ttft_buckets_ms(serving: ServingSettings) -> tuple[float, ...]:
    """The contract's LLM buckets plus the stack's own TTFT SLO values, ascending."""
    slo = serving.slo
    return tuple(sorted({float(b) for b in TTFT_BUCKETS_MS} | {slo.ttft_p50_ms, slo.ttft_p95_ms}))


def model_metrics_block(buckets: tuple[float, ...]) -> str:
    """``model_metrics`` (ModelConfig since Triton 24.11, common r24.11) overriding the first-response histogram's buckets."""
    bounds = ", ".join(f"{b:g}" for b in buckets)
    return (
        "model_metrics {\n"
        "  metric_control [\n"
        "    {\n"
        f'      metric_identifier {{ family: "{TTFT_HISTOGRAM_FAMILY}" }}\n'
        f"      histogram_options {{ buckets: [ {bounds} ] }}\n"
        "    }\n"
        "  ]\n"
        "}\n"
    )
