"""The Redis behind Envoy Gateway's global rate limits (counters per client id and minute).

- ``elasticache`` (production): a Valkey replication group in the private subnets with TLS in transit,
  at-rest encryption under the storage CMK, an AUTH token generated into Secrets Manager, automatic
  failover across two nodes, and a security group admitting 6379 only from the cluster's nodes (where
  the gateway's rate-limit pods run; pods share their node's security group without security groups
  for pods).
- ``inCluster`` (development): one small Redis Deployment and ClusterIP Service in the gateway's
  namespace, admitted by a NetworkPolicy from that namespace only; counters are lost on restart, which
  development accepts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from inference_platform.catalog import edge_charts as charts
from inference_platform.catalog.names import fit_name
from inference_platform.components.common.errors import raise_if
from inference_platform.components.common.security_context import container_security_context, pod_security_context
from inference_platform.components.secrets.generated import generated_secret

MODES = ("elasticache", "inCluster")
REDIS_PORT = 6379
NONROOT_UID = 999  # the redis user of the official image
IN_CLUSTER_NAME = "ratelimit-redis"


@dataclass(frozen=True, kw_only=True)
class RateLimitStoreArgs:
    """What the rate-limit Redis needs: its mode and, for ElastiCache, the network, key and sizes."""

    mode: str
    """Required. ``elasticache`` or ``inCluster``."""
    name_prefix: str
    """Required."""
    namespace: str
    """Required. The gateway's namespace (in-cluster Redis lives there)."""
    provider: k8s.Provider | None = None
    """Required for ``inCluster``."""
    vpc_id: pulumi.Input[str] | None = None
    """Required for ``elasticache``."""
    subnet_ids: Sequence[pulumi.Input[str]] = ()
    """Required for ``elasticache``: the private subnets."""
    client_security_group_id: pulumi.Input[str] | None = None
    """Required for ``elasticache``: the only source admitted (the nodes' security group)."""
    kms_key_arn: pulumi.Input[str] | None = None
    """Required for ``elasticache``: at-rest encryption and the AUTH secret."""
    node_type: str = "cache.t4g.small"
    """Default ``cache.t4g.small``."""
    recovery_window_days: int = 30
    """Default 30."""
    protect: bool = False
    """Default ``False``."""


