"""Network for other Pulumi languages: flat, schema-friendly Args mapped onto components.network.Network."""

# No ``from __future__ import annotations``: the provider's analyzer reads these annotations at run time
# (inspect.get_annotations without eval), so they must be real types, not strings.
from enum import Enum
from typing import NotRequired, TypedDict

import pulumi

from inference_platform.components.multilang.options import inner_options, supplied
from inference_platform.components.network import FlowLogsArgs
from inference_platform.components.network import Network as _Network
from inference_platform.components.network import NetworkArgs as _NetworkArgs


class NatGateways(Enum):
    """NAT gateways of the VPC."""

    SINGLE = "single"
    """One NAT gateway, in the first zone, for every private subnet."""
    PER_AZ = "perAz"
    """One NAT gateway per zone (no cross-zone dependency)."""
    NONE = "none"
    """No NAT: private subnets have no internet route."""


class NetworkArgs(TypedDict):
    """The VPC of an EKS inference cluster: public, private (and optionally intra) subnets per zone, NAT,
    routes, an S3 gateway endpoint and KMS-encrypted flow logs."""

    cidr: str
    """The VPC's IPv4 block, e.g. ``10.0.0.0/16``; subnets are carved from it per zone and tier."""
    availability_zones: list[str]
    """Zone names of ``region``, one subnet per tier in each; keep the order stable (it is the carve order)."""
    cluster_name: str
    """The EKS cluster whose load balancers and Karpenter discover these subnets by tag."""
    region: str
    """The region of the zones."""
    account_id: str
    """The AWS account id; scopes the flow-log delivery role's trust."""
    flow_logs_kms_key_arn: pulumi.Input[str]
    """KMS key that encrypts the flow-log group (its key policy must admit CloudWatch Logs)."""
    flow_log_retention_days: NotRequired[int]
    """Default 30. One of CloudWatch Logs' retention periods."""
    nat_gateways: NotRequired[NatGateways]
    """Default ``single``."""
    intra_subnets: NotRequired[bool]
    """Default false. Subnets without internet routes (for the EKS control-plane ENIs)."""


class Network(pulumi.ComponentResource):
    """A VPC laid out for an EKS inference cluster (components.network.Network)."""

    vpc_id: pulumi.Output[str]
    """The VPC's id."""
    public_subnet_ids: pulumi.Output[list[str]]
    """Public subnets, in zone order."""
    private_subnet_ids: pulumi.Output[list[str]]
    """Private subnets, in zone order (nodes and pods)."""
    intra_subnet_ids: pulumi.Output[list[str]]
    """Intra subnets, in zone order (empty unless ``intraSubnets``)."""
    private_subnet_ids_by_zone: pulumi.Output[dict[str, str]]
    """Private subnet per zone name (what a node pool takes)."""

    def __init__(self, name: str, args: NetworkArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("inference-platform:index:Network", name, {}, opts)
        network = _Network(
            name,
            _NetworkArgs(
                **supplied(args, "cidr", "availability_zones", "cluster_name", "region", "account_id"),
                flow_logs=FlowLogsArgs(
                    kms_key_arn=args["flow_logs_kms_key_arn"],
                    **supplied(args, flow_log_retention_days="retention_days"),
                ),
                **supplied(args, "nat_gateways", "intra_subnets"),
            ),
            inner_options(self, opts),
        )
        self.vpc_id = network.vpc_id
        self.public_subnet_ids = pulumi.Output.all(*network.public_subnet_ids)
        self.private_subnet_ids = pulumi.Output.all(*network.private_subnet_ids)
        self.intra_subnet_ids = pulumi.Output.all(*network.intra_subnet_ids)
        self.private_subnet_ids_by_zone = pulumi.Output.all(**network.private_subnet_ids_by_zone)
        self.register_outputs({})
