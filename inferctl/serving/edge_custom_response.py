"""STAND-IN for Envoy Gateway v1.9.0's translation of ``BackendTrafficPolicy.responseOverride``
(``internal/xds/translator/custom_response.go``), for the local edge's bootstrap.

What it copies, for the subset of the API the edge uses (``components.edge.error_overrides``):

- one ``envoy.filters.http.custom_response/<namespace>/<policy>`` filter, first in the chain (``httpfilters.go``
  order 0), disabled at the HCM and enabled per route by an empty ``FilterConfig`` (``patchHCM``, ``patchRoute``):
  a path with no route keeps Envoy's own 404;
- a matcher list, first match wins: each entry's status codes (``HttpResponseStatusCodeMatchInput``, exact),
  response headers (``HttpResponseHeaderMatchInput``, exact) and, for ``source: Local``, the local-reply input
  (``HttpResponseLocalReplyMatchInput`` = ``"true"``), ANDed;
- the action, a ``LocalResponsePolicy``: ``body_format.text_format`` = the body (a substitution format), the
  content type and every ``header.set`` as ``response_headers_to_add`` with ``OVERWRITE_IF_EXISTS_OR_ADD``
  (``buildResponseAction``, ``route.go`` ``buildXdsAddedHeaders``), rule names ``<policy>/responseoverride/rule/<i>``
  (``backendtrafficpolicy.go`` ``defaultResponseOverrideRuleName``).

Envoy answers such a rule with a new local reply carrying only those headers, as in the cluster: the local proof
therefore loses what the cluster loses (a rate limiter's headers) unless the edge carries it over, which
``catalog.rate_limit_reply`` does. Not copied: status ranges (CEL), ``All``/``Backend`` sources, redirects,
``ValueRef`` bodies, ``header.add``; the edge uses none, and a rule using one is refused here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

FILTER = "envoy.filters.http.custom_response"
_TYPES = "type.googleapis.com/envoy."
_MATCH_INPUTS = {
    "status": "type.matcher.v3.HttpResponseStatusCodeMatchInput",
    "header": "type.matcher.v3.HttpResponseHeaderMatchInput",
    "local": "type.matcher.v3.HttpResponseLocalReplyMatchInput",
}


def filter_name(policy_name: str) -> str:
    """``<type>/<namespace>/<name>``, Envoy Gateway's per-route filter name for one policy's overrides."""
    return f"{FILTER}/{policy_name}"


def enable_on_route() -> dict[str, Any]:
    """The route's ``typed_per_filter_config`` entry turning the filter on (Envoy Gateway's empty ``Any``)."""
    return {"@type": "type.googleapis.com/envoy.config.route.v3.FilterConfig", "config": {}}


def _predicate(kind: str, value: str, header: str | None = None) -> dict[str, Any]:
    config: dict[str, Any] = {"@type": _TYPES + _MATCH_INPUTS[kind]}
    if header is not None:
        config["header_name"] = header
    names = {"status": "http-response-status-code-match-input", "header": "http-response-header-match-input",
             "local": "http-response-local-reply-match-input"}  # fmt: skip
    return {
        "single_predicate": {"input": {"name": names[kind], "typed_config": config}, "value_match": {"exact": value}}
    }


def _rule_predicate(override: Mapping[str, Any]) -> dict[str, Any]:
    match = override["match"]
    predicates = []
    codes = match.get("statusCodes", [])
    if any(c.get("type", "Value") != "Value" for c in codes):
        raise ValueError("status code ranges are not translated locally")
    status = [_predicate("status", str(c["value"])) for c in codes]
    if status:
        predicates.append(status[0] if len(status) == 1 else {"or_matcher": {"predicate": status}})
    for header in match.get("responseHeaders", []):
        if header["value"].get("type", "Exact") != "Exact":
            raise ValueError("only exact response-header matches are translated locally")
        predicates.append(_predicate("header", header["value"]["value"], header["name"]))
    source = override.get("source", "All")
    if source != "Local":
        raise ValueError(f"response override source {source!r} is not translated locally")
    predicates.append(_predicate("local", "true"))
    return predicates[0] if len(predicates) == 1 else {"and_matcher": {"predicate": predicates}}


def _action(override: Mapping[str, Any], rule_name: str) -> dict[str, Any]:
    response = override["response"]
    if set(response.get("header", {})) - {"set"} or response.get("body", {}).get("type", "Inline") != "Inline":
        raise ValueError("only inline bodies and header.set are translated locally")
    policy: dict[str, Any] = {
        "@type": f"{_TYPES}extensions.http.custom_response.local_response_policy.v3.LocalResponsePolicy",
        "response_headers_to_add": [],
    }
    if response.get("body"):
        policy["body_format"] = {"text_format": response["body"]["inline"]}
    if response.get("contentType"):
        policy["response_headers_to_add"].append(_header("Content-Type", response["contentType"]))
    if "statusCode" in response:
        policy["status_code"] = response["statusCode"]
    policy["response_headers_to_add"] += [
        _header(h["name"], h["value"]) for h in response.get("header", {}).get("set", [])
    ]
    return {"action": {"name": rule_name, "typed_config": policy}}


def _header(name: str, value: str) -> dict[str, Any]:
    return {"header": {"key": name, "value": value}, "append_action": "OVERWRITE_IF_EXISTS_OR_ADD"}


def custom_response_filter(policy_name: str, overrides: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The HCM filter for one policy's ``responseOverride`` list (disabled: each route enables it)."""
    matchers = [
        {"predicate": _rule_predicate(o), "on_match": _action(o, f"{policy_name}/responseoverride/rule/{i}")}
        for i, o in enumerate(overrides)
    ]
    return {
        "name": filter_name(policy_name),
        "disabled": True,
        "typed_config": {
            "@type": f"{_TYPES}extensions.filters.http.custom_response.v3.CustomResponse",
            "custom_response_matcher": {"matcher_list": {"matchers": matchers}},
        },
    }


def replies(http_filter: Mapping[str, Any]) -> dict[int, dict[str, Any]]:
    """Read back: status -> {"body": the body format, "headers": {name: value}} of each rule (the first status of a
    rule, which is all the edge uses)."""
    out: dict[int, dict[str, Any]] = {}
    for matcher in http_filter["typed_config"]["custom_response_matcher"]["matcher_list"]["matchers"]:
        predicate = matcher["predicate"]
        singles = [p["single_predicate"] for p in predicate.get("and_matcher", {}).get("predicate", [predicate])]
        (status,) = [
            s["value_match"]["exact"] for s in singles if s["input"]["name"].endswith("status-code-match-input")
        ]
        policy = matcher["on_match"]["action"]["typed_config"]
        headers = {h["header"]["key"]: h["header"]["value"] for h in policy["response_headers_to_add"]}
        out.setdefault(int(status), {"body": policy.get("body_format", {}).get("text_format"), "headers": headers})
    return out
