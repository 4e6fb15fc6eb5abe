"""``edge.tokenLimits``: how many tokens each client may be charged per minute, per day and per calendar month
(its monthly budget), issue 30.

A stack-wide default, per tier (``edge.rateLimits.tiers``) and per client (``edge.auth.clients``), the narrower
winning: a client's own value, else its tier's, else the default. The edge meters every answer exactly
(``components.edge.token_metering``) and charges prompt + completion tokens; over a limit a client gets 429 with
``x-ratelimit-reset`` and ``Retry-After`` until the window (a fixed minute, a day from 00:00 UTC, the calendar
month in UTC: ``catalog.token_limits`` says how the month is carried) turns.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from inference_platform.catalog.edge_policy import Client
from inference_platform.catalog.token_limits import MAX_TOKENS_PER_WINDOW, ClientTokenLimits, TokenPolicy
from inference_platform.settings.base import CheckContext, Problem, Section

DEFAULT_TOKENS_PER_MINUTE = 200_000
"""About 3,300 tokens/s for one client: a few dozen concurrent streams of a Llama-3.1-8B replica, prompts included."""


class TokenWindows(Section):
    tokens_per_minute: int | None = Field(default=None, gt=0, le=MAX_TOKENS_PER_WINDOW)
    """Default: the enclosing level's. 1-4294967295 (Envoy Gateway's ``limit.requests``, a uint32). Prompt +
    completion tokens per minute."""
    tokens_per_day: int | None = Field(default=None, gt=0, le=MAX_TOKENS_PER_WINDOW)
    """Default: the enclosing level's. 1-4294967295, at least tokensPerMinute. Tokens per day (00:00-24:00 UTC)."""
    tokens_per_month: int | None = Field(default=None, gt=0, le=MAX_TOKENS_PER_WINDOW)
    """Default: the enclosing level's. 1-4294967295, at least tokensPerDay and tokensPerMinute. The monthly budget:
    tokens per calendar month in UTC."""


class TokenLimitSettings(Section):
    mode: Literal["enforce", "shadow"] = "enforce"
    """Default ``enforce``: over a limit the client gets 429. ``shadow`` counts and reports without refusing
    (Envoy Gateway's ``shadowMode``), for a rollout."""
    tokens_per_minute: int | None = Field(default=DEFAULT_TOKENS_PER_MINUTE, gt=0, le=MAX_TOKENS_PER_WINDOW)
    """Default 200000, 1-4294967295; ``null`` for none. Every client's limit unless its tier or itself sets one."""
    tokens_per_day: int | None = Field(default=None, gt=0, le=MAX_TOKENS_PER_WINDOW)
    """Default none, 1-4294967295. Every client's daily limit unless its tier or itself sets one."""
    tokens_per_month: int | None = Field(default=None, gt=0, le=MAX_TOKENS_PER_WINDOW)
    """Default none, 1-4294967295. Every client's monthly budget (a calendar month in UTC) unless its tier or itself
    sets one."""
    tiers: dict[str, TokenWindows] = Field(default_factory=dict)
    """Default none. Per tier of ``edge.rateLimits.tiers``: ``{tokensPerMinute, tokensPerDay, tokensPerMonth}``."""
    clients: dict[str, TokenWindows] = Field(default_factory=dict)
    """Default none. Per client of ``edge.auth.clients``: ``{tokensPerMinute, tokensPerDay, tokensPerMonth}``."""

    def resolved(self, client_id: str, tier: str) -> ClientTokenLimits:
        """The limits of one client: its own, else its tier's, else the defaults."""
        levels = [self.clients.get(client_id), self.tiers.get(tier)]
        minute = next((lv.tokens_per_minute for lv in levels if lv and lv.tokens_per_minute), self.tokens_per_minute)
        day = next((lv.tokens_per_day for lv in levels if lv and lv.tokens_per_day), self.tokens_per_day)
        month = next((lv.tokens_per_month for lv in levels if lv and lv.tokens_per_month), self.tokens_per_month)
        return ClientTokenLimits(
            client_id=client_id, tokens_per_minute=minute, tokens_per_day=day, tokens_per_month=month
        )

    def _where(self, cid: str, tier: str, key: str, prefix: str) -> str:
        """The level a resolved value came from, as the key to name."""
        for name, level in ((f"clients.{cid}", self.clients.get(cid)), (f"tiers.{tier}", self.tiers.get(tier))):
            if level is not None and getattr(level, key) is not None:
                return f"{prefix}.{name}"
        return prefix

    def policy(self, clients: tuple[Client, ...]) -> TokenPolicy:
        return TokenPolicy(
            clients=tuple(self.resolved(c.client_id, c.tier.name) for c in clients), shadow=self.mode == "shadow"
        )

    def check(self, *, tiers: set[str], clients: dict[str, str], auth: bool, prefix: str) -> list[Problem]:
        """Unknown tiers and clients; a per-minute limit above the per-day one at any level. ``clients``: id ->
        tier."""
        out = []
        for name in sorted(set(self.tiers) - tiers):
            allowed = ", ".join(sorted(tiers)) or "(none)"
            out.append(
                Problem(f"{prefix}.tiers.{name}", f"unknown tier; expected one of edge.rateLimits.tiers: {allowed}")
            )
        for cid in sorted(set(self.clients) - set(clients)):
            allowed = ", ".join(sorted(clients)) or "(none)"
            out.append(
                Problem(f"{prefix}.clients.{cid}", f"unknown client; expected one of edge.auth.clients: {allowed}")
            )
        if (self.clients or self.tiers) and not auth:
            out.append(Problem(prefix, "per-tier or per-client token limits need edge.auth.enabled (a client id)"))
        pairs = (
            ("tokens_per_minute", "tokensPerMinute", "tokens_per_day", "tokensPerDay", "the daily limit"),
            ("tokens_per_minute", "tokensPerMinute", "tokens_per_month", "tokensPerMonth", "the monthly budget"),
            ("tokens_per_day", "tokensPerDay", "tokens_per_month", "tokensPerMonth", "the monthly budget"),
        )
        for cid, tier in sorted(clients.items()):
            limits = self.resolved(cid, tier)
            for short, short_key, long, long_key, what in pairs:
                small, large = getattr(limits, short), getattr(limits, long)
                if small is not None and large is not None and small > large:
                    where = self._where(cid, tier, short, prefix)
                    out.append(
                        Problem(
                            f"{where}.{short_key}",
                            f"got {small} for client {cid}, above its {long_key} {large}: {what} would refuse "
                            f"first; expected at most {long_key}",
                        )
                    )
                    break
        return out


def token_limit_problems(settings: TokenLimitSettings, ctx: CheckContext, *, tiers: set[str], clients: dict[str, str],
                         auth: bool) -> list[Problem]:  # fmt: skip
    """``edge.tokenLimits`` problems (called from ``EdgeSettings.problems``); production limits every client."""
    # Production refuses edge.auth.enabled false by itself (one problem per contradiction, the settings' sweep).
    out = settings.check(tiers=tiers, clients=clients, auth=auth or ctx.production, prefix="edge.tokenLimits")
    if ctx.production:
        bare = sorted(cid for cid, tier in clients.items() if not settings.resolved(cid, tier).windows)
        if bare:
            out.append(
                Problem(
                    "edge.tokenLimits",
                    f"client(s) {', '.join(bare)} have no token limit; production limits every client in tokens: set "
                    "tokensPerMinute (default 200000) for the stack, their tier or themselves",
                )
            )
    return out
