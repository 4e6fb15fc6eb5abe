"""Cost: accelerator-hours and an estimate of dollars per million output tokens.

Prices come from the catalog (inference_platform.catalog, us-east-1 on-demand list prices dated PRICE_DATE):
the node count per instance type (kube-state-metrics' ``kube_node_labels`` with the
``node.kubernetes.io/instance-type`` label allowed) times the hourly price, summed. Spot and reserved
capacity cost less, so the figure is an upper bound; the tokens are the LLM step's output tokens.
"""

from __future__ import annotations

from typing import Any

from inference_platform import catalog
from inference_platform.components.observability import promql as q
from inference_platform.components.observability.dashboards.panels import RATE, dashboard, series, single

UID = "inference-cost"
TYPE_LABEL = "label_node_kubernetes_io_instance_type"


def priced_types() -> list[catalog.InstanceType]:
    return [t for t in (catalog.instance(n) for n in catalog.known_instance_types()) if t.accelerator_count]


def _per_type(value: Any) -> str:
    """One vector of per-node values by instance type, as a PromQL ``or`` of literal-scaled selectors."""
    parts = [f'{q.NODE_LABELS}{{{TYPE_LABEL}="{t.name}"}} * {value(t):g}' for t in priced_types()]
    return "sum(" + " or ".join(f"({p})" for p in parts) + ")"


def dollars_per_hour() -> str:
    return _per_type(lambda t: t.price_per_hour_usd)


def accelerators() -> str:
    return _per_type(lambda t: t.accelerator_count)


def build() -> Any:
    tokens_per_hour = f"sum(rate({q.GENERATION_TOKENS}[{RATE}])) * 3600"
    return (
        dashboard(
            UID,
            "Inference: cost",
            f"Accelerator-hours and $/M output tokens from on-demand list prices "
            f"({catalog.PRICE_REGION}, {catalog.PRICE_DATE}); spot and reservations cost less.",
            ["cost"],
        )
        .with_panel(single("Accelerators running", accelerators()))
        .with_panel(single("$/hour (on-demand list)", dollars_per_hour(), unit="currencyUSD"))
        .with_panel(
            single(
                "$ per million output tokens",
                f"{dollars_per_hour()} / clamp_min({tokens_per_hour} / 1e6, 1e-9)",
                unit="currencyUSD",
                description="Hourly price of the accelerator nodes over the output tokens of the same hour.",
            )
        )
        .with_panel(
            single("Accelerator-hours (range)", f"sum_over_time(({accelerators()})[$__range:5m]) / 12", unit="short")
        )
        .with_panel(
            series(
                "Accelerators by pool",
                [
                    (
                        f'sum by (label_node_pool) ({q.NODE_LABELS}{{label_accelerator=~"nvidia|neuron"}})',
                        "nodes {{label_node_pool}}",
                    )
                ],
            )
        )
        .with_panel(series("$/hour over time", [(dollars_per_hour(), "on-demand $/h")], unit="currencyUSD"))
        .build()
    )
