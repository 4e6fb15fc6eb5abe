"""Offline answers for the cluster and its compute: what EKS, EC2, SQS and EventBridge compute for the
resources of issue 3, deterministically and in AWS's formats, plus the one data source the cluster
reads (``aws:iam/getSessionContext``, resolving the deployer's role for its access entry).
"""

from __future__ import annotations

import base64
import hashlib
import textwrap
from typing import Any

from inference_platform.catalog import image_cache
from inference_platform.offline_plan.mock_context import Invoke, MockContext, Outputs


def _digest(*parts: str, length: int = 17) -> str:
    return hashlib.sha256("/".join(parts).encode()).hexdigest()[:length]


def certificate_authority_data(seed: str) -> str:
    """What EKS returns as ``certificateAuthority.data``: a base64-encoded PEM certificate block."""
    body = base64.b64encode(hashlib.sha512(seed.encode()).digest() * 8).decode()
    pem = "-----BEGIN CERTIFICATE-----\n" + "\n".join(textwrap.wrap(body, 64)) + "\n-----END CERTIFICATE-----\n"
    return base64.b64encode(pem.encode()).decode()


def _session_context(args: dict[str, Any], ctx: MockContext) -> dict[str, Any]:
    """An IAM user or role ARN is its own issuer; an assumed-role session resolves to its role."""
    arn = str(args.get("arn") or "")
    issuer, session = arn, ""
    if ":assumed-role/" in arn:
        role, session = arn.split(":assumed-role/", 1)[1].rsplit("/", 1)
        issuer = f"arn:{ctx.partition}:iam::{ctx.account_id}:role/{role}"
    name = issuer.rsplit("/", 1)[-1]
    return {"arn": arn, "issuerArn": issuer, "issuerId": f"AROA{_digest(issuer).upper()}", "issuerName": name,
            "sessionName": session, "id": arn}  # fmt: skip


def _eks_cluster(name: str, inputs: dict[str, Any], ctx: MockContext, _: str) -> dict[str, Any]:
    cluster = inputs.get("name") or name
    region = ctx.region.name
    oidc = _digest("oidc", cluster, length=32).upper()
    vpc = dict(inputs.get("vpcConfig") or {})
    vpc.update({"clusterSecurityGroupId": f"sg-{_digest('cluster-sg', cluster)}", "vpcId": f"vpc-{_digest(cluster)}"})
    return {
        "name": cluster,
        "id": cluster,
        "arn": f"arn:{ctx.partition}:eks:{region}:{ctx.account_id}:cluster/{cluster}",
        "endpoint": f"https://{oidc}.gr7.{region}.eks.amazonaws.com",
        "certificateAuthority": {"data": certificate_authority_data(cluster)},
        "identities": [{"oidcs": [{"issuer": f"https://oidc.eks.{region}.amazonaws.com/id/{oidc}"}]}],
        "vpcConfig": vpc,
        "status": "ACTIVE",
        "platformVersion": "eks.5",
        "clusterId": _uuid(f"cluster/{cluster}"),
    }


def _node_group(name: str, inputs: dict[str, Any], ctx: MockContext, _: str) -> dict[str, Any]:
    group = inputs.get("nodeGroupName") or name
    cluster = inputs.get("clusterName") or "cluster"
    uid = _uuid(f"nodegroup/{cluster}/{group}")
    return {
        "nodeGroupName": group,
        "arn": f"arn:{ctx.partition}:eks:{ctx.region.name}:{ctx.account_id}:nodegroup/{cluster}/{group}/{uid}",
        "status": "ACTIVE",
        "resources": [{"autoscalingGroups": [{"name": f"eks-{group}-{uid}"}], "remoteAccessSecurityGroupId": ""}],
    }


def _launch_template(name: str, inputs: dict[str, Any], ctx: MockContext, id_: str) -> dict[str, Any]:
    return {
        "latestVersion": 1,
        "defaultVersion": 1,
        "arn": f"arn:{ctx.partition}:ec2:{ctx.region.name}:{ctx.account_id}:launch-template/{id_}",
    }


def _placement_group(name: str, inputs: dict[str, Any], ctx: MockContext, id_: str) -> dict[str, Any]:
    group = inputs.get("name") or name
    return {
        "name": group,
        "placementGroupId": id_,
        "arn": f"arn:{ctx.partition}:ec2:{ctx.region.name}:{ctx.account_id}:placement-group/{group}",
    }


