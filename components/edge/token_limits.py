"""Token limits per client as Envoy Gateway rate-limit rules, and as what Envoy Gateway v1.9.0 translates them to
(the local edge's route rate limits and the rate-limit service's configuration), from one ``EdgePolicy``.

One rule per client and window, in the Gateway's ``BackendTrafficPolicy`` beside the requests-per-minute rules:

- selected by the client id the gateway forwarded (``Exact``) and the method ``POST`` (a generation: ``GET
  /v1/models`` and the health check are never checked nor charged);
- ``cost.request: {from: Number, number: 0}``: the request path only checks the counter (a client whose window is
  spent gets 429), ``cost.response: {from: Metadata, ...}``: the tokens the answer used are charged when its stream
  ends, from the metering script's dynamic metadata (``token_metering``);
- ``shared: true``: one counter per client across every route; ``shadowMode`` when the policy says so.

Envoy Gateway v1.9.0's translation, pinned with its files in tests/data/envoy_gateway_token_costs.json: a shared
rule's domain is ``<policy namespace>/<policy name>``, its name ``<domain>/rule/<index>``; its actions are a generic
key (the name), one ``header_value_match`` per header (``rule-<i>-match-<j>``) and one for the method
(``rule-<i>-method``); a rule with a response cost becomes two route rate limits with the same actions, the second
with ``apply_on_stream_done`` and ``hits_addend.format: %DYNAMIC_METADATA(<namespace>:<key>)%``; the rate-limit
service's descriptors nest the same keys, the limit on the last.
"""

from __future__ import annotations

from typing import Any

from inference_platform.catalog.edge_policy import EdgePolicy
from inference_platform.catalog.token_limits import MONTH, MONTH_RULE_UNIT, PERIOD_HEADER
from inference_platform.components.edge.token_metering import CHARGED_KEY, METADATA_NAMESPACE

METHOD = "POST"
LOCAL_POLICY_NAMESPACE = "local"
"""The namespace the local edge's domain is named in (the cluster's is the gateway's namespace)."""
LOCAL_POLICY_NAME = "edge-backend"


def _headers(policy: EdgePolicy, client: str, window: str) -> list[dict[str, Any]]:
    """The rule's header selectors: the client, and for the monthly budget the billing period, each distinct
    value its own counter (``catalog.token_limits``: the calendar month carried in a descriptor)."""
    headers: list[dict[str, Any]] = [{"name": policy.client_id_header, "type": "Exact", "value": client}]
    if window == MONTH:
        headers.append({"name": PERIOD_HEADER, "type": "Distinct"})
    return headers


def rule_unit(window: str) -> str:
    """The rate-limit unit a window's rule runs on."""
    return MONTH_RULE_UNIT if window == MONTH else window


def token_rules(policy: EdgePolicy) -> list[dict[str, Any]]:
    """The ``rateLimit.global.rules`` entries of the token limits, in order (client, then window)."""
    shadow = {"shadowMode": True} if policy.tokens.shadow else {}
    return [
        {
            "clientSelectors": [{"headers": _headers(policy, limits.client_id, unit), "methods": [{"value": METHOD}]}],
            "limit": {"requests": tokens, "unit": rule_unit(unit)},
            "cost": {
                "request": {"from": "Number", "number": 0},
                "response": {"from": "Metadata", "metadata": {"namespace": METADATA_NAMESPACE, "key": CHARGED_KEY}},
            },
            "shared": True,
            **shadow,
        }
        for limits in policy.tokens.limited
        for unit, tokens in limits.windows
    ]


def _rule_names(policy: EdgePolicy, first_index: int | None, domain: str) -> list[tuple[str, int, str, str, int]]:
    """(rule name, domain rule index, client, unit, tokens) of every token rule; the shared request rules, one per
    client, come first in the domain unless ``first_index`` says otherwise."""
    out = []
    index = len(policy.clients) if first_index is None else first_index
    for limits in policy.tokens.limited:
        for unit, tokens in limits.windows:
            out.append((f"{domain}/rule/{index}", index, limits.client_id, unit, tokens))
            index += 1
    return out


def local_domain() -> str:
    return f"{LOCAL_POLICY_NAMESPACE}/{LOCAL_POLICY_NAME}"


