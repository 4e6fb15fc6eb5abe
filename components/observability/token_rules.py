"""Charged against served, per client (issue 30): recording rules for the tokens the edge debited and the tokens
the replicas served, and the alert when they drift apart.

- Charged: the rate-limit service's ``total_hits`` of each client's first token rule (every window rule of a client
  is charged the same metered tokens, at stream end: ``components.edge.token_limits``), as Envoy Gateway's statsd
  exporter publishes it: ``ratelimit_service_rate_limit_total_hits{domain, key1, key2}`` with ``key1`` =
  ``<rule name>_<rule name>`` (``internal/infrastructure/kubernetes/ratelimit/statsd_conf.yaml`` v1.9.0; its own
  dashboard reads it so, ``charts/gateway-addons-helm/dashboards/global-ratelimit.json``). The rule names are the
  plan's, so each client is a ``label_replace`` of its own rule's series.
- Served: the OpenAI server's ``vllm:prompt_tokens_total + vllm:generation_tokens_total`` by ``client`` (the edge's
  client id; a stream the client left is counted at the usage it was last reported with, as the edge charges it),
  for the metered clients only (the batch lane's workers call the replicas directly, as client ``none``). With
  weights (``edge.tokenLimits.weights``) other than 1, the served tokens are weighted as the edge charges them:
  uncached prompt, cached prompt (``vllm:prefix_cache_hits_total``) and generated tokens each at its weight.
  A client whose only limit is its monthly budget is charged at that rule, which the batch lane debits too
  (``batch.budget``): its served side adds its ``batch_tokens_total`` at the batch weight.

The alert fires when, for a client, ``|charged - served| / served`` stays above ``TOKEN_DRIFT_RATIO`` over the
window: a metering gap (a path that reaches a replica without being charged: the Lua disabled, the usage comment
lost, the rate-limit service unreachable, the request free) or a double charge. A client charged while nothing is
served, or served while nothing is charged, has a ratio of 1.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from inference_platform.catalog.server_metrics import CLIENT_LABEL
from inference_platform.catalog.token_limits import WEIGHT_SCALE, TokenWeights
from inference_platform.components.observability import promql as q
from inference_platform.components.observability.alerting import alert
from inference_platform.components.observability.promql import Scope

CHARGED_SERIES = "ratelimit_service_rate_limit_total_hits"
BATCH_TOKENS = "batch_tokens_total"
"""The batch workers' exact usage per submitting client (``batch.usage``: ``kind`` prompt, completion, cached)."""
TOKENS_CHARGED = "inference:tokens_charged:rate5m"
TOKENS_SERVED = "inference:tokens_served:rate5m"
TOKEN_DRIFT = "inference:tokens_charged_served_drift:ratio5m"
TOKEN_DRIFT_RATIO = 0.01
"""1 %: what in-flight streams at the window's edges leave (both sides count a stream when it ends)."""
TOKEN_DRIFT_FOR = "30m"
"""Sustained: a long stream charged in one window and served in the next does not page."""
ALERT = "TokensChargedNotServed"


@dataclass(frozen=True, kw_only=True)
class TokenMeter:
    """Where one client's charges are counted: its rule's ``domain`` and ``key1`` in the statsd exporter's labels."""

    client: str
    domain: str
    key1: str
    batch: bool = False
    """Default false. The rule is the client's monthly budget (it has no per-minute or per-day limit), which the
    batch lane debits too (``batch.budget``): its served side adds the client's batch tokens at the batch weight."""


def _served(scope: Scope, clients: str, weights: TokenWeights) -> str:
    """The tokens served to the metered clients per second, weighted as the edge charges them."""
    sel = scope.selector(**{CLIENT_LABEL: f"=~{clients}"})

    def rate(series: str) -> str:
        return f"sum by ({CLIENT_LABEL}) (rate({series}{sel}[5m]))"

    if weights.unit:
        return f"{rate(q.PROMPT_TOKENS)} + {rate(q.GENERATION_TOKENS)}"
    # input * (prompt - cached) + cached * cached + output * generated; a client without cache hits counts 0.
    cached = f"({rate(q.PREFIX_CACHE_HITS)} or {rate(q.PROMPT_TOKENS)} * 0)"
    terms = [
        f"{rate(q.PROMPT_TOKENS)} * {weights.input / WEIGHT_SCALE:g}",
        f"{cached} * {(weights.cached - weights.input) / WEIGHT_SCALE:g}",
        f"{rate(q.GENERATION_TOKENS)} * {weights.output / WEIGHT_SCALE:g}",
    ]
    return " + ".join(terms)