def _queue(name: str, inputs: dict[str, Any], ctx: MockContext, _: str) -> dict[str, Any]:
    queue = inputs.get("name") or f"{name}-{_digest('queue', name, length=7)}"
    region = ctx.region.name
    return {
        "name": queue,
        "url": f"https://sqs.{region}.{ctx.region.dns_suffix}/{ctx.account_id}/{queue}",
        "arn": f"arn:{ctx.partition}:sqs:{region}:{ctx.account_id}:{queue}",
    }


def _event_rule(name: str, inputs: dict[str, Any], ctx: MockContext, _: str) -> dict[str, Any]:
    rule = inputs.get("name") or f"{name}-{_digest('rule', name, length=7)}"
    return {"name": rule, "arn": f"arn:{ctx.partition}:events:{ctx.region.name}:{ctx.account_id}:rule/{rule}"}


def _addon(name: str, inputs: dict[str, Any], ctx: MockContext, _: str) -> dict[str, Any]:
    cluster, addon = inputs.get("clusterName", "cluster"), inputs.get("addonName", name)
    uid = _uuid(f"addon/{cluster}/{addon}")
    return {"arn": f"arn:{ctx.partition}:eks:{ctx.region.name}:{ctx.account_id}:addon/{cluster}/{addon}/{uid}"}


def _access_entry(name: str, inputs: dict[str, Any], ctx: MockContext, _: str) -> dict[str, Any]:
    cluster = inputs.get("clusterName", "cluster")
    principal = str(inputs.get("principalArn", name)).rsplit("/", 1)[-1]
    return {
        "accessEntryArn": f"arn:{ctx.partition}:eks:{ctx.region.name}:{ctx.account_id}:access-entry/{cluster}/"
        f"role/{ctx.account_id}/{principal}/{_uuid(f'entry/{cluster}/{principal}')}",
        "type": inputs.get("type") or "STANDARD",
    }


def _uuid(seed: str) -> str:
    h = _digest(seed, length=32)
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


OFFLINE_CACHE_KEY_SEED = "offline-storage-key"


def _storage_key_arn(ctx: MockContext) -> str:
    return f"arn:{ctx.partition}:kms:{ctx.region.name}:{ctx.account_id}:key/{_uuid(OFFLINE_CACHE_KEY_SEED)}"


def _snapshot(args: dict[str, Any], ctx: MockContext) -> dict[str, Any]:
    """A snapshot as ``inferctl image-cache build`` leaves it: completed, encrypted with the stack's storage key
    (what ``_kms_alias`` answers), tagged with the stack's serving image. The offline account cannot hold the user's snapshot: this
    is the one that passes the preflight (infra/image_cache.py), whose refusals are tested with other answers."""
    ids = list(args.get("snapshotIds") or [])
    snapshot_id = str(ids[0]) if ids else "snap-0123456789abcdef0"
    return {"id": snapshot_id, "snapshotId": snapshot_id, "state": "completed", "encrypted": True,
            "kmsKeyId": _storage_key_arn(ctx), "volumeSize": 100, "ownerId": ctx.account_id,
            "tags": ({image_cache.IMAGE_TAG_KEY: f"offline.example/serving@{ctx.serving_image_digest}"}
                     if ctx.serving_image_digest else {})}  # fmt: skip


def _kms_alias(args: dict[str, Any], ctx: MockContext) -> dict[str, Any]:
    name = str(args.get("name"))
    return {"id": name, "name": name, "arn": f"arn:{ctx.partition}:kms:{ctx.region.name}:{ctx.account_id}:{name}",
            "targetKeyArn": _storage_key_arn(ctx), "targetKeyId": _uuid(OFFLINE_CACHE_KEY_SEED)}  # fmt: skip


INVOKES: dict[str, Invoke] = {
    "aws:iam/getSessionContext:getSessionContext": _session_context,
    "aws:ebs/getSnapshot:getSnapshot": _snapshot,
    "aws:kms/getAlias:getAlias": _kms_alias,
}

OUTPUTS: dict[str, Outputs] = {
    "aws:eks/cluster:Cluster": _eks_cluster,
    "aws:eks/nodeGroup:NodeGroup": _node_group,
    "aws:eks/addon:Addon": _addon,
    "aws:eks/accessEntry:AccessEntry": _access_entry,
    "aws:ec2/launchTemplate:LaunchTemplate": _launch_template,
    "aws:ec2/placementGroup:PlacementGroup": _placement_group,
    "aws:sqs/queue:Queue": _queue,
    "aws:cloudwatch/eventRule:EventRule": _event_rule,
}
