"""Token limits per client, as plain data both edge renderings read (issue 30): how many tokens (prompt +
completion, as the edge meters them: ``components.edge.token_metering``) a client may be charged per minute and
per day, and whether the limits refuse or only count (shadow mode).

No Pulumi, no I/O; ``settings.token_limits`` builds it from the stack's ``edge.tokenLimits``.
"""

from __future__ import annotations

from dataclasses import dataclass

METERING_NAMESPACE = "io.inference.metering"
"""The dynamic-metadata namespace the edge's metering script writes and the token rules charge from
(``components.edge.token_metering``)."""
# Envoy Gateway v1.9.0 RateLimitValue.requests: uint32, "requests (or cost units, when used with cost-based rate
# limiting) allowed per Unit" (api/v1alpha1/ratelimit_types.go); the rate-limit service's requests_per_unit is a
# uint32 too (envoyproxy/ratelimit src/config/config_impl.go).
MAX_TOKENS_PER_WINDOW = 2**32 - 1
WINDOWS = ("Minute", "Day")
"""The windows a token limit is set for, in Envoy Gateway's RateLimitUnit words, shortest first."""


@dataclass(frozen=True, kw_only=True)
class ClientTokenLimits:
    """One client's token limits; None: no limit in that window."""

    client_id: str
    tokens_per_minute: int | None = None
    """Tokens one client may be charged per minute (a burst bound; fixed windows aligned to the minute)."""
    tokens_per_day: int | None = None
    """Tokens per day (fixed windows aligned to 00:00 UTC: the rate-limit service's DAY)."""

    def __post_init__(self) -> None:
        for window, value in self.windows:
            if not 0 <= value <= MAX_TOKENS_PER_WINDOW:
                raise ValueError(f"{self.client_id}: tokens per {window.lower()} {value} out of range")

    @property
    def windows(self) -> tuple[tuple[str, int], ...]:
        """(unit, tokens) of each limit set, shortest window first."""
        values = (self.tokens_per_minute, self.tokens_per_day)
        return tuple((unit, v) for unit, v in zip(WINDOWS, values, strict=True) if v is not None)


@dataclass(frozen=True, kw_only=True)
class TokenPolicy:
    """Every client's token limits; empty: no token limit, no metering."""

    clients: tuple[ClientTokenLimits, ...] = ()
    shadow: bool = False
    """Default false. Count and report, never refuse (Envoy Gateway's ``shadowMode``): for rollout."""

    @property
    def limited(self) -> tuple[ClientTokenLimits, ...]:
        """The clients with at least one limit, in order."""
        return tuple(c for c in self.clients if c.windows)

    def limits(self) -> dict[str, dict[str, int]]:
        """``{client: {unit: tokens}}``: what both renderings must enforce."""
        return {c.client_id: dict(c.windows) for c in self.limited}
