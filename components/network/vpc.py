"""The VPC: public, private and intra subnets over N zones, NAT, routes, the S3 endpoint and flow logs.

Subnets come from :func:`inference_platform.components.cidr.carve`, so addresses never move when zones or tiers are
added. Every zone has its own private route table whatever the NAT mode: switching ``single`` to
``perAz`` then only changes routes, never subnet associations.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, cast

import pulumi
import pulumi_aws as aws

from inference_platform.components.common.errors import raise_if
from inference_platform.planners.cidr import carve

NatMode = Literal["single", "perAz", "none"]
DEFAULT_SUBNET_PREFIXES: Mapping[str, int] = {"private": 19, "public": 24, "intra": 26}
DEFAULT_FLOW_LOG_RETENTION_DAYS = 30


@dataclass(frozen=True, kw_only=True)
class FlowLogsArgs:
    """The VPC's flow logs: the key of their log group, retention, traffic type and aggregation interval."""

    kms_key_arn: pulumi.Input[str]
    """Required. KMS key that encrypts the flow-log group (its policy must admit CloudWatch Logs)."""
    retention_days: int = DEFAULT_FLOW_LOG_RETENTION_DAYS
    """Default 30. One of CloudWatch Logs' fixed retention periods."""
    traffic_type: Literal["ALL", "ACCEPT", "REJECT"] = "ALL"
    """Default ``ALL``."""
    max_aggregation_interval: Literal[60, 600] = 600
    """Default 600 seconds."""


@dataclass(frozen=True, kw_only=True)
class NetworkArgs:
    """What the VPC needs: its CIDR, zones, cluster name, region, account, flow logs and NAT layout."""

    cidr: str
    """Required. The VPC's IPv4 block, e.g. ``10.0.0.0/16``."""
    availability_zones: Sequence[str]
    """Required. Zone names, one subnet per tier in each; order is the carve order (keep it stable)."""
    cluster_name: str
    """Required. EKS cluster whose load balancers and Karpenter discover these subnets by tag."""
    region: str
    """Required. The region of the zones (the S3 endpoint's service name uses it)."""
    account_id: str
    """Required. Account id, used to scope the flow-log delivery role's trust."""
    flow_logs: FlowLogsArgs
    """Required. Flow logs are always on."""
    nat_gateways: NatMode = "single"
    """Default ``single``. ``perAz`` gives each zone its own NAT; ``none`` creates no NAT."""
    intra_subnets: bool = False
    """Default ``False``. Subnets without internet routes (EKS control-plane ENIs)."""
    subnet_prefixes: Mapping[str, int] = field(default_factory=lambda: dict(DEFAULT_SUBNET_PREFIXES))
    """Default private /19, public /24, intra /26."""


