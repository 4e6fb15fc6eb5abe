"""Offline outputs of the edge's AWS resources, in AWS's formats: the ACM certificate's DNS-validation
record, Route 53 record names, and the ElastiCache primary endpoint."""

from __future__ import annotations

from typing import Any

from inference_platform.offline_plan.mock_context import MockContext, Outputs
from inference_platform.offline_plan.mocks_storage import digest


def _certificate(name: str, inputs: dict[str, Any], ctx: MockContext, id_: str) -> dict[str, Any]:
    domain = str(inputs.get("domainName", ""))
    token = digest("acm", domain, length=32)
    return {
        "arn": f"arn:{ctx.partition}:acm:{ctx.region.name}:{ctx.account_id}:certificate/"
        f"{token[:8]}-{token[8:12]}-{token[12:16]}-{token[16:20]}-{token[20:32]}",
        "domainValidationOptions": [
            {
                "domainName": domain,
                "resourceRecordName": f"_{token[:32]}.{domain}.",
                "resourceRecordType": "CNAME",
                "resourceRecordValue": f"_{digest('acm-value', domain, length=32)}.acm-validations.aws.",
            }
        ],
        "status": "PENDING_VALIDATION",
    }


def _record(name: str, inputs: dict[str, Any], ctx: MockContext, id_: str) -> dict[str, Any]:
    return {"fqdn": str(inputs.get("name", "")).rstrip(".")}


def _replication_group(name: str, inputs: dict[str, Any], ctx: MockContext, id_: str) -> dict[str, Any]:
    group = str(inputs.get("replicationGroupId", name))
    return {
        "primaryEndpointAddress": f"master.{group}.{digest('ec', group, length=6)}.{ctx.region.name}.cache.amazonaws.com"
    }


OUTPUTS: dict[str, Outputs] = {
    "aws:acm/certificate:Certificate": _certificate,
    "aws:route53/record:Record": _record,
    "aws:elasticache/replicationGroup:ReplicationGroup": _replication_group,
}
