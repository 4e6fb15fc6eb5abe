"""The charged-vs-served rules' meters of a stack (issue 30): where the rate-limit service counts each metered
client's charges, from the stack's own edge policy and the Gateway's names (``components.edge.token_limits``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from inference_platform.components.edge.gateway import NAMESPACE
from inference_platform.components.edge.token_limits import charge_meters, cluster_domain
from inference_platform.components.observability.token_rules import TokenMeter

if TYPE_CHECKING:
    from inference_platform.settings import Settings


def token_meters(settings: Settings, gateway: str) -> tuple[TokenMeter, ...]:
    """``gateway``: the Gateway's name (its BackendTrafficPolicy is ``<gateway>-backend`` in Envoy Gateway's
    namespace)."""
    from inference_platform.settings.derived import stack_edge_policy

    policy = stack_edge_policy(settings)
    domain = cluster_domain(NAMESPACE, gateway)
    return tuple(
        TokenMeter(client=client, domain=domain, key1=f"{name}_{name}")
        for client, name in charge_meters(policy, domain)
    )
