"""The charged-vs-served rules' meters of a stack (issue 30): where the rate-limit service counts each metered
client's charges, from the stack's own edge policy (the program's: it reads the settings) and the Gateway's names (``components.edge.token_limits``)."""

from __future__ import annotations

from inference_platform.catalog.token_limits import MONTH
from inference_platform.components.edge.gateway import NAMESPACE
from inference_platform.components.edge.token_limits import charge_meters, cluster_domain
from inference_platform.components.observability.token_rules import TokenMeter
from inference_platform.settings import Settings
from inference_platform.settings.derived import stack_edge_policy


def token_meters(settings: Settings, gateway: str) -> tuple[TokenMeter, ...]:
    """``gateway``: the Gateway's name (its BackendTrafficPolicy is ``<gateway>-backend`` in Envoy Gateway's
    namespace)."""
    policy = stack_edge_policy(settings)
    domain = cluster_domain(NAMESPACE, gateway)
    # A client whose only limit is its monthly budget is metered at that rule, which the batch lane debits too.
    budget_only = {c.client_id for c in policy.tokens.limited if [w for w, _ in c.windows] == [MONTH]}
    return tuple(
        TokenMeter(client=client, domain=domain, key1=f"{name}_{name}", batch=client in budget_only)
        for client, name in charge_meters(policy, domain)
    )
