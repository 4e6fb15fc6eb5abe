"""Token limit rules (issue 30).

- ``edge-token-limits-in-production``: in production, a gateway that authenticates clients (a SecurityPolicy with
  ``apiKeyAuth``) meters tokens and limits every client in them: each client its requests-per-minute rule names
  also has a token rule (``cost.request`` ``Number 0``, ``cost.response`` ``from: Metadata`` in the metering
  namespace) in the same BackendTrafficPolicy, and an EnvoyExtensionPolicy runs the metering script.

Why: requests per minute cost the same for a 100-token question and a 30,000-token context; without token rules a
client can take the whole fleet's capacity within its request limit. A rule whose response cost is missing charges
nothing (Envoy drops a descriptor whose ``hits_addend`` format yields no number), and without the metering script
the metadata never exists (``components/edge/token_metering.py``).
"""

from __future__ import annotations

from typing import Any

from pulumi_policy import EnforcementLevel, PolicyConfigSchema, StackValidationArgs

from inference_platform.catalog.token_limits import METERING_NAMESPACE as METADATA_NAMESPACE
from inference_platform.policies.callbacks import ReportViolation, StackValidationPolicy
from inference_platform.policies.props import as_list, get

ENVOY_GATEWAY = "kubernetes:gateway.envoyproxy.io/v1alpha1:"
SECURITY_POLICY = ENVOY_GATEWAY + "SecurityPolicy"
BACKEND_TRAFFIC_POLICY = ENVOY_GATEWAY + "BackendTrafficPolicy"
EXTENSION_POLICY = ENVOY_GATEWAY + "EnvoyExtensionPolicy"


def _client(rule: Any) -> str | None:
    headers = as_list(
        get(as_list(get(rule, "clientSelectors"))[0] if as_list(get(rule, "clientSelectors")) else {}, "headers")
    )
    return str(get(headers[0], "value")) if headers else None


def _charges_tokens(rule: Any) -> bool:
    request, response = get(rule, "cost.request") or {}, get(rule, "cost.response") or {}
    return (
        get(request, "from") == "Number"
        and get(request, "number") in (0, 0.0)
        and get(response, "from") == "Metadata"
        and get(response, "metadata.namespace") == METADATA_NAMESPACE
        and bool(get(response, "metadata.key"))
    )


def _token_limits(args: StackValidationArgs, report: ReportViolation) -> None:
    if not args.get_config().get("production", False):
        return
    if not any(r.resource_type == SECURITY_POLICY and get(r.props, "spec.apiKeyAuth") for r in args.resources):
        return
    metered = any(
        r.resource_type == EXTENSION_POLICY
        and any(METADATA_NAMESPACE in str(get(lua, "inline") or "") for lua in as_list(get(r.props, "spec.lua")))
        for r in args.resources
    )
    for resource in args.resources:
        if resource.resource_type != BACKEND_TRAFFIC_POLICY:
            continue
        rules = as_list(get(resource.props, "spec.rateLimit.global.rules"))
        if not rules:
            continue
        name = (
            f"BackendTrafficPolicy {get(resource.props, 'metadata.namespace')}/{get(resource.props, 'metadata.name')}"
        )
        clients = {_client(r) for r in rules if not get(r, "cost")} - {None}
        limited = {_client(r) for r in rules if _charges_tokens(r)}
        for client in sorted(c for c in clients - limited if c):
            report(
                f"{name}: client {client} has no token limit (a rule with cost.request Number 0 and cost.response "
                f"from Metadata {METADATA_NAMESPACE}); production limits tokens: set edge.tokenLimits",
                resource.urn,
            )
        if limited and not metered:
            report(f"{name}: token rules without the metering EnvoyExtensionPolicy charge nothing", resource.urn)


POLICIES = [
    StackValidationPolicy(
        name="edge-token-limits-in-production",
        description="In production every authenticated client has a token limit charged from the metered usage.",
        validate=_token_limits,
        enforcement_level=EnforcementLevel.MANDATORY,
        config_schema=PolicyConfigSchema(properties={"production": {"type": "boolean", "default": False}}),
    ),
]