class RateLimitStore(pulumi.ComponentResource):
    """The Redis behind Envoy Gateway's global rate limits: ElastiCache, or one in-cluster pod."""

    url: pulumi.Output[str]
    """``host:port`` for Envoy Gateway's ``rateLimit.backend.redis.url``."""
    tls: bool
    auth_secret_arn: pulumi.Output[str] | None

    def __init__(self, name: str, args: RateLimitStoreArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        _validate(args)
        super().__init__("inference:edge:RateLimitStore", name, None, opts)
        if args.mode == "elasticache":
            self.url, self.auth_secret_arn = _elasticache(name, args, self)
            self.tls = True
        else:
            self.url = _in_cluster(name, args, self)
            self.auth_secret_arn = None
            self.tls = False
        self.register_outputs({"url": self.url})


def _elasticache(
    name: str, args: RateLimitStoreArgs, parent: pulumi.Resource
) -> tuple[pulumi.Output[str], pulumi.Output[str]]:
    child = pulumi.ResourceOptions(parent=parent)
    keep = pulumi.ResourceOptions(parent=parent, protect=args.protect, retain_on_delete=args.protect)
    auth = generated_secret(
        parent,
        value_name=f"{name}-auth-token",
        secret_name=f"{name}-auth",
        name=f"{args.name_prefix}/edge/ratelimit-redis-auth",
        description="AUTH token of the gateway's rate-limit Redis",
        length=64,
        kms_key_arn=args.kms_key_arn,
        recovery_window_days=args.recovery_window_days,
        protect=args.protect,
    )
    group = aws.ec2.SecurityGroup(
        f"{name}-sg",
        name=f"{args.name_prefix}-ratelimit-redis",
        description="Rate-limit Redis: 6379 from the cluster nodes only",
        vpc_id=args.vpc_id,
        opts=child,
    )
    aws.vpc.SecurityGroupIngressRule(
        f"{name}-from-nodes",
        security_group_id=group.id,
        referenced_security_group_id=args.client_security_group_id,
        ip_protocol="tcp",
        from_port=REDIS_PORT,
        to_port=REDIS_PORT,
        description="gateway rate-limit pods (node security group)",
        opts=child,
    )
    subnets = aws.elasticache.SubnetGroup(
        f"{name}-subnets",
        name=f"{args.name_prefix}-ratelimit",
        description="Private subnets of the rate-limit Redis",
        subnet_ids=list(args.subnet_ids),
        opts=child,
    )
    redis = aws.elasticache.ReplicationGroup(
        f"{name}-redis",
        replication_group_id=fit_name(f"{args.name_prefix}-rl", 40),  # CreateReplicationGroup: 1-40, no trailing -
        description="Envoy Gateway global rate-limit counters",
        engine="valkey",
        engine_version="8.0",
        node_type=args.node_type,
        num_cache_clusters=2,
        automatic_failover_enabled=True,
        multi_az_enabled=True,
        port=REDIS_PORT,
        subnet_group_name=subnets.name,
        security_group_ids=[group.id],
        at_rest_encryption_enabled=True,
        kms_key_id=args.kms_key_arn,
        transit_encryption_enabled=True,
        transit_encryption_mode="required",
        auth_token=auth.value,
        auth_token_update_strategy="ROTATE",
        apply_immediately=False,
        opts=keep,
    )
    url = pulumi.Output.concat(redis.primary_endpoint_address, f":{REDIS_PORT}")
    return url, auth.secret.arn


def _in_cluster(name: str, args: RateLimitStoreArgs, parent: pulumi.Resource) -> pulumi.Output[str]:
    opts = pulumi.ResourceOptions(parent=parent, provider=args.provider)
    labels = {"app.kubernetes.io/name": IN_CLUSTER_NAME, "app.kubernetes.io/part-of": "inference-edge"}
    k8s.apps.v1.Deployment(
        f"{name}-redis",
        metadata={"name": IN_CLUSTER_NAME, "namespace": args.namespace, "labels": labels},
        spec=in_cluster_deployment_spec(labels),
        opts=opts,
    )
    service = k8s.core.v1.Service(
        f"{name}-service",
        metadata={"name": IN_CLUSTER_NAME, "namespace": args.namespace, "labels": labels},
        spec={
            "type": "ClusterIP",
            "selector": labels,
            "ports": [{"name": "redis", "port": REDIS_PORT, "targetPort": REDIS_PORT, "protocol": "TCP"}],
        },
        opts=opts,
    )
    k8s.networking.v1.NetworkPolicy(
        f"{name}-network-policy",
        metadata={"name": IN_CLUSTER_NAME, "namespace": args.namespace, "labels": labels},
        spec={
            "podSelector": {"matchLabels": labels},
            "policyTypes": ["Ingress"],
            "ingress": [{"from": [{"podSelector": {}}], "ports": [{"port": REDIS_PORT, "protocol": "TCP"}]}],
        },
        opts=opts,
    )
    return pulumi.Output.concat(service.metadata.name, f".{args.namespace}.svc.cluster.local:{REDIS_PORT}")


def in_cluster_deployment_spec(labels: dict[str, str]) -> dict[str, Any]:
    return {
        "replicas": 1,
        "selector": {"matchLabels": labels},
        "template": {
            "metadata": {"labels": labels},
            "spec": {
                "automountServiceAccountToken": False,
                "nodeSelector": {"node-role": "system"},
                "securityContext": pod_security_context(NONROOT_UID, group=True, fs_group=True),
                "containers": [
                    {
                        "name": "redis",
                        "image": charts.REDIS_IMAGE,
                        # Counters only: no persistence, bounded memory, oldest keys evicted first.
                        "args": [
                            "--save",
                            "",
                            "--appendonly",
                            "no",
                            "--maxmemory",
                            "96mb",
                            "--maxmemory-policy",
                            "allkeys-lru",
                        ],
                        "ports": [{"containerPort": REDIS_PORT, "name": "redis", "protocol": "TCP"}],
                        "readinessProbe": {"tcpSocket": {"port": REDIS_PORT}, "periodSeconds": 5},
                        "livenessProbe": {
                            "tcpSocket": {"port": REDIS_PORT},
                            "periodSeconds": 10,
                            "failureThreshold": 6,
                        },
                        "resources": {
                            "requests": {"cpu": "50m", "memory": "128Mi"},
                            "limits": {"cpu": "500m", "memory": "128Mi"},
                        },
                        "securityContext": container_security_context(),
                        "volumeMounts": [{"name": "data", "mountPath": "/data"}],
                    }
                ],
                "volumes": [{"name": "data", "emptyDir": {"sizeLimit": "64Mi"}}],
            },
        },
    }


def _validate(args: RateLimitStoreArgs) -> None:
    problems = []
    if args.mode not in MODES:
        problems.append(f"mode: {args.mode!r} is not one of {', '.join(MODES)}")
    if args.mode == "inCluster" and args.provider is None:
        problems.append("provider: required for an in-cluster Redis")
    if args.mode == "elasticache":
        for field_name in ("vpc_id", "client_security_group_id", "kms_key_arn"):
            if getattr(args, field_name) is None:
                problems.append(f"{field_name}: required for ElastiCache")
        if len(args.subnet_ids) < 2:
            problems.append("subnet_ids: at least two private subnets (two zones for failover)")
    raise_if("RateLimitStore", problems)