def route_rate_limits(
    policy: EdgePolicy, *, first_index: int | None = None, domain: str | None = None
) -> list[dict[str, Any]]:
    """The route's ``RateLimitPerRoute.rate_limits`` Envoy Gateway builds for the token rules
    (``internal/xds/translator/ratelimit.go`` ``buildRouteRateLimits``). ``first_index``: the domain index of the
    first token rule (default: after the shared request rules, one per client)."""
    domain = domain or local_domain()
    out: list[dict[str, Any]] = []
    cost = f"%DYNAMIC_METADATA({METADATA_NAMESPACE}:{CHARGED_KEY})%"
    for name, index, client, window, _ in _rule_names(policy, first_index, domain):
        actions = [
            {"generic_key": {"descriptor_key": name, "descriptor_value": name}},
            _header_match(f"rule-{index}-match-0", policy.client_id_header, client),
            *(
                # buildHeaderMatchRateLimitActions: a Distinct header is a request_headers action.
                [{"request_headers": {"header_name": PERIOD_HEADER, "descriptor_key": f"rule-{index}-match-1"}}]
                if window == MONTH
                else []
            ),
            _header_match(f"rule-{index}-method", ":method", METHOD),
        ]
        out.append({"actions": actions, "hits_addend": {"number": 0}})
        out.append({"actions": actions, "apply_on_stream_done": True, "hits_addend": {"format": cost}})
    return out


def service_config(policy: EdgePolicy, *, first_index: int | None = None, domain: str | None = None) -> dict[str, Any]:
    """The rate-limit service's configuration for the token rules (``BuildRateLimitServiceConfig``: one domain,
    each shared rule under its own name, the match descriptors nested, the limit on the last), in the service's
    own shape (``inferctl.serving.rate_limit_service`` reads it)."""
    domain = domain or local_domain()
    descriptors = []
    for name, index, _, window, tokens in _rule_names(policy, first_index, domain):
        method: dict[str, Any] = {
            "key": f"rule-{index}-method",
            "value": f"rule-{index}-method",
            "rate_limit": {"unit": rule_unit(window).upper(), "requests_per_unit": tokens},
            "shadow_mode": policy.tokens.shadow,
        }
        if window == MONTH:
            # A Distinct match is a key without a value: any period, each its own counter.
            method = {"key": f"rule-{index}-match-1", "shadow_mode": policy.tokens.shadow, "descriptors": [method]}
        header = {
            "key": f"rule-{index}-match-0",
            "value": f"rule-{index}-match-0",
            "shadow_mode": policy.tokens.shadow,
            "descriptors": [method],
        }
        descriptors.append({"key": name, "value": name, "descriptors": [header]})
    return {"domains": [{"domain": domain, "descriptors": descriptors}]}


def debits(
    ledger: list[dict[str, Any]], policy: EdgePolicy, *, first_index: int | None = None
) -> dict[str, dict[str, int]]:
    """``{client: {unit: tokens}}`` charged in a rate-limit service's ledger (its calls, in order), read back by
    the rule names: what the edge debited each client."""
    names = {name: (client, unit) for name, _, client, unit, _ in _rule_names(policy, first_index, local_domain())}
    out: dict[str, dict[str, int]] = {}
    for call in ledger:
        for d in call["descriptors"]:
            found = names.get(d["entries"][0][1])
            if found is not None:
                client, unit = found
                out.setdefault(client, {}).setdefault(unit, 0)
                out[client][unit] += d["hits"]
    return out


def _header_match(key: str, header: str, value: str) -> dict[str, Any]:
    return {
        "header_value_match": {
            "descriptor_key": key,
            "descriptor_value": key,
            "expect_match": True,
            "headers": [{"name": header, "string_match": {"exact": value}}],
        }
    }


def charge_meters(policy: EdgePolicy, domain: str) -> list[tuple[str, str]]:
    """(client, rule name) of each metered client's first token rule in ``domain``: where the rate-limit service
    counts what the edge charged it (every window rule of a client is charged the same tokens)."""
    seen: dict[str, str] = {}
    for name, _, client, _, _ in _rule_names(policy, None, domain):
        seen.setdefault(client, name)
    return list(seen.items())


def cluster_domain(namespace: str, gateway: str) -> str:
    """The rate-limit domain of the Gateway's BackendTrafficPolicy (``<namespace>/<gateway>-backend``)."""
    return f"{namespace}/{gateway}-backend"
