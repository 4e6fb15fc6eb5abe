"""The edge's own refusals in OpenAI's error shape: the Gateway's ``BackendTrafficPolicy.responseOverride`` list, which
the local edge translates as Envoy Gateway v1.9.0 does (``inferctl.serving.edge_custom_response``).

Envoy Gateway turns each entry into a rule of an ``envoy.filters.http.custom_response`` filter whose local response
policy answers with a *new* local reply: its body is a substitution format (``body_format.text_format``, so
``%...%`` are command operators) and it carries only the headers the entry sets (``internal/xds/translator/
custom_response.go`` ``buildResponseAction``; Envoy ``FilterManager::sendDirectLocalReply``). A 429 therefore keeps
nothing of the rate limiter's headers: with clients, its entry reads what ``catalog.rate_limit_reply``'s script
left in dynamic metadata (the limit named, ``Retry-After``, the draft-03 and OpenAI ``x-ratelimit-*`` headers).
"""

from __future__ import annotations

from typing import Any

from inference_platform.catalog import rate_limit_reply
from inference_platform.catalog.edge_policy import (
    EDGE_ERRORS,
    OVERLOAD_RETRY_AFTER_SECONDS,
    OVERLOAD_STATUS,
    EdgePolicy,
    edge_error,
    edge_error_body,
)

RATE_LIMITED_STATUS = 429


def _metadata(key: str) -> str:
    return f"%DYNAMIC_METADATA({rate_limit_reply.NAMESPACE}:{key})%"


def rate_limited_body() -> str:
    """The 429's body format: OpenAI's error with the fields the reply script wrote."""
    fields = {name: f"@{name}@" for name in rate_limit_reply.ERROR_FIELDS}
    body = edge_error_body(fields["message"], fields["type"], fields["code"])
    for name in rate_limit_reply.ERROR_FIELDS:
        body = body.replace(f"@{name}@", _metadata(name))
    return body


def response_overrides(policy: EdgePolicy) -> list[dict[str, Any]]:
    """One entry per status of ``EDGE_ERRORS``, for Envoy's own replies only (``source: Local``; the server's errors
    are OpenAI-shaped already); no 429 where no client is limited (nothing answers one)."""
    limited = policy.rate_limit_reply_lua is not None
    return [_override(s, policy) for s in sorted(EDGE_ERRORS) if s != RATE_LIMITED_STATUS or limited]


def _override(status: int, policy: EdgePolicy) -> dict[str, Any]:
    match: dict[str, Any] = {"statusCodes": [{"type": "Value", "value": status}]}
    body = edge_error_body(*edge_error(status, policy))
    if "%" in body:
        # The body is a substitution format: a literal % would be read as a command operator.
        raise ValueError(f"the edge's {status} body must hold no '%': {body}")
    response: dict[str, Any] = {"contentType": "application/json"}
    if status == OVERLOAD_STATUS:
        # Envoy marks its circuit breaker's 503 x-envoy-overloaded; tell clients when to come back.
        match["responseHeaders"] = [{"name": "x-envoy-overloaded", "value": {"type": "Exact", "value": "true"}}]
        response["header"] = {"set": [{"name": "retry-after", "value": str(OVERLOAD_RETRY_AFTER_SECONDS)}]}
    elif status == RATE_LIMITED_STATUS:
        body = rate_limited_body()
        # A header whose metadata is absent evaluates empty and is not sent (Envoy's header parser).
        response["header"] = {"set": [{"name": h, "value": _metadata(h)} for h in rate_limit_reply.HEADERS]}
    response["body"] = {"type": "Inline", "inline": body}
    return {"match": match, "source": "Local", "response": response}
