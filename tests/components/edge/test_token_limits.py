"""Token limits and metering as rendered (issue 30), held to the upstream facts pinned in
tests/data/envoy_gateway_token_costs.json (Envoy Gateway v1.9.0, envoyproxy/ratelimit 3fb70258, data-plane-api
84e84367): the Gateway's token rules, what the local Envoy runs in their place, the rate-limit service's
configuration, the metering script, and the stand-in's decisions."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from inference_platform.components.edge.gateway_api import render_gateway_objects
from inference_platform.components.edge.token_limits import debits, route_rate_limits, service_config, token_rules
from inference_platform.components.edge.token_metering import CHARGED_KEY, METADATA_NAMESPACE, metering_lua
from inference_platform.inferctl.serving.rate_limit_service import DIVIDERS, UNITS, Limiter
from inference_platform.settings import load_settings
from tests.components.edge.targets import TARGET

FACTS = json.loads((Path(__file__).parents[2] / "data" / "envoy_gateway_token_costs.json").read_text())
EG = FACTS["envoyproxy/gateway@v1.9.0"]
RLS = FACTS["envoyproxy/ratelimit@3fb70258"]
PROTO = FACTS["envoyproxy/data-plane-api@84e84367"]
TAGS = {"owner": "team", "costCenter": "cc-1"}
EDGE = {
    "auth": {"clients": {"alpha": {"tier": "gold"}, "beta": {"tier": "standard"}}},
    "rateLimits": {"tiers": {"gold": {}, "standard": {}}},
    "tokenLimits": {"tokensPerMinute": 5000, "tiers": {"gold": {"tokensPerMinute": 90_000, "tokensPerDay": 9_000_000}}},
}


def policy(edge: dict[str, Any] = EDGE) -> Any:
    return load_settings({"tags": TAGS, "edge": edge}, project="p", stack="s", region="us-west-2").edge.policy()


def test_token_rules_check_with_zero_and_charge_the_metered_usage_on_stream_done():
    pol = policy()
    rules = token_rules(pol)
    api = EG["api/v1alpha1/ratelimit_types.go"]
    assert [
        (r["clientSelectors"][0]["headers"][0]["value"], r["limit"]["unit"], r["limit"]["requests"]) for r in rules
    ] == [
        ("alpha", "Minute", 90_000),
        ("alpha", "Day", 9_000_000),
        ("beta", "Minute", 5000),
    ]
    for rule in rules:
        assert set(rule) <= set(api["RateLimitRule.fields"]) and rule["shared"] is True
        (selector,) = rule["clientSelectors"]
        assert set(selector) <= set(api["RateLimitSelectCondition.fields"])
        assert selector["methods"] == [{"value": "POST"}]  # GET /v1/models is never checked nor charged
        assert (
            rule["limit"]["unit"] in api["RateLimitUnit"]
            and rule["limit"]["requests"] <= api["RateLimitValue.requests_max"]
        )
        assert rule["cost"]["request"] == {"from": "Number", "number": 0}
        response = rule["cost"]["response"]
        assert response["from"] in api["RateLimitCostFrom"] and set(response) <= set(
            api["RateLimitCostSpecifier.fields"]
        )
        assert response["metadata"] == {"namespace": METADATA_NAMESPACE, "key": CHARGED_KEY}
    # They sit in the Gateway's one policy after the request rules, so they share its domain.
    (btp,) = [
        o
        for o in render_gateway_objects(pol, TARGET)
        if o["kind"] == "BackendTrafficPolicy" and "mergeType" not in o["spec"]
    ]
    assert btp["spec"]["rateLimit"]["global"]["rules"][-3:] == rules
    shadow = policy({**EDGE, "tokenLimits": {**EDGE["tokenLimits"], "mode": "shadow"}})
    assert all(r["shadowMode"] is True for r in token_rules(shadow))


def test_the_local_routes_carry_what_envoy_gateway_translates_the_rules_to():
    pol = policy()
    limits = route_rate_limits(pol)
    fmt = EG["internal/gatewayapi/backendtrafficpolicy.go"]["translateRateLimitCost.format"]
    expected_cost = fmt.replace("<namespace>", METADATA_NAMESPACE).replace("<key>", CHARGED_KEY)
    assert len(limits) == 2 * len(token_rules(pol))
    for request, response in zip(limits[::2], limits[1::2], strict=True):
        assert request["actions"] == response["actions"]
        assert request["hits_addend"] == {"number": 0} and "apply_on_stream_done" not in request
        assert response["apply_on_stream_done"] is True and response["hits_addend"] == {"format": expected_cost}
        name = request["actions"][0]["generic_key"]["descriptor_key"]
        index = int(name.rsplit("/rule/", 1)[1])
        assert [next(iter(a)) for a in request["actions"]] == [
            "generic_key",
            "header_value_match",
            "header_value_match",
        ]
        assert request["actions"][1]["header_value_match"]["descriptor_key"] == f"rule-{index}-match-0"
        assert request["actions"][2]["header_value_match"]["descriptor_key"] == f"rule-{index}-method"
    # The first token rule follows the two clients' request rules in the shared domain.
    assert limits[0]["actions"][0]["generic_key"]["descriptor_key"] == "local/edge-backend/rule/2"


def test_the_service_config_limits_the_last_descriptor_of_each_rule_and_the_stand_in_decides_like_upstream():
    pol = policy()
    config = service_config(pol)
    clock = [1_800_000_000.0]
    limiter = Limiter(config, clock=lambda: clock[0])
    actions = route_rate_limits(pol)[4]["actions"]  # beta, per minute (5000)
    entries = [[a[k]["descriptor_key"], a[k]["descriptor_value"]] for a in actions for k in a]
    request = {"domain": "local/edge-backend", "hits_addend": 0}

    def hit(n: int | None) -> dict[str, Any]:
        return limiter.decide({**request, "descriptors": [{"entries": entries, "hits_addend": n, "limit": None}]})

    assert hit(0)["statuses"][0]["remaining"] == 5000  # check only
    assert hit(4999)["overall"] == 1 and hit(None)["statuses"][0]["remaining"] == 0  # None: max(1, 0) = 1
    at_limit = hit(0)  # exactly at the limit still passes: over is strictly above (base_limiter.go)
    assert at_limit["overall"] == 1
    assert hit(1)["overall"] == 2 and hit(0)["overall"] == 2
    assert at_limit["statuses"][0]["reset"] == 60 - int(clock[0]) % 60
    clock[0] += 60  # the next fixed window (aligned to the epoch)
    assert hit(0)["overall"] == 1
    assert {u: d for u, d in DIVIDERS.items()} == RLS["src/utils/utilities.go"]["UnitToDivider"]
    assert PROTO["envoy/service/ratelimit/v3/rls.proto"]["Unit"] == {"UNKNOWN": 0, **UNITS}
    ledger = [{"descriptors": [{"entries": entries, "hits": 7}]}, {"descriptors": [{"entries": entries, "hits": 5}]}]
    assert debits(ledger, pol) == {"beta": {"Minute": 12}}


def test_the_metering_script_uses_only_calls_envoy_gateways_lua_validator_mocks():
    script = metering_lua()
    mocks = EG["internal/gatewayapi/luavalidator/mocks.lua"]
    handle_calls = set(re.findall(r"handle:([A-Za-z]+)\(", script))
    assert handle_calls <= set(mocks["mocked_handle_calls"])
    header_calls = set(re.findall(r"headers\(?\)?:([A-Za-z]+)\(", script))
    assert header_calls <= set(mocks["Headers"])
    assert set(re.findall(r"chunk:([A-Za-z]+)\(", script)) <= set(mocks["Buffer"])
    assert set(re.findall(r"md:([A-Za-z]+)\(", script)) <= set(mocks["DynamicMetadata"])
    # It never buffers the request body (Lua runs before the request buffer, held to the 32 KiB connection limit).
    assert ":body(" not in script and "x-inference-meter" in script


@pytest.mark.parametrize(
    ("edge", "key", "expected"),
    [
        ({"tokenLimits": {"tokensPerMinute": -5}}, "edge.tokenLimits.tokensPerMinute", "greater than 0"),
        ({"tokenLimits": {"tokensPerDay": float("nan")}}, "edge.tokenLimits.tokensPerDay", "finite number"),
        ({"tokenLimits": {"tokensPerMinute": 12.5}}, "edge.tokenLimits.tokensPerMinute", "fractional part"),
        ({"tokenLimits": {"tokensPerMinute": 2**32}}, "edge.tokenLimits.tokensPerMinute", "4294967295"),
        ({"tokenLimits": {"tiers": {"gold": {"tokensPerMinute": 5}}}}, "edge.tokenLimits.tiers.gold", "unknown tier"),
        (
            {"tokenLimits": {"clients": {"zed": {"tokensPerMinute": 5}}}},
            "edge.tokenLimits.clients.zed",
            "unknown client",
        ),
        (
            {"tokenLimits": {"tokensPerMinute": 100, "tokensPerDay": 10}},
            "edge.tokenLimits.tokensPerMinute",
            "above its tokensPerDay",
        ),
        ({"tokenLimits": {"mode": "dry-run"}}, "edge.tokenLimits.mode", "enforce"),
    ],
)
def test_bad_token_limits_name_the_key(edge, key, expected):
    from inference_platform.settings import SettingsError

    with pytest.raises(SettingsError) as err:
        policy(edge)
    assert any(p.path == key and expected in p.message for p in err.value.problems), str(err.value)


def test_production_refuses_a_client_without_a_token_limit():
    from inference_platform.settings import SettingsError

    edge = {"tokenLimits": {"tokensPerMinute": None}}
    policy(edge)  # development may
    with pytest.raises(SettingsError) as err:
        load_settings(
            {"tags": TAGS, "edge": edge, "environment": "production"}, project="p", stack="s", region="us-west-2"
        )
    assert any(p.path == "edge.tokenLimits" and "no token limit" in p.message for p in err.value.problems), str(
        err.value
    )
