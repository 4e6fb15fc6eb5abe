"""Monthly token budgets per client (issue 30): declared per tier and per client in ``edge.tokenLimits``, validated,
and enforced at the edge on the metered tokens as a calendar month in UTC carried in a descriptor over the
rate-limit service's Year window. Held to the upstream facts in tests/data/upstream/token_budgets.json (Envoy Gateway
v1.9.0, envoyproxy/ratelimit 3fb70258)."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from inference_platform.catalog.token_limits import PERIOD_HEADER, YEAR_SECONDS, year_window_restart
from inference_platform.components.edge.token_limits import debits, route_rate_limits, service_config, token_rules
from inference_platform.components.edge.token_metering import metering_lua
from inference_platform.inferctl.serving.rate_limit_service import DIVIDERS, OK, OVER_LIMIT, Limiter
from inference_platform.settings import SettingsError, load_settings

FACTS = json.loads((Path(__file__).parents[2] / "data" / "upstream" / "token_budgets.json").read_text())
EG = FACTS["envoyproxy/gateway@v1.9.0"]
RLS = FACTS["envoyproxy/ratelimit@3fb70258"]
TAGS = {"owner": "team", "costCenter": "cc-1"}
EDGE = {
    "auth": {"clients": {"alpha": {"tier": "gold"}, "beta": {"tier": "standard"}}},
    "rateLimits": {"tiers": {"gold": {}, "standard": {}}},
    "tokenLimits": {
        "tokensPerMinute": 5000,
        "tokensPerMonth": 1_000_000,
        "tiers": {"gold": {"tokensPerMonth": 50_000_000}},
        "clients": {"beta": {"tokensPerDay": 200_000}},
    },
}


def policy(edge: dict[str, Any] = EDGE) -> Any:
    return load_settings({"tags": TAGS, "edge": edge}, project="p", stack="s", region="us-west-2").edge.policy()


def test_budgets_resolve_per_client_then_tier_then_stack():
    assert policy().tokens.limits() == {
        "alpha": {"Minute": 5000, "Month": 50_000_000},
        "beta": {"Minute": 5000, "Day": 200_000, "Month": 1_000_000},
    }


def test_the_budget_rule_counts_each_billing_period_apart_over_the_year_window():
    rules = token_rules(policy())
    month = [r for r in rules if r["limit"]["unit"] == "Year"]
    assert [(r["clientSelectors"][0]["headers"][0]["value"], r["limit"]["requests"]) for r in month] == [
        ("alpha", 50_000_000),
        ("beta", 1_000_000),
    ]
    api = EG["api/v1alpha1/ratelimit_types.go"]
    for rule in month:
        _client, period = rule["clientSelectors"][0]["headers"]
        assert period == {"name": PERIOD_HEADER, "type": "Distinct"} and period["type"] in api["HeaderMatchType"]
        assert rule["limit"]["unit"] in api["RateLimitUnit"]
    # The rate-limit service's Month is 30 days from the epoch, its Year 365: neither is a calendar month.
    assert {u: DIVIDERS[u] for u in ("MONTH", "YEAR")} == RLS["src/utils/utilities.go"]["UnitToDivider"]
    assert DIVIDERS["YEAR"] == YEAR_SECONDS


def test_the_local_edge_reads_the_period_header_and_the_service_counts_each_period_apart():
    pol = policy()
    limits = route_rate_limits(pol)
    # alpha: Minute, Month; beta: Minute, Day, Month; two route rate limits (check, stream-done charge) each.
    budget = limits[2]["actions"]
    assert budget[2] == {"request_headers": {"header_name": PERIOD_HEADER, "descriptor_key": "rule-3-match-1"}}
    assert limits[3]["apply_on_stream_done"] is True and limits[3]["actions"] == budget
    clock = [datetime(2027, 3, 31, 23, 0, tzinfo=UTC).timestamp()]
    limiter = Limiter(service_config(pol), clock=lambda: clock[0])

    def entries(period: str) -> list[list[str]]:
        out = []
        for action in budget:
            kind, spec = next(iter(action.items()))
            value = period if kind == "request_headers" else spec["descriptor_value"]
            out.append([spec["descriptor_key"], value])
        return out

    def charge(period: str, hits: int) -> dict[str, Any]:
        request = {"domain": "local/edge-backend", "hits_addend": 0}
        descriptor = {"entries": entries(period), "hits_addend": hits, "limit": None}
        return limiter.decide({**request, "descriptors": [descriptor]})

    assert charge("2027-03", 50_000_000)["overall"] == OK  # exactly the budget still passes (strictly above)
    assert charge("2027-03", 0)["overall"] == OK and charge("2027-03", 1)["overall"] == OVER_LIMIT
    clock[0] += 3600  # 1 April: a new period, a new counter, in the same Year window
    assert charge("2027-04", 0)["statuses"][0]["remaining"] == 50_000_000
    ledger = [{"descriptors": [{"entries": entries("2027-04"), "hits": 7}]}]
    assert debits(ledger, pol) == {"alpha": {"Month": 7}}


def test_the_edge_sets_the_billing_period_itself():
    script = metering_lua()
    assert f'handle:headers():replace("{PERIOD_HEADER}", os.date("!%Y-%m"))' in script
    # os.date is left standing by Envoy Gateway's Lua validator (only execute and exit are removed).
    removed = EG["internal/gatewayapi/luavalidator/security.lua"]["os_removed"]
    assert not set(re.findall(r"os\.([a-z]+)", script)) & set(removed)


def test_the_year_window_restarts_a_counter_only_in_december():
    for year in range(2026, 2041):
        restarts = {m: year_window_restart(year, m) for m in range(1, 13)}
        assert [m for m, r in restarts.items() if r] == [12]
        moment = restarts[12]
        assert moment is not None and moment.timestamp() % YEAR_SECONDS == 0 and 14 <= moment.day <= 18
    assert year_window_restart(2026, 12) == datetime(2026, 12, 18, tzinfo=UTC)


@pytest.mark.parametrize(
    ("budget", "key", "expected"),
    [
        ({"tokensPerMonth": -1}, "edge.tokenLimits.tokensPerMonth", "greater than 0"),
        ({"tokensPerMonth": float("nan")}, "edge.tokenLimits.tokensPerMonth", "finite number"),
        ({"tokensPerMonth": 10.5}, "edge.tokenLimits.tokensPerMonth", "fractional part"),
        ({"tokensPerMonth": 2**32}, "edge.tokenLimits.tokensPerMonth", "4294967295"),
        ({"tiers": {"gold": {"tokensPerMonth": 0}}}, "edge.tokenLimits.tiers.gold.tokensPerMonth", "greater than 0"),
        ({"tiers": {"platinum": {"tokensPerMonth": 10}}}, "edge.tokenLimits.tiers.platinum", "unknown tier"),
        ({"clients": {"zed": {"tokensPerMonth": 10}}}, "edge.tokenLimits.clients.zed", "unknown client"),
        ({"tokensPerMonth": 4000}, "edge.tokenLimits.tokensPerMinute", "above its tokensPerMonth 4000"),
        (
            {"tokensPerMonth": 100_000, "clients": {"alpha": {"tokensPerDay": 200_000}}},
            "edge.tokenLimits.clients.alpha.tokensPerDay",
            "above its tokensPerMonth 100000",
        ),
    ],
)
def test_bad_budgets_name_the_key_the_value_and_what_is_allowed(budget, key, expected):
    edge = {**EDGE, "tokenLimits": {"tokensPerMinute": 5000, **budget}}
    with pytest.raises(SettingsError) as err:
        policy(edge)
    assert any(p.path == key and expected in p.message for p in err.value.problems), str(err.value)
