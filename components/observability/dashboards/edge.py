"""The edge: requests, 401, 429 and 5xx through Envoy Gateway, per route and per client, and the endpoint picker's
picks where the stack routes through it.

Envoy's own statistics (``envoy_cluster_*``, ``envoy_http_*``) count per route cluster and listener;
Envoy has no per-client statistic, so the per-client panels read the global rate-limit service's
counters (``ratelimit_service_rate_limit_*``, one descriptor per client id, label ``key2``). A
rejected API key has no client id by definition: 401s are counted per listener.
"""

from __future__ import annotations

from typing import Any

from inference_platform.catalog import endpoint_picker as picker
from inference_platform.components.observability import promql as q
from inference_platform.components.observability.dashboards.panels import (
    RATE,
    dashboard,
    label_variable,
    series,
    single,
)

UID = "inference-edge"
ROUTE = 'envoy_cluster_name=~"$route"'
HITS = "ratelimit_service_rate_limit_total_hits"
OVER = "ratelimit_service_rate_limit_over_limit"


def build() -> Any:
    total = f"sum(rate({q.ENVOY_UPSTREAM_RQ_TOTAL}{{{ROUTE}}}[{RATE}]))"
    return (
        dashboard(
            UID,
            "Inference: edge",
            "Envoy Gateway in front of the inference service: traffic, auth "
            "failures, rate limits and errors per route and client.",
            ["edge"],
        )
        .with_variable(
            label_variable(
                "route", "envoy_cluster_name", q.ENVOY_UPSTREAM_RQ_TOTAL, depends='envoy_cluster_name=~"httproute/.*"'
            )
        )
        .with_panel(single("Requests/s", total, unit="reqps"))
        .with_panel(
            single(
                "5xx share",
                f'sum(rate({q.ENVOY_UPSTREAM_RQ_XX}{{{ROUTE},envoy_response_code_class="5"}}[{RATE}])) '
                f"/ clamp_min({total}, 1e-9)",
                unit="percentunit",
            )
        )
        .with_panel(single("429/s", f"sum(rate({q.ENVOY_RATELIMIT_OVER_LIMIT}{{{ROUTE}}}[{RATE}]))", unit="reqps"))
        .with_panel(
            single(
                "401/s",
                f'sum(rate({q.ENVOY_UPSTREAM_RQ}{{{ROUTE},envoy_response_code="401"}}[{RATE}])) or '
                f'sum(rate({q.ENVOY_DOWNSTREAM_RQ_XX}{{envoy_response_code_class="4"}}[{RATE}]))',
                unit="reqps",
            )
        )
        .with_panel(
            series(
                "Requests by route and class",
                [
                    (
                        f"sum by (envoy_cluster_name, envoy_response_code_class) "
                        f"(rate({q.ENVOY_UPSTREAM_RQ_XX}{{{ROUTE}}}[{RATE}]))",
                        "{{envoy_response_code_class}}xx {{envoy_cluster_name}}",
                    )
                ],
                unit="reqps",
            )
        )
        .with_panel(
            series(
                "Requests, 401, 429 and 5xx per client",
                [
                    (f"sum by (key2) (rate({HITS}[{RATE}]))", "requests {{key2}}"),
                    (f"sum by (key2) (rate({OVER}[{RATE}]))", "429 {{key2}}"),
                    (
                        f"sum by (envoy_http_conn_manager_prefix) (rate({q.ENVOY_DOWNSTREAM_RQ_XX}"
                        f'{{envoy_response_code_class="4"}}[{RATE}]))',
                        "4xx (401: no client) {{envoy_http_conn_manager_prefix}}",
                    ),
                    (
                        f"sum by (envoy_cluster_name) (rate({q.ENVOY_UPSTREAM_RQ_XX}{{{ROUTE},"
                        f'envoy_response_code_class="5"}}[{RATE}]))',
                        "5xx {{envoy_cluster_name}}",
                    ),
                ],
                unit="reqps",
                description="Per client: the rate-limit service's descriptors (one per client id). Envoy has no "
                "per-client counters, so 4xx and 5xx are per listener and route.",
            )
        )
        .with_panel(
            series(
                "Upstream time p95 by route",
                [
                    (
                        f"histogram_quantile(0.95, sum by (envoy_cluster_name, le) "
                        f"(rate(envoy_cluster_upstream_rq_time_bucket{{{ROUTE}}}[{RATE}]))) / 1000",
                        "{{envoy_cluster_name}}",
                    )
                ],
                unit="s",
            )
        )
        .with_panel(
            series(
                "Endpoint picker: picks and errors",
                [
                    (f"sum by (status) (rate({picker.SCHEDULER_ATTEMPTS}[{RATE}]))", "picks {{status}}"),
                    (f"sum(rate({picker.DATALAYER_POLL_ERRORS}[{RATE}]))", "metrics unreadable"),
                    (f"sum(rate({picker.DATALAYER_EXTRACT_ERRORS}[{RATE}]))", "metric family missing"),
                ],
                unit="ops",
                description="edge.routing.mode inference-pool only. The picker's picks by outcome, and its failed "
                "reads of the replicas' /metrics (a poll every 50 ms per replica): with errors it scores on stale "
                "queue and KV-cache values.",
            )
        )
        .with_panel(
            series(
                "Endpoint picker: time to a pick",
                [
                    (
                        f"histogram_quantile({quantile}, sum by (le) "
                        f"(rate({picker.REQUEST_PROCESSING}_bucket[{RATE}])))",
                        f"p{int(quantile * 100)}",
                    )
                    for quantile in (0.5, 0.99)
                ],
                unit="s",
                description=f"From a request's receipt to its pick, the whole body read: the gateway waits up to "
                f"{picker.MESSAGE_TIMEOUT} (ext_proc messageTimeout), then sends the request on unpicked.",
            )
        )
        .build()
    )
