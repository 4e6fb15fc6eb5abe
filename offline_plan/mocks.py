"""Strict, realistic mocks: data sources answer like AWS would for the stack's region, and every
resource gets the ids, ARNs and names AWS would compute, deterministically.

An invoke without an answer here is an error naming its token: a mock that returned ``None`` fields
would make the program fail far from the cause.
"""

from __future__ import annotations

import re
from typing import Any

import pulumi

from inference_platform.offline_plan import mocks_compute
from inference_platform.offline_plan.mock_context import (
    Invoke,
    MockContext,
    Outputs,
    digest,
)
from inference_platform.offline_plan.mocks_edge import OUTPUTS as EDGE_OUTPUTS
from inference_platform.offline_plan.mocks_inference import OUTPUTS as INFERENCE_OUTPUTS
from inference_platform.offline_plan.mocks_storage import OUTPUTS as STORAGE_OUTPUTS


class UnmockedInvokeError(Exception):
    def __init__(self, token: str) -> None:
        super().__init__(f"data source {token} has no offline answer; add one to offline_plan/mocks.py INVOKES")
        self.token = token


def _caller_identity(_: dict[str, Any], ctx: MockContext) -> dict[str, Any]:
    arn = f"arn:{ctx.partition}:iam::{ctx.account_id}:user/offline-plan"
    return {"accountId": ctx.account_id, "arn": arn, "userId": "AIDAOFFLINEPLAN", "id": ctx.account_id}


def _partition(_: dict[str, Any], ctx: MockContext) -> dict[str, Any]:
    suffix = ctx.region.dns_suffix
    return {"partition": ctx.partition, "dnsSuffix": suffix, "reverseDnsPrefix": "com.amazonaws", "id": ctx.partition}


def _availability_zones(_: dict[str, Any], ctx: MockContext) -> dict[str, Any]:
    region = ctx.region
    return {
        "names": list(region.zones),
        "zoneIds": list(region.zone_ids),
        "groupNames": [region.name] * len(region.zones),
        "state": "available",
        "id": region.name,
    }


def _region(_: dict[str, Any], ctx: MockContext) -> dict[str, Any]:
    name = ctx.region.name
    return {"name": name, "region": name, "id": name, "description": name, "endpoint": f"ec2.{name}.amazonaws.com"}


def _roles(args: dict[str, Any], ctx: MockContext) -> dict[str, Any]:
    """IAM roles by name pattern (``aws.iam.get_roles``): the service-linked roles the offline account has."""
    pattern = re.compile(str(args.get("nameRegex") or ".*"))
    names = sorted(n for n in ctx.service_linked_roles if pattern.search(n))
    arns = [f"arn:{ctx.partition}:iam::{ctx.account_id}:role/aws-service-role/{n}" for n in names]
    return {"names": names, "arns": arns, "id": ctx.region.name}


def _role(args: dict[str, Any], ctx: MockContext) -> dict[str, Any]:
    name = str(args.get("name"))
    if name not in ctx.service_linked_roles:
        raise ValueError(f"NoSuchEntity: role {name}")
    arn = f"arn:{ctx.partition}:iam::{ctx.account_id}:role/aws-service-role/{name}"
    return {"name": name, "arn": arn, "id": name, "tags": dict(ctx.service_linked_roles[name])}


INVOKES: dict[str, Invoke] = {
    "aws:iam/getRoles:getRoles": _roles,
    "aws:iam/getRole:getRole": _role,
    "aws:index/getCallerIdentity:getCallerIdentity": _caller_identity,
    "aws:index/getPartition:getPartition": _partition,
    "aws:index/getAvailabilityZones:getAvailabilityZones": _availability_zones,
    "aws:index/getRegion:getRegion": _region,
}

# Resource-specific outputs AWS computes: (name, inputs, ctx, physical id) -> extra outputs.

# EC2-style id prefixes make ids in plans and test failures readable.
_ID_PREFIXES = {
    "aws:ec2/vpc:Vpc": "vpc",
    "aws:ec2/subnet:Subnet": "subnet",
    "aws:ec2/securityGroup:SecurityGroup": "sg",
    "aws:ec2/defaultSecurityGroup:DefaultSecurityGroup": "sg",
    "aws:ec2/internetGateway:InternetGateway": "igw",
    "aws:ec2/natGateway:NatGateway": "nat",
    "aws:ec2/eip:Eip": "eipalloc",
    "aws:ec2/routeTable:RouteTable": "rtb",
    "aws:ec2/vpcEndpoint:VpcEndpoint": "vpce",
    "aws:ec2/flowLog:FlowLog": "fl",
    "aws:ec2/launchTemplate:LaunchTemplate": "lt",
    "aws:ec2/placementGroup:PlacementGroup": "pg",
    "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule": "sgr",
    "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule": "sgr",
}


