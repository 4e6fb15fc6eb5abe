"""Token alarm rule (issue 30).

- ``edge-token-alarm-in-production``: in production, a stack whose gateway charges tokens (a BackendTrafficPolicy
  rule with ``cost.response`` from the metering namespace) also watches the charges: a PrometheusRule holds the
  ``TokensChargedNotServed`` alert (``components/observability/token_rules.py``).

Why: a metering gap is silent. A request that reaches a replica without a usable charge (the Lua filter disabled,
the rate-limit service unreachable at stream end, a path around the Gateway) is free, and nothing else notices: the
limits simply never bite and the showback undercounts nobody, since it reads the served side.
"""

from __future__ import annotations

from pulumi_policy import EnforcementLevel, PolicyConfigSchema, StackValidationArgs

from inference_platform.catalog.token_limits import METERING_NAMESPACE
from inference_platform.components.observability.token_rules import ALERT
from inference_platform.policies.callbacks import ReportViolation, StackValidationPolicy
from inference_platform.policies.props import as_list, get
from inference_platform.policies.rules.observability import PROMETHEUS_RULE
from inference_platform.policies.rules.token_limits import BACKEND_TRAFFIC_POLICY


def _token_alarm(args: StackValidationArgs, report: ReportViolation) -> None:
    if not args.get_config().get("production", False):
        return
    charging = [
        r
        for r in args.resources
        if r.resource_type == BACKEND_TRAFFIC_POLICY
        and any(
            get(rule, "cost.response.metadata.namespace") == METERING_NAMESPACE
            for rule in as_list(get(r.props, "spec.rateLimit.global.rules"))
        )
    ]
    if not charging:
        return
    alerts = {
        get(rule, "alert")
        for r in args.resources
        if r.resource_type == PROMETHEUS_RULE
        for group in as_list(get(r.props, "spec.groups"))
        for rule in as_list(get(group, "rules"))
    }
    if ALERT not in alerts:
        for resource in charging:
            report(
                f"the gateway charges tokens but no PrometheusRule holds the {ALERT} alert (charged against served); "
                "production watches its metering: keep observability.enabled with the edge",
                resource.urn,
            )


POLICIES = [
    StackValidationPolicy(
        name="edge-token-alarm-in-production",
        description="In production a gateway that charges tokens has the charged-versus-served alarm.",
        validate=_token_alarm,
        enforcement_level=EnforcementLevel.MANDATORY,
        config_schema=PolicyConfigSchema(properties={"production": {"type": "boolean", "default": False}}),
    ),
]
