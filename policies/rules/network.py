"""Network rules: nothing open to the world but the load balancer's 80/443; the load balancer's group opens only
the edge's ports; flow logs on every VPC.

``lb-security-group-edge-ports-only``: a security group tagged ``network-role: load-balancer`` admits only TCP 443
and 80 (the ALB's listeners), and every rule that lets it reach something (its own egress rules, and other
groups' rules naming it as the peer) is on a port of a Gateway listener of the stack (the edge's Envoy, where the
ALB's targets are): no Triton port (8000/8001) or any other opened from the load balancer to the nodes (issue 28:
those rules outlived the move of the edge's targets to Envoy and left Triton's KServe ports reachable from the ALB
on every node).

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


GATEWAY = "kubernetes:gateway.networking.k8s.io/v1:Gateway"
INGRESS_RULE = "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"
EGRESS_RULE = "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule"
LEGACY_RULE = "aws:ec2/securityGroupRule:SecurityGroupRule"
SECURITY_GROUP = "aws:ec2/securityGroup:SecurityGroup"


def _port_text(rule: dict[str, Any]) -> str:
    protocol, low, high = _ports(rule)
    return "all traffic" if protocol == "-1" else f"{protocol} {low:.0f}-{high:.0f}"


def _only(rule: dict[str, Any], ports: set[int]) -> bool:
    protocol, low, high = _ports(rule)
    return protocol in ("tcp", "6") and low == high and int(low) in ports


def _urns(resource: PolicyResource, owner: str, peer: str) -> tuple[str | None, str | None]:
    """The URNs of a rule's own security group and of its peer group (None when not of this stack)."""
    found = (_dependency(resource, owner), _dependency(resource, peer))
    return found[0].urn if found[0] else None, found[1].urn if found[1] else None


def _edge_ports_only(args: StackValidationArgs, report: ReportViolation) -> None:
    resources = list(args.resources)
    lbs = {
        r.urn
        for r in resources
        if r.resource_type == SECURITY_GROUP and get(r.props, f"tags.{ROLE_TAG}") == ROLE_LOAD_BALANCER
    }
    if not lbs:
        return
    targets = {
        int(get(listener, "port"))
        for r in resources
        if r.resource_type == GATEWAY
        for listener in as_list(get(r.props, "spec.listeners"))
        if get(listener, "port") is not None
    }
    target_text = ", ".join(str(p) for p in sorted(targets)) or "none: the stack has no Gateway"
    for resource in resources:
        kind, props = resource.resource_type, resource.props
        rules: list[tuple[str, dict[str, Any], str | None, str | None]] = []  # (direction, rule, owner, peer)
        if kind in (INGRESS_RULE, EGRESS_RULE):
            direction = "ingress" if kind == INGRESS_RULE else "egress"
            rules.append((direction, dict(props), *_urns(resource, "securityGroupId", "referencedSecurityGroupId")))
        elif kind == LEGACY_RULE:
            direction = str(get(props, "type"))
            rules.append((direction, dict(props), *_urns(resource, "securityGroupId", "sourceSecurityGroupId")))
        elif kind == SECURITY_GROUP:
            for direction in ("ingress", "egress"):
                for rule in as_list(get(props, direction)):
                    rules.append((direction, dict(rule), resource.urn, None))
        for direction, rule, owner_urn, peer_urn in rules:
            if owner_urn in lbs and direction == "ingress" and not _only(rule, set(WORLD_PORTS)):
                report(
                    f"{resource.name}: the load balancer's security group admits {_port_text(rule)}; it takes only its "
                    "listeners' TCP 443 and 80",
                    resource.urn,
                )
            elif (
                (owner_urn in lbs and direction == "egress") or (peer_urn in lbs and direction == "ingress")
            ) and not _only(rule, targets):
                report(
                    f"{resource.name}: opens {_port_text(rule)} from the load balancer; it reaches only the edge's "
                    f"Gateway listener ports ({target_text}), never Triton's or the nodes' other ports",
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
        name="lb-security-group-edge-ports-only",
        description="The load balancer's security group admits only TCP 443/80 and reaches only the edge's Gateway "
        "listener ports (no Triton port opened from the load balancer).",
        validate=_edge_ports_only,
        enforcement_level=EnforcementLevel.MANDATORY,
    ),
    StackValidationPolicy(
        name="vpc-flow-logs",
        description="Every VPC has flow logs.",
        validate=_flow_logs_on_every_vpc,
        enforcement_level=EnforcementLevel.MANDATORY,
    ),
]