def physical_id(type_: str, name: str) -> str:
    prefix = _ID_PREFIXES.get(type_)
    return f"{prefix}-{digest(type_, name)}" if prefix else f"{name}-{digest(type_, name, length=8)}"


def autoname(name: str, type_: str) -> str:
    """Pulumi's auto-naming: the logical name plus a random suffix (deterministic here)."""
    return f"{name}-{digest('autoname', type_, name, length=7)}"


def _kms_key(name: str, inputs: dict[str, Any], ctx: MockContext, _: str) -> dict[str, Any]:
    key_id = _uuid(f"kms/{name}")
    return {"keyId": key_id, "arn": f"arn:{ctx.partition}:kms:{ctx.region.name}:{ctx.account_id}:key/{key_id}"}


def _log_group(name: str, inputs: dict[str, Any], ctx: MockContext, _: str) -> dict[str, Any]:
    group = inputs.get("name") or autoname(name, "log-group")
    return {"name": group, "arn": f"arn:{ctx.partition}:logs:{ctx.region.name}:{ctx.account_id}:log-group:{group}"}


def _iam_role(name: str, inputs: dict[str, Any], ctx: MockContext, _: str) -> dict[str, Any]:
    role = inputs.get("name") or autoname(name, "role")
    path = inputs.get("path") or "/"
    return {
        "name": role,
        "id": role,
        "uniqueId": f"AROA{digest(role, length=17).upper()}",
        "arn": f"arn:{ctx.partition}:iam::{ctx.account_id}:role{path}{role}",
    }


def _eip(name: str, inputs: dict[str, Any], ctx: MockContext, id_: str) -> dict[str, Any]:
    return {"allocationId": id_, "publicIp": "198.51.100.10"}


def _vpc(name: str, inputs: dict[str, Any], ctx: MockContext, id_: str) -> dict[str, Any]:
    return {"defaultSecurityGroupId": f"sg-{digest('default', id_)}", "mainRouteTableId": f"rtb-{digest('main', id_)}"}


OUTPUTS: dict[str, Outputs] = {
    "aws:kms/key:Key": _kms_key,
    "aws:cloudwatch/logGroup:LogGroup": _log_group,
    "aws:iam/role:Role": _iam_role,
    "aws:ec2/eip:Eip": _eip,
    "aws:ec2/vpc:Vpc": _vpc,
}
OUTPUTS.update(STORAGE_OUTPUTS)
INVOKES.update(mocks_compute.INVOKES)
OUTPUTS.update(mocks_compute.OUTPUTS)
OUTPUTS.update(INFERENCE_OUTPUTS)
OUTPUTS.update(EDGE_OUTPUTS)


def _uuid(seed: str) -> str:
    h = digest(seed, length=32)
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


def generic_arn(type_: str, physical: str, ctx: MockContext) -> str:
    service = type_.split(":")[1].split("/")[0]
    resource = type_.split(":")[-1].lower()
    return f"arn:{ctx.partition}:{service}:{ctx.region.name}:{ctx.account_id}:{resource}/{physical}"


class PlanMocks(pulumi.runtime.Mocks):
    def __init__(self, ctx: MockContext) -> None:
        self.ctx = ctx

    # pulumi's MockMonitor takes a plain dict (no check failures) but declares only (dict, failures), and a
    # (dict, None) it cannot iterate: the dict it is.
    def call(self, args: pulumi.runtime.MockCallArgs) -> dict[str, Any]:  # type: ignore[override]  # see above
        answer = INVOKES.get(args.token)
        if answer is None:
            raise UnmockedInvokeError(args.token)
        return answer(dict(args.args), self.ctx)

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str | None, dict[str, Any]]:
        if not args.custom:
            return None, {}
        id_ = args.resource_id or physical_id(args.typ, args.name)
        outputs = dict(args.inputs)
        if args.typ.startswith("aws:"):
            outputs.setdefault("arn", generic_arn(args.typ, id_, self.ctx))
            outputs.setdefault("tagsAll", outputs.get("tags", {}))
        extra = OUTPUTS.get(args.typ)
        if extra is not None:
            outputs.update(extra(args.name, dict(args.inputs), self.ctx, id_))
        return outputs.pop("id", None) or id_, outputs
