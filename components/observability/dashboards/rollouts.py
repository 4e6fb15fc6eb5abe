"""The serving dashboard's rollout panels (issue 32): each version of a model side by side, so a canary's
promotion (its share rising step by step) and rollback (its share falling to 0) are seen with the figures the
gate judged (inferctl/verify/canary_live.py): TTFT p95, ITL p95 and the error ratio per version.

A version is its Service: the ServiceMonitor's ``job`` label (``triton`` for the stack's own model,
``triton-<model>`` and ``triton-<model>-<version>`` for the others and the canary; settings/models.py
``ModelRollout.service_name``). The canary and its current version share one ``model_name``.
"""

from __future__ import annotations

from typing import Any

from inference_platform.catalog import server_metrics as m
from inference_platform.catalog.serving_contract import OPENAI_CHAT_PATH, OPENAI_COMPLETIONS_PATH
from inference_platform.components.observability import promql as q
from inference_platform.components.observability.dashboards.panels import RATE, series

W = 'namespace=~"$namespace"'
S = f'{W},model_name=~"$served"'
GENERATION = f'handler=~"{OPENAI_CHAT_PATH}|{OPENAI_COMPLETIONS_PATH}"'
FINISHED = f"{m.E2E_SECONDS}_count"
"""Requests the server finished (one per request, whatever ``n``), by model_name and version."""


def panels() -> list[Any]:
    by_version = f"sum by (model_name, job) (rate({FINISHED}{{{S}}}[{RATE}]))"
    share = f"{by_version} / on (model_name) group_left () sum by (model_name) (rate({FINISHED}{{{S}}}[{RATE}]))"
    judged = f'sum by (job) (rate({q.HTTP_REQUESTS}{{{W},{GENERATION},status!="4xx"}}[{RATE}]))'
    # By status and finish reason, not matched on "5xx"/"error": those series exist only once a failure did.
    statuses = f"sum by (job, status) (rate({q.HTTP_REQUESTS}{{{W},{GENERATION}}}[{RATE}]))"
    reasons = f"sum by (job, finished_reason) (rate({q.REQUEST_OUTCOMES}{{{S}}}[{RATE}]))"
    return [
        series(
            "Rollouts: share of each model's requests by version",
            [(share, "{{model_name}} {{job}}")],
            unit="percentunit",
            description="A canary's share follows models.canary.weight: it rises at each promotion and falls to 0 "
            "at a rollback (the gate's decisions are also Events on the verification Job: reason Canary*).",
        ),
        series(
            "Rollouts: TTFT p95 and ITL p95 by version",
            [
                (_quantile(q.TTFT_SECONDS), "TTFT {{model_name}} {{job}}"),
                (_quantile(q.INTER_TOKEN_SECONDS_HISTOGRAM), "ITL {{model_name}} {{job}}"),
            ],
            unit="s",
            description="What the canary gate compares (models.canary.gate.maxTtftRatio, maxItlRatio).",
        ),
        series(
            "Rollouts: outcomes by version",
            [
                (f"{statuses} / on (job) group_left () clamp_min({judged}, 1e-9)", "HTTP {{status}} {{job}}"),
                (f"{reasons} / on (job) group_left () clamp_min({judged}, 1e-9)", "{{finished_reason}} {{job}}"),
            ],
            unit="percentunit",
            description="Each HTTP status class and finish reason over the requests the server judged (4xx "
            "excluded): the gate's error ratio is the 5xx share plus the error share.",
        ),
    ]


def _quantile(histogram: str) -> str:
    return f"histogram_quantile(0.95, sum by (model_name, job, le) (rate({histogram}_bucket{{{S}}}[{RATE}])))"
