"""`inferctl capacity plan --stack NAME`: the stack's monthly token budgets (``edge.tokenLimits.tokensPerMonth``)
beside the plan (issue 30), so a platform team derives budgets from capacity: each budgeted client's budget, its
daily equivalent and its share of the tokens the plan carries in a month, and a warning when the budgets sold add
up to more than that.

A month here is an average one (365 / 12 days) of the plan's tokens/day. Budgets count weighted tokens
(``edge.tokenLimits.weights``; batch lines at the batch weight), the plan counts input + output tokens: with
weights other than 1 the comparison is the budgets' face value against the plan's volume, and the output says so.
"""

from __future__ import annotations

from typing import Any

DAYS_PER_MONTH = 365 / 12


def stack_budgets(stack: str) -> tuple[dict[str, int], bool]:
    """({client: tokens per month}, whether the stack weighs tokens other than 1 each) of a stack's settings."""
    from inference_platform.settings import stack_files

    settings = stack_files.load(stack)
    tokens = settings.edge.token_limits
    budgets = {
        c.client_id: limits.tokens_per_month
        for c in settings.edge.policy().clients
        if (limits := tokens.resolved(c.client_id, c.tier.name)).tokens_per_month is not None
    }
    weights = tokens.weights.weights()
    return budgets, not (weights.unit and weights.batch == 1000)


def budgets_json(budgets: dict[str, int], tokens_per_day: float, *, weighted: bool = False) -> dict[str, Any]:
    planned_month = tokens_per_day * DAYS_PER_MONTH
    sold = sum(budgets.values())
    out: dict[str, Any] = {
        "planned_tokens_per_month": planned_month,
        "clients": [
            {
                "client": client,
                "tokens_per_month": budget,
                "tokens_per_day": budget / DAYS_PER_MONTH,
                "share_of_plan": budget / planned_month,
            }
            for client, budget in sorted(budgets.items())
        ],
        "sold_tokens_per_month": sold,
        "sold_share_of_plan": sold / planned_month,
        "weighted": weighted,
        "warnings": [],
    }
    if sold > planned_month:
        out["warnings"].append(
            f"the monthly budgets sold ({sold:,} tokens) exceed the capacity planned ({planned_month:,.0f} tokens a "
            f"month at {tokens_per_day:,.0f} tokens/day): {sold / planned_month:.0%} of it; plan more tokens/day or "
            "sell less"
        )
    return out


def budgets_text(j: dict[str, Any]) -> str:
    if not j["clients"]:
        return "budgets: no client of the stack has a monthly token budget (edge.tokenLimits.tokensPerMonth)"
    lines = ["budgets (edge.tokenLimits.tokensPerMonth) against the plan's month "
             f"({j['planned_tokens_per_month']:,.0f} tokens):",
             "  client                 tokens/month     tokens/day   share of plan"]  # fmt: skip
    for row in j["clients"]:
        lines.append(
            f"  {row['client']:<20} {row['tokens_per_month']:>14,} {row['tokens_per_day']:>14,.0f} "
            f"{row['share_of_plan']:>14.1%}"
        )
    lines.append(f"  {'sold':<20} {j['sold_tokens_per_month']:>14,} {'':>14} {j['sold_share_of_plan']:>14.1%}")
    if j["weighted"]:
        lines.append("  (budgets count weighted tokens, edge.tokenLimits.weights; the plan counts input + output)")
    lines += [f"WARNING: {w}" for w in j["warnings"]]
    return "\n".join(lines)
