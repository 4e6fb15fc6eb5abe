"""`inferctl usage --prometheus URL [--stack NAME] [--month YYYY-MM] [--json]`: each client's tokens this month per
model and lane, their cost and the share of its monthly budget (``showback``)."""

from __future__ import annotations

import argparse
import json
import math
from datetime import UTC, datetime
from typing import Any

from inference_platform.errors import CommandError


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "usage", help="tokens per client, model and lane this month, their cost and budget used (showback)"
    )
    p.add_argument("--prometheus", required=True, help="base URL of the stack's Prometheus (http://host:9090)")
    p.add_argument("--stack", help="stack whose prices (capacity plan) and monthly budgets (edge.tokenLimits) apply")
    p.add_argument("--month", help="calendar month in UTC, YYYY-MM (default: the current one)")
    p.add_argument("--usd-per-m-interactive", type=float, help="price per million interactive tokens (overrides)")
    p.add_argument("--usd-per-m-batch", type=float, help="price per million batch tokens (overrides)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(handler=run)


def _price(flag: str, value: float | None) -> float | None:
    if value is not None and (not math.isfinite(value) or value < 0):
        raise CommandError(f"{flag}: got {value}; expected a finite price >= 0 (USD per million tokens)", exit_code=2)
    return value


def _stack_terms(stack: str) -> tuple[dict[str, float | None], dict[str, int]]:
    """(prices per lane, monthly budgets per client) of a stack."""
    from inference_platform.settings import stack_files
    from inference_platform.settings.derived import capacity_summary

    settings = stack_files.load(stack)
    plan = capacity_summary(settings) or {}
    backfill = plan.get("backfill") or {}
    prices = {"interactive": plan.get("usdPerMillionTotalTokens"), "batch": backfill.get("usdPerMillionBatchTokens")}
    tokens = settings.edge.token_limits
    budgets = {
        c.client_id: limits.tokens_per_month
        for c in settings.edge.policy().clients
        if (limits := tokens.resolved(c.client_id, c.tier.name)).tokens_per_month is not None
    }
    return prices, budgets


def run(args: argparse.Namespace) -> int:
    from inference_platform.inferctl.usage.showback import (
        Month,
        PrometheusUnavailable,
        prometheus_query,
        report,
        text,
    )

    now = datetime.now(UTC)
    try:
        month = Month.parse(args.month) if args.month else Month(now.year, now.month)
    except ValueError:
        raise CommandError(
            f"--month: got {args.month!r}; expected YYYY-MM (a calendar month in UTC)", exit_code=2
        ) from None
    if month.start >= now:
        raise CommandError(f"--month: {month} has not begun; expected this month or an earlier one", exit_code=2)
    prices: dict[str, float | None] = {"interactive": None, "batch": None}
    budgets: dict[str, int] = {}
    if args.stack:
        prices, budgets = _stack_terms(args.stack)
    for lane, flag, value in (
        ("interactive", "--usd-per-m-interactive", args.usd_per_m_interactive),
        ("batch", "--usd-per-m-batch", args.usd_per_m_batch),
    ):
        if _price(flag, value) is not None:
            prices[lane] = value
    try:
        rep = report(prometheus_query(args.prometheus), month, now=now, prices=prices, budgets=budgets)
    except PrometheusUnavailable as err:
        raise CommandError(f"--prometheus: {err}", exit_code=1) from None
    print(json.dumps(rep.to_json(), indent=2) if args.json else text(rep))
    return 0
