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


WEIGHT_SCALE = 1000
"""Weights are held in thousandths (``edge.tokenLimits.weights`` takes at most three decimals), so the edge's Lua
and the batch workers compute the same integer charge without floating-point rounding."""
MAX_WEIGHT = 100
"""The largest weight a kind of token may have: 100 times its count (a charge stays far below the rate-limit
service's uint32 limit for any answer the serving limits allow)."""


def ceil_div(numerator: int, denominator: int) -> int:
    return -(-numerator // denominator)


@dataclass(frozen=True, kw_only=True)
class TokenWeights:
    """What one token of each kind costs, in thousandths of a token (``WEIGHT_SCALE``): the input tokens not read
    from the prefix cache, the cached input tokens, the output tokens, and the batch lane's multiplier on the whole.
    All 1000 (the default): a charge is prompt + completion tokens."""

    input: int = WEIGHT_SCALE
    cached: int = WEIGHT_SCALE
    output: int = WEIGHT_SCALE
    batch: int = WEIGHT_SCALE

    def __post_init__(self) -> None:
        for kind in ("input", "cached", "output", "batch"):
            value = getattr(self, kind)
            if not 0 <= value <= MAX_WEIGHT * WEIGHT_SCALE:
                raise ValueError(f"weight of {kind} tokens {value / WEIGHT_SCALE} out of range 0-{MAX_WEIGHT}")

    @property
    def unit(self) -> bool:
        """Every kind weighs 1 on the interactive lane: the charge is prompt + completion tokens."""
        return self.input == self.cached == self.output == WEIGHT_SCALE

    def milli(self, prompt: int, completion: int, cached: int) -> int:
        """The weighted count in thousandths; ``cached`` is part of ``prompt`` (OpenAI's
        ``prompt_tokens_details.cached_tokens``), clamped to it."""
        cached = min(max(cached, 0), prompt)
        return self.input * (prompt - cached) + self.cached * cached + self.output * completion

    def charge(self, prompt: int, completion: int, cached: int = 0) -> int:
        """The tokens the edge charges an interactive answer: the weighted count rounded up (the metering script
        computes the same, ``components.edge.token_metering``)."""
        return ceil_div(self.milli(prompt, completion, cached), WEIGHT_SCALE)

    def batch_charge(self, prompt: int, completion: int, cached: int = 0) -> int:
        """The tokens a batch line's answer is charged: the weighted count times the batch weight, rounded up."""
        return ceil_div(self.milli(prompt, completion, cached) * self.batch, WEIGHT_SCALE * WEIGHT_SCALE)


@dataclass(frozen=True, kw_only=True)
class TokenPolicy:
    """Every client's token limits; empty: no token limit, no metering."""

    clients: tuple[ClientTokenLimits, ...] = ()
    shadow: bool = False
    """Default false. Count and report, never refuse (Envoy Gateway's ``shadowMode``): for rollout."""
    weights: TokenWeights = TokenWeights()
    """What each kind of token costs (default: 1 each, batch included)."""

    @property
    def limited(self) -> tuple[ClientTokenLimits, ...]:
        """The clients with at least one limit, in order."""
        return tuple(c for c in self.clients if c.windows)

    def limits(self) -> dict[str, dict[str, int]]:
        """``{client: {unit: tokens}}``: what both renderings must enforce."""
        return {c.client_id: dict(c.windows) for c in self.limited}
