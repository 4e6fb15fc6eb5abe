"""Security groups: the load balancer, the inference nodes and the interface endpoints.

Every rule is its own resource with a description, so a change to one rule never rewrites another
and policies can judge each rule alone. The only world-reachable ports are the load balancer's 443
(and 80 for the HTTPS redirect), and only when ``allowed_ingress_cidrs`` says so explicitly.

The load balancer's group holds nothing but those listener ports: the ALB reaches its targets (the edge's Envoy
pods, target type ``ip``) through the shared backend security group the AWS Load Balancer Controller attaches to
it, which it also admits on the targets' port (the Ingress's ``manage-backend-security-group-rules: "true"``;
kubernetes-sigs/aws-load-balancer-controller v3.5.0 docs/guide/ingress/annotations.md: "controller attaches an
additional shared backend security group to your load balancer. This backend security group is used in the
Node/Pod security group rules"). Triton's own ports (HTTP 8000, gRPC 8001) are opened to nothing: the public API
is the OpenAI server behind the gateway (issue 20), and policy ``lb-security-group-edge-ports-only`` refuses a
load-balancer group rule on any other port.
"""

from __future__ import annotations

import functools
import ipaddress
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pulumi
import pulumi_aws as aws

from inference_platform.components.common.errors import raise_if

# Triton's Prometheus metrics port (REFERENCE.md §3).
DEFAULT_METRICS_PORT = 8002
ROLE_TAG = "network-role"
ROLE_LOAD_BALANCER = "load-balancer"


@dataclass(frozen=True, kw_only=True)
class SecurityGroupsArgs:
    """What the security groups need: the VPC, its CIDR and the CIDRs admitted to the load balancer."""

    vpc_id: pulumi.Input[str]
    """Required."""
    vpc_cidr: str
    """Required. Monitoring inside the VPC may scrape metrics; interface endpoints admit 443 from it."""
    cluster_name: str
    """Required. Tags the node SG for Karpenter discovery (``karpenter.sh/discovery``)."""
    allowed_ingress_cidrs: Sequence[str] = field(default_factory=tuple)
    """Default none: the load balancer admits nobody until CIDRs are given."""
    redirect_http: bool = True
    """Default ``True``. Also open 80 (same CIDRs) for the listener's redirect to HTTPS."""
    metrics_port: int = DEFAULT_METRICS_PORT
    """Default 8002: reachable from inside the VPC only (Prometheus)."""


class SecurityGroups(pulumi.ComponentResource):
    """The security groups: the load balancer's, the inference nodes' and the interface endpoints'."""

    load_balancer_sg_id: pulumi.Output[str]
    node_sg_id: pulumi.Output[str]
    endpoint_sg_id: pulumi.Output[str]

    def __init__(self, name: str, args: SecurityGroupsArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        _validate(args)
        super().__init__("inference:network:SecurityGroups", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)

        def group(
            role: str, role_tag: str, description: str, extra_tags: Mapping[str, str] | None = None
        ) -> aws.ec2.SecurityGroup:
            return aws.ec2.SecurityGroup(
                f"{name}-{role}",
                vpc_id=args.vpc_id,
                description=description,
                # Rules live in separate resources; inline blocks would fight them on every update.
                tags={"Name": f"{args.cluster_name}-{role}", ROLE_TAG: role_tag, **(extra_tags or {})},
                opts=child,
            )

        # The role tag is what the no-world-ingress policy trusts: only `load-balancer` may face 0.0.0.0/0.
        lb = group("lb", ROLE_LOAD_BALANCER, "Inference load balancer")
        nodes = group("nodes", "nodes", "Inference nodes", {"karpenter.sh/discovery": args.cluster_name})
        endpoints = group("endpoints", "endpoints", "VPC interface endpoints")

        def rule(
            kind: type[aws.vpc.SecurityGroupIngressRule] | type[aws.vpc.SecurityGroupEgressRule],
            key: str,
            sg: aws.ec2.SecurityGroup,
            description: str,
            port: int | None,
            **peer: object,
        ) -> None:
            kind(
                f"{name}-{key}",
                security_group_id=sg.id,
                description=description,
                ip_protocol="tcp" if port is not None else "-1",
                from_port=port,
                to_port=port,
                **peer,
                opts=child,
            )

        ingress = functools.partial(rule, aws.vpc.SecurityGroupIngressRule)
        egress = functools.partial(rule, aws.vpc.SecurityGroupEgressRule)

        lb_ports = {"https": 443} | ({"http": 80} if args.redirect_http else {})
        for cidr in args.allowed_ingress_cidrs:
            for label, port in lb_ports.items():
                what = "HTTPS to the inference API" if port == 443 else "HTTP, redirected to HTTPS"
                ingress(f"lb-{label}-{_cidr_key(cidr)}", lb, f"{what} from {cidr}", port, cidr_ipv4=cidr)
        ingress("nodes-metrics-from-vpc", nodes, "Prometheus scrapes Triton metrics from inside the VPC",
                args.metrics_port, cidr_ipv4=args.vpc_cidr)  # fmt: skip
        # NCCL and EFA need every port between peers; EFA also requires the SG to admit itself.
        ingress("nodes-self", nodes, "All traffic between inference nodes (NCCL, EFA)", None,
                referenced_security_group_id=nodes.id)  # fmt: skip
        egress("nodes-self", nodes, "All traffic between inference nodes (NCCL, EFA)", None,
               referenced_security_group_id=nodes.id)  # fmt: skip
        egress("nodes-all", nodes, "Nodes reach AWS APIs, registries and S3", None, cidr_ipv4="0.0.0.0/0")
        ingress("endpoints-https-from-vpc", endpoints, "HTTPS to interface endpoints from the VPC", 443,
                cidr_ipv4=args.vpc_cidr)  # fmt: skip

        self.load_balancer_sg_id = lb.id
        self.node_sg_id = nodes.id
        self.endpoint_sg_id = endpoints.id
        self.register_outputs(
            {
                "load_balancer_sg_id": self.load_balancer_sg_id,
                "node_sg_id": self.node_sg_id,
                "endpoint_sg_id": self.endpoint_sg_id,
            }
        )


def _cidr_key(cidr: str) -> str:
    """A stable resource-name fragment for a CIDR (``10.0.0.0/8`` -> ``10-0-0-0-8``)."""
    return cidr.replace(".", "-").replace("/", "-")


def _validate(args: SecurityGroupsArgs) -> None:
    problems = []
    for cidr in (args.vpc_cidr, *args.allowed_ingress_cidrs):
        try:
            ipaddress.IPv4Network(cidr, strict=True)
        except ValueError as err:
            problems.append(f"CIDR {cidr!r}: {err}")
    if len(set(args.allowed_ingress_cidrs)) != len(args.allowed_ingress_cidrs):
        problems.append(f"allowed_ingress_cidrs: {list(args.allowed_ingress_cidrs)} repeats a CIDR")
    if not 1 <= args.metrics_port <= 65535:
        problems.append(f"port metrics={args.metrics_port} is outside 1-65535")
    raise_if("SecurityGroups", problems)
