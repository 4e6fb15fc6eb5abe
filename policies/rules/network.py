"""Network rules: nothing open to the world but the load balancer's 80/443; flow logs on every VPC."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    PolicyResource,
    ReportViolation,
    StackValidationArgs,
    StackValidationPolicy,
)

from components.network.security_groups import ROLE_LOAD_BALANCER, ROLE_TAG
from policies.props import as_list, get

WORLD = frozenset({"0.0.0.0/0", "::/0"})
WORLD_PORTS = frozenset({80, 443})


def _world_ingress(resource: PolicyResource) -> Iterator[tuple[dict[str, Any], PolicyResource | None]]:
    """(rule, target security group) for every world-open ingress the resource declares."""
    props, kind = resource.props, resource.resource_type
    if kind == "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule":
        if {get(props, "cidrIpv4"), get(props, "cidrIpv6")} & WORLD:
            yield dict(props), _dependency(resource, "securityGroupId")
    elif kind == "aws:ec2/securityGroupRule:SecurityGroupRule" and get(props, "type") == "ingress":
        if (set(as_list(get(props, "cidrBlocks"))) | set(as_list(get(props, "ipv6CidrBlocks")))) & WORLD:
            yield dict(props), _dependency(resource, "securityGroupId")
    elif kind == "aws:ec2/securityGroup:SecurityGroup":
        for rule in as_list(get(props, "ingress")):
            if (set(as_list(get(rule, "cidrBlocks"))) | set(as_list(get(rule, "ipv6CidrBlocks")))) & WORLD:
                yield dict(rule), resource


def _dependency(resource: PolicyResource, prop: str) -> PolicyResource | None:
    deps = resource.property_dependencies.get(prop) or []
    return deps[0] if len(deps) == 1 else None


def _is_https_or_redirect(rule: dict[str, Any]) -> bool:
    protocol = str(get(rule, "ipProtocol", get(rule, "protocol", ""))).lower()
    low, high = get(rule, "fromPort"), get(rule, "toPort")
    return protocol in ("tcp", "6") and low == high and low in WORLD_PORTS


def _no_world_ingress(args: StackValidationArgs, report: ReportViolation) -> None:
    for resource in args.resources:
        for rule, group in _world_ingress(resource):
            ports = f"{get(rule, 'ipProtocol', get(rule, 'protocol'))} {get(rule, 'fromPort')}-{get(rule, 'toPort')}"
            if not _is_https_or_redirect(rule):
                report(
                    f"{resource.name}: {ports} is open to the world; only 80/443 on a load balancer may be",
                    resource.urn,
                )
            elif group is None:
                report(f"{resource.name}: world-open rule on a security group this stack does not define", resource.urn)
            elif get(group.props, f"tags.{ROLE_TAG}") != ROLE_LOAD_BALANCER:
                report(
                    f"{resource.name}: world-open {ports} on {group.name}, which is not a load balancer group "
                    f"(tag {ROLE_TAG}={ROLE_LOAD_BALANCER})",
                    resource.urn,
                )


def _flow_logs_on_every_vpc(args: StackValidationArgs, report: ReportViolation) -> None:
    logged = set()
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
