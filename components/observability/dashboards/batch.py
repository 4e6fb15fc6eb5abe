"""The asynchronous lane: queue depth, the oldest open batch against its completion window, batch progress,
dead letters, worker outcomes and errors, and when the workers shed for the interactive tier.

Only stacks with the lane deliver it (components.batch.monitoring), so it is not in ``DASHBOARDS``.
"""

from __future__ import annotations

from typing import Any

from grafana_foundation_sdk.builders import dashboard as gd

from inference_platform.components.batch import signals as b
from inference_platform.components.observability.dashboards.panels import RATE, dashboard, series, single

UID = "inference-batch"
FILE_NAME = "inference-batch.json"
NS = 'namespace="$namespace"'


def build(namespace: str = "batch", completion_window_hours: int = 24) -> Any:
    window = completion_window_hours * 3600
    return (
        dashboard(
            UID,
            "Inference: batch lane",
            "The OpenAI Batch API lane: what waits in the queue, how far the open batches are, what failed "
            "and when the workers step back for interactive traffic.",
            ["batch"],
        )
        .with_variable(_namespace(namespace))
        .with_panel(
            single("Queued + in flight", f'max({b.QUEUE_MESSAGES}{{{NS},queue="work",state=~"visible|in_flight"}})')
        )
        .with_panel(single("Dead letters", f'max({b.QUEUE_MESSAGES}{{{NS},queue="dead_letter",state="visible"}})'))
        .with_panel(single("Oldest open batch", f"max({b.OLDEST_OPEN_BATCH_SECONDS}{{{NS}}})", unit="s"))
        .with_panel(
            single(
                "Open batches' progress",
                f'max({b.OPEN_REQUESTS}{{{NS},state="done"}}) / clamp_min(max({b.OPEN_REQUESTS}{{{NS},state="total"}}), 1)',
                unit="percentunit",
            )
        )
        .with_panel(
            series(
                "Queue depth",
                [(f"max by (queue, state) ({b.QUEUE_MESSAGES}{{{NS}}})", "{{queue}} {{state}}")],
            )
        )
        .with_panel(
            series(
                "Oldest open batch vs completion window",
                [
                    (f"max({b.OLDEST_OPEN_BATCH_SECONDS}{{{NS}}})", "oldest open batch"),
                    (f"vector({window})", "completion window"),
                ],
                unit="s",
            )
        )
        .with_panel(
            series(
                "Lines by outcome",
                [(f"sum by (status) (rate({b.REQUESTS}{{{NS}}}[{RATE}]))", "{{status}}")],
                unit="reqps",
            )
        )
        .with_panel(
            series(
                "Worker errors and shedding",
                [
                    (f"sum by (reason) (rate({b.WORKER_ERRORS}{{{NS}}}[{RATE}]))", "errors {{reason}}"),
                    (f"sum({b.SHEDDING}{{{NS}}})", "workers shedding"),
                    (f"sum({b.IN_FLIGHT}{{{NS}}})", "lines in flight"),
                ],
            )
        )
        .with_panel(
            series(
                "Submissions refused over quota (429)",
                [(f"sum by (client, kind) (rate({b.QUOTA_REJECTIONS}{{{NS}}}[{RATE}]))", "{{client}} over {{kind}}")],
                unit="reqps",
            )
        )
        .build()
    )


def _namespace(default: str) -> Any:
    return gd.ConstantVariable("namespace").value(default)