class Network(pulumi.ComponentResource):
    """A VPC laid out for an EKS inference cluster."""

    vpc_id: pulumi.Output[str]
    vpc_cidr: str
    public_subnet_ids: list[pulumi.Output[str]]
    private_subnet_ids: list[pulumi.Output[str]]
    intra_subnet_ids: list[pulumi.Output[str]]
    private_subnet_ids_by_zone: dict[str, pulumi.Output[str]]
    private_route_table_ids: list[pulumi.Output[str]]
    flow_log_group_name: pulumi.Output[str]

    def __init__(self, name: str, args: NetworkArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        _validate(args)
        super().__init__("inference:network:Network", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        self.vpc_cidr = args.cidr
        vpc = aws.ec2.Vpc(
            f"{name}-vpc",
            cidr_block=args.cidr,
            enable_dns_support=True,
            enable_dns_hostnames=True,  # required by interface endpoints' private DNS and EKS
            tags={"Name": f"{args.cluster_name}-vpc"},
            opts=child,
        )
        self.vpc_id = vpc.id
        # AWS's default SG admits all traffic between its members: strip it so nothing relies on it.
        aws.ec2.DefaultSecurityGroup(f"{name}-default-sg", vpc_id=vpc.id, ingress=[], egress=[], opts=child)

        subnets = self._subnets(name, args, vpc, child)
        public = subnets["public"]
        self.public_subnet_ids = [s.id for s in public.values()]
        self.private_subnet_ids = [s.id for s in subnets["private"].values()]
        self.private_subnet_ids_by_zone = {z: s.id for z, s in subnets["private"].items()}
        self.intra_subnet_ids = [s.id for s in subnets.get("intra", {}).values()]

        igw = aws.ec2.InternetGateway(
            f"{name}-igw", vpc_id=vpc.id, tags={"Name": f"{args.cluster_name}-igw"}, opts=child
        )
        public_rt = aws.ec2.RouteTable(
            f"{name}-public-rt", vpc_id=vpc.id, tags={"Name": f"{args.cluster_name}-public"}, opts=child
        )
        aws.ec2.Route(
            f"{name}-public-default",
            route_table_id=public_rt.id,
            destination_cidr_block="0.0.0.0/0",
            gateway_id=igw.id,
            opts=child,
        )
        for zone, subnet in public.items():
            aws.ec2.RouteTableAssociation(
                f"{name}-public-{zone}-rta", subnet_id=subnet.id, route_table_id=public_rt.id, opts=child
            )

        nats = self._nat_gateways(name, args, public, igw, child)
        private_rts = []
        for zone, subnet in subnets["private"].items():
            rt = aws.ec2.RouteTable(
                f"{name}-private-{zone}-rt",
                vpc_id=vpc.id,
                tags={"Name": f"{args.cluster_name}-private-{zone}"},
                opts=child,
            )
            nat = nats.get(zone) or nats.get("*")
            if nat is not None:
                aws.ec2.Route(
                    f"{name}-private-{zone}-default",
                    route_table_id=rt.id,
                    destination_cidr_block="0.0.0.0/0",
                    nat_gateway_id=nat.id,
                    opts=child,
                )
            aws.ec2.RouteTableAssociation(
                f"{name}-private-{zone}-rta", subnet_id=subnet.id, route_table_id=rt.id, opts=child
            )
            private_rts.append(rt)
        route_tables = list(private_rts)
        if "intra" in subnets:
            intra_rt = aws.ec2.RouteTable(
                f"{name}-intra-rt", vpc_id=vpc.id, tags={"Name": f"{args.cluster_name}-intra"}, opts=child
            )
            for zone, subnet in subnets["intra"].items():
                aws.ec2.RouteTableAssociation(
                    f"{name}-intra-{zone}-rta", subnet_id=subnet.id, route_table_id=intra_rt.id, opts=child
                )
            route_tables.append(intra_rt)
        self.private_route_table_ids = [rt.id for rt in private_rts]

        # Model pulls from S3 stay on the AWS network: no NAT data-processing charge, no NAT bottleneck.
        aws.ec2.VpcEndpoint(
            f"{name}-s3",
            vpc_id=vpc.id,
            service_name=f"com.amazonaws.{args.region}.s3",
            vpc_endpoint_type="Gateway",
            route_table_ids=[rt.id for rt in route_tables],
            tags={"Name": f"{args.cluster_name}-s3"},
            opts=child,
        )
        self.flow_log_group_name = self._flow_logs(name, args, vpc, child)

        self.register_outputs(
            {
                "vpc_id": self.vpc_id,
                "public_subnet_ids": self.public_subnet_ids,
                "private_subnet_ids": self.private_subnet_ids,
                "intra_subnet_ids": self.intra_subnet_ids,
                "flow_log_group_name": self.flow_log_group_name,
            }
        )

    def _subnets(
        self, name: str, args: NetworkArgs, vpc: aws.ec2.Vpc, child: pulumi.ResourceOptions
    ) -> dict[str, dict[str, aws.ec2.Subnet]]:
        zones = list(args.availability_zones)
        wanted = {"public", "private"} | ({"intra"} if args.intra_subnets else set())
        role_tags = {
            "public": {"kubernetes.io/role/elb": "1"},
            "private": {"kubernetes.io/role/internal-elb": "1", "karpenter.sh/discovery": args.cluster_name},
            "intra": {},
        }
        out: dict[str, dict[str, aws.ec2.Subnet]] = {tier: {} for tier in sorted(wanted)}
        for plan in carve(args.cidr, len(zones), args.subnet_prefixes):
            if plan.tier not in wanted:
                continue
            zone = zones[plan.zone_index]
            out[plan.tier][zone] = aws.ec2.Subnet(
                f"{name}-{plan.tier}-{zone}",  # keyed by zone name, never by list position
                vpc_id=vpc.id,
                cidr_block=plan.cidr,
                availability_zone=zone,
                map_public_ip_on_launch=False,  # nothing in this VPC gets a public IP by accident
                tags={
                    "Name": f"{args.cluster_name}-{plan.tier}-{zone}",
                    "tier": plan.tier,
                    f"kubernetes.io/cluster/{args.cluster_name}": "shared",
                    **role_tags[plan.tier],
                },
                opts=child,
            )
        return out

    def _nat_gateways(
        self,
        name: str,
        args: NetworkArgs,
        public: Mapping[str, aws.ec2.Subnet],
        igw: aws.ec2.InternetGateway,
        child: pulumi.ResourceOptions,
    ) -> dict[str, aws.ec2.NatGateway]:
        if args.nat_gateways == "none":
            return {}
        zones = list(public) if args.nat_gateways == "perAz" else [next(iter(public))]
        nats = {}
        for zone in zones:
            eip = aws.ec2.Eip(
                f"{name}-nat-{zone}-eip", domain="vpc", tags={"Name": f"{args.cluster_name}-nat-{zone}"}, opts=child
            )
            nats[zone] = aws.ec2.NatGateway(
                f"{name}-nat-{zone}",
                allocation_id=eip.allocation_id,
                subnet_id=public[zone].id,
                tags={"Name": f"{args.cluster_name}-nat-{zone}"},
                opts=pulumi.ResourceOptions(parent=self, depends_on=[igw]),
            )
        if args.nat_gateways == "single":
            return {"*": nats[zones[0]]}
        return nats

    def _flow_logs(
        self, name: str, args: NetworkArgs, vpc: aws.ec2.Vpc, child: pulumi.ResourceOptions
    ) -> pulumi.Output[str]:
        group = aws.cloudwatch.LogGroup(
            f"{name}-flow-logs",
            name=f"/aws/vpc/{args.cluster_name}/flow-logs",
            retention_in_days=args.flow_logs.retention_days,
            kms_key_id=args.flow_logs.kms_key_arn,
            opts=child,
        )
        role = aws.iam.Role(
            f"{name}-flow-logs-role",
            description="Delivers this VPC's flow logs to CloudWatch Logs",
            assume_role_policy=json.dumps(
                {
                    "Version": "2012-10-17",
                    "Statement": [
                        {
                            "Effect": "Allow",
                            "Principal": {"Service": "vpc-flow-logs.amazonaws.com"},
                            "Action": "sts:AssumeRole",
                            # Confused-deputy guard: only flow logs of this account may assume it.
                            "Condition": {"StringEquals": {"aws:SourceAccount": args.account_id}},
                        }
                    ],
                }
            ),
            opts=child,
        )
        aws.iam.RolePolicy(
            f"{name}-flow-logs-policy",
            role=role.id,
            policy=group.arn.apply(
                lambda arn: json.dumps(
                    {
                        "Version": "2012-10-17",
                        "Statement": [
                            {
                                "Effect": "Allow",
                                "Action": ["logs:CreateLogStream", "logs:PutLogEvents", "logs:DescribeLogStreams"],
                                "Resource": [arn, f"{arn}:*"],
                            }
                        ],
                    }
                )
            ),
            opts=child,
        )
        aws.ec2.FlowLog(
            f"{name}-flow-log",
            vpc_id=vpc.id,
            traffic_type=args.flow_logs.traffic_type,
            log_destination_type="cloud-watch-logs",
            log_destination=group.arn,
            iam_role_arn=role.arn,
            max_aggregation_interval=args.flow_logs.max_aggregation_interval,
            tags={"Name": f"{args.cluster_name}-flow-log"},
            opts=child,
        )
        return cast(pulumi.Output[str], group.name)  # pulumi_aws is read as Any (pyproject.toml)


def _validate(args: NetworkArgs) -> None:
    problems = []
    zones = list(args.availability_zones)
    if not zones:
        problems.append("availability_zones: at least one zone is required")
    if len(set(zones)) != len(zones):
        problems.append(f"availability_zones: {zones} repeats a zone")
    stray = [z for z in zones if not z.startswith(args.region)]
    if stray:
        problems.append(f"availability_zones: {stray} are not zones of {args.region}")
    if args.nat_gateways not in ("single", "perAz", "none"):
        problems.append(f"nat_gateways: {args.nat_gateways!r} is not single, perAz or none")
    if zones and not problems:
        try:
            carve(args.cidr, len(zones), args.subnet_prefixes)
        except ValueError as err:
            problems.append(f"cidr: {err}")
    raise_if("Network", problems)
