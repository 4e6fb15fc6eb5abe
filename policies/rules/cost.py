"""Cost rules, priced with the same estimate `inferctl cost` prints (inference_platform.planners.costing):

- ``cost-monthly-budget``: the stack's expected monthly cost stays within ``monthlyBudgetUsd`` (0: no
  ceiling). Usage assumptions (NAT GiB, log GiB, bucket GiB, spot factor ...) come from ``assumptions``,
  each key declared in the config schema (``costing.assumptions_schema``: numbers, no other keys); bad
  ones are reported together, each as ``assumptions.<key>``. Accelerator pools are priced with the
  plan's own night schedule (the KEDA ScaledObjects), not with an assumption.
- ``cost-dev-on-demand-accelerators``: in development, accelerator pools that may launch on-demand
  capacity are reported with what they cost on demand at their maximum size.
- ``cost-nat-per-zone-production-only``: more than one NAT gateway outside production is reported
  with the monthly cost of the extra gateways.
- ``cost-dev-accelerator-pools-scale-to-zero``: in development, an accelerator pool with a floor above
  zero is reported with the monthly cost of that floor.

``environment`` in each rule's config (development | production, default production) says which stack
kind it judges; ``policies/config/<stack>.json`` sets it per stack.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pulumi_policy import EnforcementLevel, PolicyConfigSchema, PolicyResource, StackValidationArgs

from inference_platform.catalog import prices
from inference_platform.catalog.prices import PriceError
from inference_platform.planners import costing
from inference_platform.planners.costing import Usage, UsageError
from inference_platform.policies.callbacks import ReportViolation, StackValidationPolicy
from inference_platform.policies.props import get

NAT = "aws:ec2/natGateway:NatGateway"
DEVELOPMENT = "development"
_ENVIRONMENT = {"type": "string", "enum": ["development", "production"], "default": "production"}
_REGION = {"type": "string", "default": ""}
_ASSUMPTIONS = costing.assumptions_schema()


def as_plain(resources: Iterable[PolicyResource]) -> list[dict[str, Any]]:
    """Policy resources as the dicts ``costing`` reads. Launch templates get the id their node groups
    reference (policy views carry no ids), found through the ``launchTemplate`` property dependency.
    A resource other resources are parented to is a component (the engine shows the pack those too):
    its children carry its cost, so it is not priced itself (it would count as unknown)."""
    resources = list(resources)
    parents = {r.parent.urn for r in resources if r.parent is not None}
    out: dict[str, dict[str, Any]] = {}
    for r in resources:
        out[r.urn] = {"urn": r.urn, "type": r.resource_type, "name": r.name, "custom": r.urn not in parents,
                      "inputs": r.props}  # fmt: skip
    for r in resources:
        if r.resource_type == costing.NODE_GROUP:
            lt_id = get(r.props, "launchTemplate.id")
            for dep in (r.property_dependencies or {}).get("launchTemplate", []):
                if lt_id and dep.urn in out:
                    out[dep.urn]["id"] = lt_id
    return list(out.values())


def _region(resources: list[dict[str, Any]], configured: str) -> str:
    if configured:
        return configured
    return costing.plan_region({"resources": resources})


def _usage(args: StackValidationArgs, report: ReportViolation) -> Usage | None:
    """The configured assumptions; None (reported, naming each ``assumptions.<key>``) when invalid."""
    try:
        return Usage.from_config(args.get_config().get("assumptions"))
    except UsageError as err:
        report(f"cannot price this stack: {err}")
        return None


def stack_estimate(args: StackValidationArgs, report: ReportViolation) -> costing.Estimate | None:
    config = args.get_config()
    resources = as_plain(args.resources)
    usage = _usage(args, report)
    if usage is None:
        return None
    try:
        return costing.estimate(resources, region=_region(resources, str(config.get("region") or "")), usage=usage)
    except PriceError as err:
        report(f"cannot price this stack: {err}")
        return None


def _budget(args: StackValidationArgs, report: ReportViolation) -> None:
    ceiling = float(args.get_config().get("monthlyBudgetUsd") or 0)
    if ceiling <= 0:
        return
    estimate = stack_estimate(args, report)
    if estimate is None:
        return
    if estimate.monthly_expected > ceiling:
        top = sorted(estimate.by("category").items(), key=lambda kv: -kv[1][1])[:3]
        parts = ", ".join(f"{k} ${v[1]:,.0f}" for k, v in top)
        report(
            f"expected monthly cost ${estimate.monthly_expected:,.0f} is over this stack's budget of ${ceiling:,.0f} "
            f"(largest: {parts}; {len(estimate.unknown)} resources of unknown cost not counted)"
        )


def _pools(args: StackValidationArgs, report: ReportViolation) -> list[tuple[PolicyResource, costing.Line]]:
    """Accelerator pools with their priced lines; reported and empty when the stack cannot be priced."""
    resources = {r.urn: r for r in args.resources}
    estimate = stack_estimate(args, report)
    if estimate is None:
        return []
    return [(resources[line.urn], line) for line in estimate.accelerator_pools()]


def _dev_on_demand(args: StackValidationArgs, report: ReportViolation) -> None:
    if args.get_config().get("environment", "production") != DEVELOPMENT:
        return
    for resource, line in _pools(args, report):
        if line.spot_share < 1:
            on_demand = line.monthly_max_on_demand or 0.0
            report(
                f"{resource.name}: accelerator pool may run on demand in development; at its maximum that is "
                f"${on_demand:,.0f} a month on demand (spot would be about "
                f"${on_demand * prices.DEFAULT_SPOT_FACTOR:,.0f})",
                resource.urn,
            )


def _nat_per_zone(args: StackValidationArgs, report: ReportViolation) -> None:
    if args.get_config().get("environment", "production") != DEVELOPMENT:
        return
    gateways = [r for r in args.resources if r.resource_type == NAT]
    if len(gateways) <= 1:
        return
    config = args.get_config()
    usage = _usage(args, report)
    if usage is None:
        return
    try:
        region = _region(as_plain(args.resources), str(config.get("region") or ""))
        one = (prices.service(prices.NAT_GATEWAY_HOUR, region) * prices.HOURS_PER_MONTH
               + prices.service(prices.NAT_GATEWAY_GB, region) * usage.nat_gib_per_gateway)  # fmt: skip
    except PriceError as err:
        report(f"cannot price this stack: {err}")
        return
    report(
        f"{len(gateways)} NAT gateways (one per zone) outside production: the {len(gateways) - 1} extra cost "
        f"${one * (len(gateways) - 1):,.0f} a month; use natGateways: single"
    )


def _scale_to_zero(args: StackValidationArgs, report: ReportViolation) -> None:
    if args.get_config().get("environment", "production") != DEVELOPMENT:
        return
    for resource, line in _pools(args, report):
        floor = line.monthly_min or 0.0
        if floor > 0:
            report(
                f"{resource.name}: accelerator pool keeps nodes when idle in development (floor costs "
                f"${floor:,.0f} a month); set its minSize to 0",
                resource.urn,
            )


_ENV_SCHEMA = PolicyConfigSchema(properties={"environment": _ENVIRONMENT, "region": _REGION, "assumptions": _ASSUMPTIONS})  # fmt: skip

POLICIES = [
    StackValidationPolicy(
        name="cost-monthly-budget",
        description="The stack's expected monthly cost (inferctl cost) stays within its budget.",
        validate=_budget,
        enforcement_level=EnforcementLevel.MANDATORY,
        config_schema=PolicyConfigSchema(
            properties={
                "monthlyBudgetUsd": {"type": "number", "default": 0, "minimum": 0},
                "region": _REGION,
                "assumptions": _ASSUMPTIONS,
            }
        ),
    ),
    StackValidationPolicy(
        name="cost-dev-on-demand-accelerators",
        description="Development accelerator pools that may run on demand are reported with their price.",
        validate=_dev_on_demand,
        enforcement_level=EnforcementLevel.ADVISORY,
        config_schema=_ENV_SCHEMA,
    ),
    StackValidationPolicy(
        name="cost-nat-per-zone-production-only",
        description="A NAT gateway per zone only in production; elsewhere one, and the extra ones priced.",
        validate=_nat_per_zone,
        enforcement_level=EnforcementLevel.MANDATORY,
        config_schema=_ENV_SCHEMA,
    ),
    StackValidationPolicy(
        name="cost-dev-accelerator-pools-scale-to-zero",
        description="Development accelerator pools scale to zero; a floor is reported with its monthly cost.",
        validate=_scale_to_zero,
        enforcement_level=EnforcementLevel.MANDATORY,
        config_schema=_ENV_SCHEMA,
    ),
]