def _batch_served(clients: str, weights: TokenWeights) -> str:
    """The batch lane's tokens per second of ``clients``, weighted as the workers debit them (the batch weight on
    each line's weighted count; the per-line rounding up is below the alarm's tolerance)."""

    def rate(kind: str) -> str:
        return f'sum by ({CLIENT_LABEL}) (rate({BATCH_TOKENS}{{{CLIENT_LABEL}=~"{clients}", kind="{kind}"}}[5m]))'

    scale = weights.batch / WEIGHT_SCALE / WEIGHT_SCALE
    terms = [
        f"{rate('prompt')} * {weights.input * scale:g}",
        f"({rate('cached')} or {rate('prompt')} * 0) * {(weights.cached - weights.input) * scale:g}",
        f"{rate('completion')} * {weights.output * scale:g}",
    ]
    return "(" + " + ".join(terms) + ")"


def token_recording_rules(
    scope: Scope, meters: Sequence[TokenMeter], weights: TokenWeights | None = None
) -> list[dict[str, Any]]:
    charged = " or ".join(
        f"label_replace(sum(rate({CHARGED_SERIES}{q.selector({'domain': m.domain, 'key1': m.key1})}[5m])), "
        f'"{CLIENT_LABEL}", "{m.client}", "", "")'
        for m in meters
    )
    # Only the metered clients: the batch lane's workers reach the replicas without the edge (client "none").
    clients = "|".join(sorted({m.client for m in meters}))
    weights = weights or TokenWeights()
    served = _served(scope, clients, weights)
    batch = sorted({m.client for m in meters if m.batch})
    if batch:
        # A side with no series is 0 here too: a budget-only client that sends no batch is served its interactive
        # tokens alone.
        lane = _batch_served("|".join(batch), weights)
        served = f"(({served}) or {lane} * 0) + ({lane} or ({served}) * 0)"
    # A side with no series is 0, so a client charged and never served (or served and never charged) counts.
    both_charged = f"({TOKENS_CHARGED} or {TOKENS_SERVED} * 0)"
    both_served = f"({TOKENS_SERVED} or {TOKENS_CHARGED} * 0)"
    return [
        {"record": TOKENS_CHARGED, "expr": charged},
        {"record": TOKENS_SERVED, "expr": served},
        {
            "record": TOKEN_DRIFT,
            "expr": f"abs({both_charged} - {both_served}) / clamp_min({both_served}, 1)",
        },
    ]


def token_alerts(runbook_base: str) -> list[dict[str, Any]]:
    return [
        alert(
            ALERT,
            f"{TOKEN_DRIFT} > {TOKEN_DRIFT_RATIO:g}",
            for_=TOKEN_DRIFT_FOR,
            severity="critical",
            summary="Tokens charged at the edge differ from tokens served",
            description=(
                "Client {{ $labels.client }}: the edge debited and the replicas served tokens "
                f"{{{{ $value | humanizePercentage }}}} apart for {TOKEN_DRIFT_FOR}: requests reach a replica "
                "without being charged, or are charged twice."
            ),
            runbook_base=runbook_base,
        )
    ]


def token_rule_groups(
    name: str, scope: Scope, meters: Sequence[TokenMeter], runbook_base: str, weights: TokenWeights | None = None
) -> list[dict[str, Any]]:
    """The group of the charged-vs-served rules (none without metered clients)."""
    if not meters:
        return []
    rules = [*token_recording_rules(scope, meters, weights), *token_alerts(runbook_base)]
    return [{"name": f"{name}.tokens", "rules": rules}]
