"""Backend keep-alive rule: the gateway closes an idle connection to a replica before the replica's server does.

- ``gateway-closes-idle-backend-connections-first``: every BackendTrafficPolicy that is not a merge patch (a
  ``mergeType`` patch inherits the Gateway's) sets ``timeout.http.connectionIdleTimeout``, and every one that sets
  it sets it below the OpenAI server's keep-alive (``catalog.serving_contract.OPENAI_KEEPALIVE_SECONDS``). Unset, it
  is Envoy Gateway v1.9.0's "Default: 1 hour" (``api/v1alpha1/timeout_types.go`` ``HTTPTimeout``).

Why: the same race as the ALB's in front (``alb-targets-outlive-idle-timeout``), one hop further in. A server that
closes an idle connection as the gateway sends the next request on it resets a request that has already left:
Envoy answers 503 ``upstream_reset_before_response_started{connection_termination}`` and does not retry it (the
edge retries a generation only when no byte reached a server, ``catalog.edge_policy.RETRY_ON``). The edge's hour
against uvicorn's 5 s default exposed every connection idle for about 5 s to that race.
"""

from __future__ import annotations

from pulumi_policy import EnforcementLevel, ResourceValidationArgs
from pulumi_policy.proxy import UnknownValueError

from inference_platform.catalog.serving_contract import OPENAI_KEEPALIVE_SECONDS
from inference_platform.policies.callbacks import ReportViolation, ResourceValidationPolicy
from inference_platform.policies.props import as_document, get
from inference_platform.policies.rules.rate_limit_service import duration_ms
from inference_platform.policies.rules.token_limits import BACKEND_TRAFFIC_POLICY

FIELD = "timeout.http.connectionIdleTimeout"


def idle_problems(spec: object) -> list[str]:
    """Why a BackendTrafficPolicy's backend connections may be closed by the server first (empty when not)."""
    value = get(spec, FIELD)
    if value is None:
        if get(spec, "mergeType") is not None:
            return []
        return [
            f"spec.{FIELD} is unset (Envoy Gateway keeps idle backend connections 1 hour): set it below the OpenAI "
            f"server's keep-alive of {OPENAI_KEEPALIVE_SECONDS} s"
        ]
    ms = duration_ms(str(value))
    if ms is None or ms >= OPENAI_KEEPALIVE_SECONDS * 1000:
        return [
            f"spec.{FIELD} {value!r} must be a duration below the OpenAI server's keep-alive of "
            f"{OPENAI_KEEPALIVE_SECONDS} s, so the gateway closes an idle connection before the server does"
        ]
    return []


def _closes_first(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type != BACKEND_TRAFFIC_POLICY:
        return
    try:
        spec = get(as_document(args.props), "spec") or {}
    except UnknownValueError:
        return
    for problem in idle_problems(spec):
        report(f"{args.name}: {problem}")


POLICIES = [
    ResourceValidationPolicy(
        name="gateway-closes-idle-backend-connections-first",
        description="A BackendTrafficPolicy closes idle connections to the servers before their keep-alive ends "
        "(else a request sent on a connection the server is closing is a 503 nobody retries).",
        validate=_closes_first,
        enforcement_level=EnforcementLevel.MANDATORY,
    ),
]
