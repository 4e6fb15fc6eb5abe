"""Response override rules (issue 30).

- ``edge-overrides-keep-retry-after``: an Envoy Gateway ``responseOverride`` that rewrites a 429 or a 503 the
  proxy sends (``source`` Local or All, by a status value or a range covering it) sets ``Retry-After`` itself, and
  every ``%DYNAMIC_METADATA(io.inference.*:...)%`` it reads is written by a Lua script of the Gateway's
  EnvoyExtensionPolicies.

Why: Envoy Gateway turns an override into a ``custom_response`` local response policy that answers with a *new*
local reply carrying only the headers the override sets (Envoy's ``sendDirectLocalReply``;
tests/data/upstream/response_override_facts.json). Every 429 of the edge's rate limiter reached clients that way
without ``Retry-After`` or ``x-ratelimit-*``, while the local proof (which rendered the overrides as local-reply
mappers, keeping headers) showed them: clients then retry at once, into the limit. The edge carries them over through
dynamic metadata (``catalog/rate_limit_reply.py``); metadata no script writes evaluates empty and the header is
silently not sent.
"""

from __future__ import annotations

import re
from typing import Any

from pulumi_policy import EnforcementLevel, StackValidationArgs

from inference_platform.policies.callbacks import ReportViolation, StackValidationPolicy
from inference_platform.policies.props import as_list, get

ENVOY_GATEWAY = "kubernetes:gateway.envoyproxy.io/v1alpha1:"
BACKEND_TRAFFIC_POLICY = ENVOY_GATEWAY + "BackendTrafficPolicy"
EXTENSION_POLICY = ENVOY_GATEWAY + "EnvoyExtensionPolicy"
RETRIED_STATUSES = (429, 503)
"""Statuses a client retries after waiting: the reply must say how long."""
OWN_NAMESPACE = re.compile(r"%DYNAMIC_METADATA\((io\.inference\.[^:)]+)")
"""Metadata namespaces of the edge's own scripts (``io.inference.*``); others may come from filters we do not see."""


def _statuses(override: Any) -> set[int]:
    """The retried statuses an override's match covers."""
    covered: set[int] = set()
    for match in as_list(get(override, "match.statusCodes")):
        if (get(match, "type") or "Value") == "Value":
            covered |= {s for s in RETRIED_STATUSES if get(match, "value") == s}
        else:
            start, end = get(match, "range.start"), get(match, "range.end")
            if isinstance(start, (int, float)) and isinstance(end, (int, float)):  # numbers arrive as floats
                covered |= {s for s in RETRIED_STATUSES if start <= s <= end}
    return covered


def _headers(override: Any) -> list[Any]:
    return [h for kind in ("set", "add") for h in as_list(get(override, f"response.header.{kind}"))]


def _overrides_keep_retry_after(args: StackValidationArgs, report: ReportViolation) -> None:
    scripts = " ".join(
        str(get(lua, "inline") or "")
        for r in args.resources
        if r.resource_type == EXTENSION_POLICY
        for lua in as_list(get(r.props, "spec.lua"))
    )
    for resource in args.resources:
        if resource.resource_type != BACKEND_TRAFFIC_POLICY:
            continue
        name = (
            f"BackendTrafficPolicy {get(resource.props, 'metadata.namespace')}/{get(resource.props, 'metadata.name')}"
        )
        for index, override in enumerate(as_list(get(resource.props, "spec.responseOverride"))):
            if get(override, "redirect") is not None or (get(override, "source") or "All") == "Backend":
                continue
            headers = _headers(override)
            names = {str(get(h, "name") or "").lower() for h in headers}
            for status in sorted(_statuses(override)):
                if "retry-after" not in names:
                    report(
                        f"{name}: responseOverride[{index}] rewrites the proxy's {status} into a new reply that keeps "
                        "none of its headers (Envoy Gateway's custom_response), so clients get no Retry-After and "
                        "retry at once: set response.header retry-after",
                        resource.urn,
                    )
            read = " ".join(
                [str(get(h, "value") or "") for h in headers] + [str(get(override, "response.body.inline") or "")]
            )
            for namespace in sorted(set(OWN_NAMESPACE.findall(read))):
                if f'"{namespace}"' not in scripts:
                    report(
                        f"{name}: responseOverride[{index}] reads dynamic metadata {namespace} that no Lua of the "
                        "Gateway's EnvoyExtensionPolicies writes: its headers would be empty and not sent",
                        resource.urn,
                    )


POLICIES = [
    StackValidationPolicy(
        name="edge-overrides-keep-retry-after",
        description="A response override of a 429 or 503 sets Retry-After, and the metadata it reads is written.",
        validate=_overrides_keep_retry_after,
        enforcement_level=EnforcementLevel.MANDATORY,
    ),
]
