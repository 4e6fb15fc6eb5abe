"""Interface VPC endpoints, so nodes and controllers reach AWS APIs without NAT.

Optional: each endpoint costs per hour per zone (inference_platform.catalog.endpoint_services), so development
stacks usually do without; a VPC with ``natGateways: none`` cannot.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import pulumi
import pulumi_aws as aws

from inference_platform.catalog.endpoint_services import KNOWN_SERVICES
from inference_platform.components.common.errors import raise_if

# What an EKS node needs to boot and pull images in a private subnet (EKS private-cluster guide).
DEFAULT_SERVICES: tuple[str, ...] = ("ecr.api", "ecr.dkr", "sts", "logs", "ec2")


@dataclass(frozen=True, kw_only=True)
class InterfaceEndpointsArgs:
    """What the interface endpoints need: the VPC, its subnets, security group and the services."""

    vpc_id: pulumi.Input[str]
    """Required."""
    region: str
    """Required. Region of the service names (``com.amazonaws.<region>.<service>``)."""
    subnet_ids: Sequence[pulumi.Input[str]]
    """Required. One subnet per zone (usually the private ones)."""
    security_group_id: pulumi.Input[str]
    """Required. Must admit 443 from the VPC."""
    services: Sequence[str] = field(default_factory=lambda: DEFAULT_SERVICES)
    """Default ECR api/dkr, STS, CloudWatch Logs and EC2."""
    name_prefix: str = "inference"
    """Default ``inference``. Prefix of the endpoints' Name tags."""


class InterfaceEndpoints(pulumi.ComponentResource):
    """Interface VPC endpoints, so nodes and controllers reach AWS APIs without NAT."""

    endpoint_ids: dict[str, pulumi.Output[str]]

    def __init__(self, name: str, args: InterfaceEndpointsArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        raise_if(
            "InterfaceEndpoints",
            ([] if args.subnet_ids else ["subnet_ids: at least one subnet is required"])
            + [f"services: {s!r} is not a known endpoint service" for s in args.services if s not in KNOWN_SERVICES]
            + (
                [f"services: {list(args.services)} repeats a service"]
                if len(set(args.services)) != len(args.services)
                else []
            ),
        )
        super().__init__("inference:network:InterfaceEndpoints", name, None, opts)
        self.endpoint_ids = {}
        for service in args.services:
            endpoint = aws.ec2.VpcEndpoint(
                f"{name}-{service.replace('.', '-')}",
                vpc_id=args.vpc_id,
                service_name=f"com.amazonaws.{args.region}.{service}",
                vpc_endpoint_type="Interface",
                subnet_ids=list(args.subnet_ids),
                security_group_ids=[args.security_group_id],
                private_dns_enabled=True,
                tags={"Name": f"{args.name_prefix}-{service}"},
                opts=pulumi.ResourceOptions(parent=self),
            )
            self.endpoint_ids[service] = endpoint.id
        self.register_outputs({"endpoint_ids": self.endpoint_ids})
