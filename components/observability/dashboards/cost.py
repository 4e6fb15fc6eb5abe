"""Cost: accelerator-hours and an estimate of dollars per million output tokens, and showback (issue 30): tokens by
client and model on both lanes, and each client's share of the nodes' dollars by the tokens it was served.

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


BATCH_TOKENS = "batch_tokens_total"
"""The batch workers' exact usage per submitting client (``batch.usage``)."""
NO_CLIENT = "none"
"""The client the batch workers' own calls to the replicas carry (their tokens are counted by submitter instead)."""


def _interactive(by: str) -> str:
    sel = f'{{client!="{NO_CLIENT}"}}'
    return f"sum by ({by}) (rate({q.PROMPT_TOKENS}{sel}[{RATE}]) + rate({q.GENERATION_TOKENS}{sel}[{RATE}]))"


def _batch(by: str) -> str:
    return f'sum by ({by}) (rate({BATCH_TOKENS}{{kind=~"prompt|completion"}}[{RATE}]))'


def client_tokens() -> str:
    """Tokens/s per client over both lanes (prompt + completion): the server's counters of the edge's clients and
    the workers' counter by submitting client; a client on one lane only counts too."""
    interactive, batch = _interactive("client"), _batch("client")
    return f"(({interactive}) or ({batch}) * 0) + (({batch}) or ({interactive}) * 0)"


def client_dollars_per_hour() -> str:
    """Each client's share of the accelerator nodes' $/hour: the list price split by the tokens it was served."""
    tokens = client_tokens()
    return f"({tokens}) / scalar(clamp_min(sum({tokens}), 1e-9)) * scalar({dollars_per_hour()})"


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
        .with_panel(
            series(
                "Tokens/s by client and model",
                [
                    (_interactive("client, model_name"), "{{client}} {{model_name}} interactive"),
                    (_batch("client, model_name"), "{{client}} {{model_name}} batch"),
                ],
                description="Prompt + completion tokens: the server's by the edge's client id, the batch workers' "
                "by the client that submitted the batch (inferctl usage prints the month's).",
            )
        )
        .with_panel(
            series(
                "$/hour by client (share of tokens served)",
                [(client_dollars_per_hour(), "{{client}}")],
                unit="currencyUSD",
                description="The accelerator nodes' on-demand list $/hour split by each client's share of the "
                "tokens served on both lanes.",
            )
        )
        .build()
    )
