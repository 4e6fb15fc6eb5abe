"""The stack's foundation: KMS keys, the VPC, security groups and interface endpoints."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pulumi
import pulumi_aws as aws

from inference_platform.catalog import offerings
from inference_platform.components.keys.kms import (
    AUTOSCALING_ROLE_NAME,
    AUTOSCALING_SERVICE,
    SERVICE_ROLE_MARKER,
    Keys,
    KeysArgs,
    autoscaling_service_role_arn,
    spot_service_role_arn,
)
from inference_platform.components.network.endpoints import InterfaceEndpoints, InterfaceEndpointsArgs
from inference_platform.components.network.security_groups import SecurityGroups, SecurityGroupsArgs
from inference_platform.components.network.vpc import FlowLogsArgs, Network, NetworkArgs
from inference_platform.settings import Settings
from inference_platform.settings.keys import uses_spot


@dataclass(frozen=True)
class Foundation:
    account_id: str
    partition: str
    zones: list[str]
    cluster_name: str
    keys: Keys
    network: Network
    security_groups: SecurityGroups


def build_foundation(settings: Settings) -> Foundation:
    account_id = aws.get_caller_identity().account_id
    partition = aws.get_partition().partition
    zones = availability_zones(settings)
    cluster_name = settings.name_prefix
    autoscaling_role_preflight(settings, account_id)

    keys = Keys(
        "keys",
        KeysArgs(
            alias_prefix=settings.name_prefix,
            account_id=account_id,
            partition=partition,
            region=settings.region.name,
            admin_role_arns=settings.access.admin_role_arns,
            # Managed node groups launch through Auto Scaling, Spot instances through EC2 Spot's role, with
            # root volumes on the storage key.
            volume_service_role_arns=[
                autoscaling_service_role_arn(partition, account_id),
                *([spot_service_role_arn(partition, account_id)] if uses_spot(settings.node_pools) else []),
            ],
            create_autoscaling_service_role=settings.keys.create_autoscaling_service_role,
            create_spot_service_role=settings.keys.create_spot_service_role,
            deletion_window_days=settings.keys.deletion_window(settings.environment),
            rotation_period_days=settings.keys.rotation_period_days,
            protect=settings.production,
        ),
    )
    net = settings.network
    network = Network(
        "network",
        NetworkArgs(
            cidr=net.cidr,
            availability_zones=zones,
            region=settings.region.name,
            cluster_name=cluster_name,
            account_id=account_id,
            nat_gateways=net.nat_gateways,
            intra_subnets=net.intra_subnets,
            subnet_prefixes=net.subnet_prefixes,
            flow_logs=FlowLogsArgs(
                kms_key_arn=keys.logs_key_arn,
                retention_days=net.flow_logs.retention_days,
                traffic_type=net.flow_logs.traffic_type,
                max_aggregation_interval=net.flow_logs.max_aggregation_interval,
            ),
        ),
    )
    groups = SecurityGroups(
        "security-groups",
        SecurityGroupsArgs(
            vpc_id=network.vpc_id,
            vpc_cidr=net.cidr,
            cluster_name=cluster_name,
            allowed_ingress_cidrs=settings.edge.allowed_ingress_cidrs,
            redirect_http=settings.edge.redirect_http,
        ),
    )
    services = net.endpoint_services(
        karpenter=settings.cluster.provisioning == "karpenter", fsx=settings.fsx.enabled, batch=settings.batch.enabled
    )
    if services:
        InterfaceEndpoints(
            "endpoints",
            InterfaceEndpointsArgs(
                vpc_id=network.vpc_id,
                region=settings.region.name,
                subnet_ids=network.private_subnet_ids,
                security_group_id=groups.endpoint_sg_id,
                services=services,
                name_prefix=cluster_name,
            ),
        )

    pulumi.export("region", settings.region.name)
    pulumi.export("availabilityZones", zones)
    pulumi.export("vpcId", network.vpc_id)
    pulumi.export("privateSubnetIds", network.private_subnet_ids)
    pulumi.export("publicSubnetIds", network.public_subnet_ids)
    pulumi.export(
        "keyArns", {"cluster": keys.cluster_key_arn, "storage": keys.storage_key_arn, "logs": keys.logs_key_arn}
    )
    pulumi.export("securityGroupIds", {"loadBalancer": groups.load_balancer_sg_id, "nodes": groups.node_sg_id})
    return Foundation(account_id, partition, zones, cluster_name, keys, network, groups)


def autoscaling_role_preflight(settings: Settings, account_id: str) -> None:
    """Fail the preview, before anything is created, when the first ``up`` would fail creating the storage key.

    The key policy names EC2 Auto Scaling's service-linked role, and KMS refuses a policy naming a role that does
    not exist (``MalformedPolicyDocumentException``; terraform-provider-aws #28644); AWS creates the role with an
    account's first Auto Scaling group, so a fresh account has none. ``keys.createAutoscalingServiceRole`` creates it
    (tagged as this stack's), and IAM refuses to create it where it exists ("has been taken in this account"). So:
    missing and not to be created, or to be created and already there but not created by this stack, is an error
    naming the key and the one-line fix. The look-up lists the role by name (an empty answer, not an error, when it
    is missing) and reads its tags."""
    create = settings.keys.create_autoscaling_service_role
    found = aws.iam.get_roles(
        name_regex=f"^{AUTOSCALING_ROLE_NAME}$", path_prefix=f"/aws-service-role/{AUTOSCALING_SERVICE}/"
    )
    exists = AUTOSCALING_ROLE_NAME in (found.names or [])
    if not exists and not create:
        raise pulumi.RunError(
            f"keys.createAutoscalingServiceRole: {AUTOSCALING_ROLE_NAME} does not exist in account {account_id}, and "
            "the storage key's policy names it (KMS refuses a policy naming a missing role): set "
            "keys.createAutoscalingServiceRole: true for this stack (it creates the role before the keys and keeps it "
            "on destroy), or run `aws iam create-service-linked-role --aws-service-name autoscaling.amazonaws.com` once"
        )
    if exists and create:
        tags = dict(aws.iam.get_role(name=AUTOSCALING_ROLE_NAME).tags or {})
        if tags.get(SERVICE_ROLE_MARKER) != settings.name_prefix:
            raise pulumi.RunError(
                f"keys.createAutoscalingServiceRole: {AUTOSCALING_ROLE_NAME} already exists in account {account_id} "
                "and this stack did not create it (IAM refuses a second one): set keys.createAutoscalingServiceRole: "
                "false"
            )


def availability_zones(settings: Settings) -> list[str]:
    """The zones to use, checked against what this account can use in the region right now."""
    answer = aws.get_availability_zones(
        state="available", filters=[{"name": "opt-in-status", "values": ["opt-in-not-required"]}]
    )
    available = answer.names
    net = settings.network
    wanted = list(net.availability_zones) if net.availability_zones else sorted(available)[: net.az_count]
    missing = [z for z in wanted if z not in available]
    if missing or len(wanted) < net.az_count:
        raise pulumi.RunError(
            f"network.azCount: {net.az_count} zones requested but {settings.region.name} offers this account "
            f"{len(available)} ({', '.join(sorted(available))})"
            + (f"; not available: {', '.join(missing)}" if missing else "")
        )
    problems = pool_offering_problems(settings, wanted, dict(zip(answer.names, answer.zone_ids or (), strict=False)))
    if problems:
        raise pulumi.RunError("; ".join(problems))
    return wanted


def pool_offering_problems(settings: Settings, zones: list[str], zone_ids: dict[str, str]) -> list[str]:
    """Each pool's types offered in each of its zones, by this account's zone IDs (names map to zones per
    account in the oldest regions, so settings alone cannot check them there: inference_platform.catalog.offerings)."""
    region = settings.region.name
    mapped = " (zone IDs as this account's DescribeAvailabilityZones maps its names)"
    account = mapped if offerings.names_are_account_specific(region) else ""
    groups: list[tuple[str, Sequence[str], Sequence[str]]] = [
        ("cluster.systemNodeGroup.instanceTypes", settings.cluster.system_node_group.instance_types, zones)
    ]
    groups += [
        (f"nodePools.{name}.availabilityZones", pool.instance_types, pool.zones(zones))
        for name, pool in settings.node_pools.root.items()
    ]
    out = []
    for key, types, group_zones in groups:
        known = [z for z in group_zones if z in zone_ids]
        for gap in offerings.unoffered(types, region, known, zone_ids):
            out.append(f"{key}: {gap.describe(region)}{account}")
    return out
