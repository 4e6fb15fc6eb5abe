"""The edge's 429 in OpenAI's words (issue 30): what the script knows of the stack's limits, the override that
reads its metadata, and the upstream facts that make the metadata necessary (tests/data/upstream/
response_override_facts.json). Shown on the real Envoy in test_rate_limit_reply_live.py."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from inference_platform.catalog import rate_limit_reply
from inference_platform.catalog.rate_limit_reply import BUDGET, HEADERS, REQUESTS, TOKENS, labels
from inference_platform.catalog.token_limits import YEAR_SECONDS
from inference_platform.components.edge import error_overrides
from inference_platform.components.edge.error_overrides import rate_limited_body, response_overrides
from inference_platform.settings import load_settings
from tests.upstream_quotes import assert_quote_holds

DATA = Path(__file__).parents[2] / "data"
FACTS = json.loads((DATA / "upstream" / "response_override_facts.json").read_text())["facts"]
EG_TOKEN_FACTS = json.loads((DATA / "envoy_gateway_token_costs.json").read_text())["envoyproxy/gateway@v1.9.0"]
TAGS = {"owner": "t", "costCenter": "c"}
EDGE = {
    "auth": {"clients": {"a": {"tier": "t"}, "b": {"tier": "u"}}},
    "rateLimits": {"tiers": {"t": {"requestsPerMinute": 60}, "u": {"requestsPerMinute": 600}}},
    "tokenLimits": {
        "tokensPerMinute": 200_000,
        "tokensPerDay": 5_000_000,
        # b's 600 tokens per minute is also its tier's 600 requests per minute: a pair the headers cannot tell.
        "clients": {"a": {"tokensPerMonth": 9_000_000}, "b": {"tokensPerMinute": 600}},
    },
}


def policy(edge: dict[str, Any] = EDGE) -> Any:
    return load_settings({"tags": TAGS, "edge": edge}, project="p", stack="s", region="us-west-2").edge.policy()


@pytest.mark.parametrize("fact", FACTS, ids=lambda f: f"{f['path'].rsplit('/', 1)[1]}:{f['quote'][:30]}")
def test_the_upstream_facts_hold_at_their_refs(fact):
    assert_quote_holds(fact)


def test_the_script_knows_every_limit_of_the_stack_and_which_pairs_are_ambiguous():
    pol = policy()
    assert pol.rate_limits == (
        (REQUESTS, 60, 60), (REQUESTS, 60, 600),
        (TOKENS, 60, 200_000), (TOKENS, 86_400, 5_000_000), (BUDGET, YEAR_SECONDS, 9_000_000),
        (TOKENS, 60, 600), (TOKENS, 86_400, 5_000_000),
    )  # fmt: skip
    assert labels(pol.rate_limits) == {
        "200000/60": ["tokens/60"],
        "5000000/86400": ["tokens/86400"],
        "60/60": ["requests/60"],
        "600/60": ["requests/60", "tokens/60"],  # named by neither: the fallback words, no OpenAI kind headers
        f"9000000/{YEAR_SECONDS}": [f"budget/{YEAR_SECONDS}"],
    }
    script = pol.rate_limit_reply_lua
    assert '["600/60"] = {"requests/60", "tokens/60"}' in script
    with pytest.raises(ValueError, match="no name"):
        labels([(TOKENS, 3600, 5)])


def test_without_clients_nothing_limits_and_nothing_overrides_a_429():
    pol = policy(
        {"auth": {"enabled": False}, "routing": {"mode": "round-robin"}, "tokenLimits": {"tokensPerMinute": None}}
    )
    assert pol.rate_limit_reply_lua is None and pol.rate_limits == ()
    assert [o["match"]["statusCodes"][0]["value"] for o in response_overrides(pol)] == [401, 413, 503]


def test_the_429_override_reads_the_scripts_metadata_for_its_body_and_every_header():
    (rate_limited,) = [o for o in response_overrides(policy()) if o["match"]["statusCodes"][0]["value"] == 429]
    response = rate_limited["response"]
    assert rate_limited["source"] == "Local" and response["body"]["inline"] == rate_limited_body()
    namespace = rate_limit_reply.NAMESPACE
    assert response["header"]["set"] == [{"name": h, "value": f"%DYNAMIC_METADATA({namespace}:{h})%"} for h in HEADERS]
    # Every operator in the body is one the script writes; with values in, the body is OpenAI's error.
    keys = re.findall(r"%DYNAMIC_METADATA\(([^:]+):([^)]+)\)%", response["body"]["inline"])
    assert {k for _, k in keys} == set(rate_limit_reply.ERROR_FIELDS) and {n for n, _ in keys} == {namespace}
    filled = re.sub(r"%DYNAMIC_METADATA\([^)]+\)%", "x", response["body"]["inline"])
    assert json.loads(filled) == {"error": {"message": "x", "type": "x", "param": None, "code": "x"}}
    script = policy().rate_limit_reply_lua
    for key in (*HEADERS, *rate_limit_reply.ERROR_FIELDS):
        kind = key.endswith(("-requests", "-tokens"))
        assert (f'md:set(NS, "{key.rsplit("-", 1)[0]}-" .. kind.headers' if kind else f'md:set(NS, "{key}"') in script


def test_a_literal_percent_in_a_fixed_body_is_refused(monkeypatch):
    monkeypatch.setattr(error_overrides, "edge_error", lambda status, pol: ("100% full", "server_error", "x"))
    with pytest.raises(ValueError, match="no '%'"):
        response_overrides(policy())


def test_the_script_uses_only_calls_envoy_gateways_lua_validator_mocks():
    script = policy().rate_limit_reply_lua
    mocks = EG_TOKEN_FACTS["internal/gatewayapi/luavalidator/mocks.lua"]
    assert set(re.findall(r"handle:([A-Za-z]+)\(", script)) <= set(mocks["mocked_handle_calls"])
    assert set(re.findall(r"headers:([A-Za-z]+)\(", script)) <= set(mocks["Headers"])
    assert set(re.findall(r"md:([A-Za-z]+)\(", script)) <= set(mocks["DynamicMetadata"])
    assert set(re.findall(r"streamInfo\(\):([A-Za-z]+)\(", script)) <= set(mocks["StreamInfo"])
    # gopher-lua (the strict validator runs envoy_on_response) is Lua 5.1: no bit library, goto or integer division.
    assert "bit." not in script and "goto" not in script and "//" not in script
    # The mocked status is not 429, so the validator's run returns before any os.* call.
    handler = script[script.index("function envoy_on_response") :]
    assert handler.index('~= "429" then return end') < handler.index("os.")
