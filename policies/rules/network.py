"""Network rules: nothing open to the world but the load balancer's 80/443; flow logs on every VPC.

"The world" is any set of CIDRs that reaches more public addresses than one /8 (IPv6: one /16), not only
``0.0.0.0/0`` (``inference_platform.planners.cidr.internet_wide``; private and reserved ranges do not count): rules
of one security group on overlapping ports are collapsed together, so ``0.0.0.0/1`` + ``128.0.0.0/1`` in
two rules is as open as one ``0.0.0.0/0``, and ``0.0.0.0/1`` + ``128.0.0.0/2`` (75% of it) is judged the
same way."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pulumi_policy import EnforcementLevel, PolicyResource, StackValidationArgs

from inference_platform.components.network.security_groups import ROLE_LOAD_BALANCER, ROLE_TAG
from inference_platform.planners.cidr import internet_wide
from inference_platform.policies.callbacks import ReportViolation, StackValidationPolicy
from inference_platform.policies.props import as_list, get

WORLD = frozenset({"0.0.0.0/0", "::/0"})
WORLD_PORTS = frozenset({80, 443})


@dataclass(frozen=True)
class _Ingress:
    resource: PolicyResource
    rule: dict[str, Any]
    group: PolicyResource | None
    target: str
    cidrs: tuple[str, ...]


def _ingress_rules(resource: PolicyResource) -> Iterator[_Ingress]:
    """Every IPv4/IPv6 ingress rule the resource declares, with its target security group."""
    props, kind = resource.props, resource.resource_type
    if kind == "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule":
        group = _dependency(resource, "securityGroupId")
        cidrs = tuple(str(c) for c in (get(props, "cidrIpv4"), get(props, "cidrIpv6")) if c)
        yield _Ingress(resource, dict(props), group, _target(resource, group), cidrs)
    elif kind == "aws:ec2/securityGroupRule:SecurityGroupRule" and get(props, "type") == "ingress":
        group = _dependency(resource, "securityGroupId")
        yield _Ingress(resource, dict(props), group, _target(resource, group), _cidrs(props))
    elif kind == "aws:ec2/securityGroup:SecurityGroup":
        for rule in as_list(get(props, "ingress")):
            yield _Ingress(resource, dict(rule), resource, resource.urn, _cidrs(rule))


def _cidrs(rule: Any) -> tuple[str, ...]:
    return tuple(str(c) for c in [*as_list(get(rule, "cidrBlocks")), *as_list(get(rule, "ipv6CidrBlocks"))])


def _target(resource: PolicyResource, group: PolicyResource | None) -> str:
    return group.urn if group is not None else str(get(resource.props, "securityGroupId") or resource.urn)


def _ports(rule: dict[str, Any]) -> tuple[str, float, float]:
    protocol = str(get(rule, "ipProtocol", get(rule, "protocol", ""))).lower()
    if protocol in ("-1", "all"):
        return "-1", 0, 65535
    return protocol, float(get(rule, "fromPort", 0) or 0), float(get(rule, "toPort", 65535) or 0)


def _contains(outer: tuple[str, float, float], inner: tuple[str, float, float]) -> bool:
    return (outer[0] == "-1" or outer[0] == inner[0]) and outer[1] <= inner[1] and inner[2] <= outer[2]


def _world_ingress(
    resources: list[PolicyResource],
) -> Iterator[tuple[PolicyResource, dict[str, Any], PolicyResource | None, str]]:
    """(resource, rule, target group, how) for every rule open to the world: naming 0.0.0.0/0 or ::/0
    itself, or (per security group and port range) together with its siblings reaching more of the
    internet than a /8, as ``0.0.0.0/1`` + ``128.0.0.0/2`` do."""
    rules = [r for resource in resources for r in _ingress_rules(resource)]
    partial = [r for r in rules if r.cidrs and not set(r.cidrs) & WORLD]
    for r in rules:
        if set(r.cidrs) & WORLD:
            yield r.resource, r.rule, r.group, "open to the world"
    for r in partial:
        ports = _ports(r.rule)
        siblings = [o for o in partial if o.target == r.target and _contains(_ports(o.rule), ports)]
        covered = internet_wide(c for o in siblings for c in o.cidrs)
        if covered:
            names = sorted({o.resource.name for o in siblings})
            yield (
                r.resource,
                r.rule,
                r.group,
                f"open to the world: with {', '.join(names)} its CIDRs cover {covered[0]}",
            )


def _dependency(resource: PolicyResource, prop: str) -> PolicyResource | None:
    deps = resource.property_dependencies.get(prop) or []
    return deps[0] if len(deps) == 1 else None


def _is_https_or_redirect(rule: dict[str, Any]) -> bool:
    protocol = str(get(rule, "ipProtocol", get(rule, "protocol", ""))).lower()
    low, high = get(rule, "fromPort"), get(rule, "toPort")
    return protocol in ("tcp", "6") and low == high and low in WORLD_PORTS


def _no_world_ingress(args: StackValidationArgs, report: ReportViolation) -> None:
    for resource, rule, group, how in _world_ingress(list(args.resources)):
        ports = f"{get(rule, 'ipProtocol', get(rule, 'protocol'))} {get(rule, 'fromPort')}-{get(rule, 'toPort')}"
        if not _is_https_or_redirect(rule):
            report(f"{resource.name}: {ports} is {how}; only 80/443 on a load balancer may be", resource.urn)
        elif group is None:
            report(f"{resource.name}: world-open rule on a security group this stack does not define", resource.urn)
        elif get(group.props, f"tags.{ROLE_TAG}") != ROLE_LOAD_BALANCER:
            report(
                f"{resource.name}: world-open {ports} on {group.name}, which is not a load balancer group "
                f"(tag {ROLE_TAG}={ROLE_LOAD_BALANCER})",
                resource.urn,
            )


def _flow_logs_on_every_vpc(args: StackValidationArgs, report: ReportViolation) -> None:
    logged: set[str] = set()
    for resource in args.resources:
        if resource.resource_type == "aws:ec2/flowLog:FlowLog":
            logged.update(dep.urn for dep in resource.property_dependencies.get("vpcId", []))
            logged.add(get(resource.props, "vpcId"))
    for resource in args.resources:
        if (
            resource.resource_type == "aws:ec2/vpc:Vpc"
            and resource.urn not in logged
            and get(resource.props, "id") not in logged
        ):
            report(f"{resource.name}: VPC without flow logs; add an aws.ec2.FlowLog for it", resource.urn)


POLICIES = [
    StackValidationPolicy(
        name="no-world-ingress",
        description="No 0.0.0.0/0 or ::/0 ingress except TCP 80/443 on a load balancer security group.",
        validate=_no_world_ingress,
        enforcement_level=EnforcementLevel.MANDATORY,
    ),
    StackValidationPolicy(
        name="vpc-flow-logs",
        description="Every VPC has flow logs.",
        validate=_flow_logs_on_every_vpc,
        enforcement_level=EnforcementLevel.MANDATORY,
    ),
]
