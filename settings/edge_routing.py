"""``inference-platform:edge.routing``: how the edge picks a replica (issue 29, the request scheduler).

``mode`` is one of ``inference-pool`` (llm-d's endpoint picker; the production default), ``envoy`` (prefix
affinity computed at the edge, consistent hash with a load bound; the development default) or ``round-robin``
(every replica in turn, for comparison). The modes and what each renders: ``catalog/edge_routing.py``,
docs/edge.md "Routing".
"""

from __future__ import annotations

from pydantic import Field

from inference_platform.catalog.edge_routing import (
    DEFAULT_LOAD_BOUND_PERCENT,
    DEFAULT_PREFIX_TOKENS,
    DEVELOPMENT_DEFAULT_MODE,
    MAX_LOAD_BOUND_PERCENT,
    MAX_PREFIX_TOKENS,
    MIN_LOAD_BOUND_PERCENT,
    MIN_PREFIX_TOKENS,
    PRODUCTION_DEFAULT_MODE,
    Routing,
    RoutingMode,
)
from inference_platform.settings.base import Section


class RoutingSettings(Section):
    mode: RoutingMode | None = None
    """Default: ``inference-pool`` in production, ``envoy`` in development. ``inference-pool`` | ``envoy`` |
    ``round-robin``."""
    prefix_tokens: int = Field(default=DEFAULT_PREFIX_TOKENS, ge=MIN_PREFIX_TOKENS, le=MAX_PREFIX_TOKENS)
    """Default 256, 16-8192. ``envoy`` mode: tokens' worth of prompt (4 bytes a token) hashed into the affinity
    key; a shorter prompt gets no key and a random replica under the load bound."""
    per_tenant: bool = False
    """Default ``false``. ``envoy`` mode: salt the key with the caller's credential, so one client's timing never
    reveals another's cached prefix (reuse only within a client)."""
    load_bound_percent: int = Field(
        default=DEFAULT_LOAD_BOUND_PERCENT, ge=MIN_LOAD_BOUND_PERCENT, le=MAX_LOAD_BOUND_PERCENT
    )
    """Default 150, 100-1000. ``envoy`` mode: a replica takes a hashed request only while it holds at most this
    percentage of the average requests in flight (Envoy's hash_balance_factor)."""

    def resolved_mode(self, environment: str) -> RoutingMode:
        if self.mode is not None:
            return self.mode
        return PRODUCTION_DEFAULT_MODE if environment == "production" else DEVELOPMENT_DEFAULT_MODE

    def routing(self, environment: str) -> Routing:
        return Routing(
            mode=self.resolved_mode(environment),
            prefix_tokens=self.prefix_tokens,
            per_tenant=self.per_tenant,
            load_bound_percent=self.load_bound_percent,
        )
