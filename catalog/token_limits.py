"""Token limits per client, as plain data both edge renderings read (issue 30): how many tokens (prompt +
completion, as the edge meters them: ``components.edge.token_metering``) a client may be charged per minute, per
day and per calendar month (its budget), and whether the limits refuse or only count (shadow mode).

The month is the billing period, a calendar month in UTC, not the rate-limit service's ``Month`` (a 30-day window
aligned to the Unix epoch: ``envoyproxy/ratelimit`` ``src/utils/utilities.go`` ``UnitToDivider``): the edge carries
the period (``YYYY-MM``) in a request header it sets itself (``PERIOD_HEADER``), the budget's rule counts each
distinct period apart and its window is the service's ``Year``, so the counter of a period starts at 0 on the
month's first request. The one place a 365-day Year window ends inside a month (00:00 UTC on 17 or 18 December,
``year_window_restart``) restarts that December's counter: December's budget is then counted in two parts.

No Pulumi, no I/O; ``settings.token_limits`` builds it from the stack's ``edge.tokenLimits``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

METERING_NAMESPACE = "io.inference.metering"
"""The dynamic-metadata namespace the edge's metering script writes and the token rules charge from
(``components.edge.token_metering``)."""
# Envoy Gateway v1.9.0 RateLimitValue.requests: uint32, "requests (or cost units, when used with cost-based rate
# limiting) allowed per Unit" (api/v1alpha1/ratelimit_types.go); the rate-limit service's requests_per_unit is a
# uint32 too (envoyproxy/ratelimit src/config/config_impl.go).
MAX_TOKENS_PER_WINDOW = 2**32 - 1
WINDOWS = ("Minute", "Day", "Month")
"""The windows a token limit is set for, shortest first: Envoy Gateway's RateLimitUnit words, but ``Month`` is the
calendar month (rendered as the period descriptor over the ``Year`` unit, ``MONTH_RULE_UNIT``)."""
MONTH = "Month"
MONTH_RULE_UNIT = "Year"
"""The rate-limit unit the calendar-month budget's rule runs on (its period descriptor does the monthly reset)."""
PERIOD_HEADER = "x-inference-period"
"""Set by the edge's metering script on every request, overwriting the client's: the billing period, ``YYYY-MM``
in UTC (Lua ``os.date("!%Y-%m")``)."""
YEAR_SECONDS = 31_536_000
"""``envoyproxy/ratelimit`` ``UnitToDivider`` YEAR: 365 days, windows aligned to the Unix epoch."""


def year_window_restart(year: int, month: int) -> datetime | None:
    """The rate-limit service's Year window boundary inside this calendar month (UTC), if one falls there: the
    moment that month's budget counter restarts at 0."""
    start = datetime(year, month, 1, tzinfo=UTC)
    end = datetime(year + month // 12, month % 12 + 1, 1, tzinfo=UTC)
    boundary = -(-int(start.timestamp()) // YEAR_SECONDS) * YEAR_SECONDS
    return datetime.fromtimestamp(boundary, tz=UTC) if boundary < end.timestamp() else None


@dataclass(frozen=True, kw_only=True)
class ClientTokenLimits:
    """One client's token limits; None: no limit in that window."""

    client_id: str
    tokens_per_minute: int | None = None
    """Tokens one client may be charged per minute (a burst bound; fixed windows aligned to the minute)."""
    tokens_per_day: int | None = None
    """Tokens per day (fixed windows aligned to 00:00 UTC: the rate-limit service's DAY)."""
    tokens_per_month: int | None = None
    """The monthly budget: tokens per calendar month in UTC (the billing period)."""

    def __post_init__(self) -> None:
        for window, value in self.windows:
            if not 0 <= value <= MAX_TOKENS_PER_WINDOW:
                raise ValueError(f"{self.client_id}: tokens per {window.lower()} {value} out of range")

    @property
    def windows(self) -> tuple[tuple[str, int], ...]:
        """(unit, tokens) of each limit set, shortest window first."""
        values = (self.tokens_per_minute, self.tokens_per_day, self.tokens_per_month)
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
