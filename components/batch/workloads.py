"""The lane's pods in the cluster: the Batch API service and the queue workers, with their identities.

- Namespace ``batch`` (Pod Security ``restricted``) with service accounts ``batch-api`` and ``batch-worker``,
  each with its own Pod Identity role: the API may store files and enqueue lines, the workers may take, extend
  and delete messages and write results (``components.batch.documents``), both on the lane's resources only.
- The workers' one API key for the serving endpoint (verification style): a Secrets Store CSI class holding
  that one key, read through the worker role, so no batch pod can read the gateway's clients' keys.
- Deployments on the system nodes (``components.batch.pods``). The workers' replica count belongs to KEDA
  (``BatchScaling``): ``spec.replicas`` is the first count only and ignored afterwards.
- NetworkPolicies: the API admits the edge gateway's Envoy pods on its API port and monitoring on its metrics
  port; the workers admit monitoring only; both reach DNS, the EKS Pod Identity agent (169.254.170.23:80) and HTTPS (S3, SQS, STS through the
  VPC's endpoints or NAT); the workers also reach the serving pods' HTTP port and Prometheus, and the serving
  pods admit the workers on that port (a policy of their own beside the rollout's: policies add up).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from inference_platform.components.batch import documents, pods
from inference_platform.components.batch.pods import LaneEnv, Shape, WorkerEnv
from inference_platform.components.common.errors import raise_if
from inference_platform.components.identity.pod_identity import PodIdentityRole, PodIdentityRoleArgs
from inference_platform.components.secrets.delivery import SecretDelivery, SecretDeliveryArgs
from inference_platform.components.serving.workload_namespace import WorkloadNamespace, WorkloadNamespaceArgs
from inference_platform.components.verification.pods import dns_egress

DEFAULT_NAMESPACE = "batch"
POD_IDENTITY_AGENT = "169.254.170.23/32"
"""Where the EKS Pod Identity agent serves credentials to pods (Amazon EKS user guide, "EKS Pod Identity")."""
POD_IDENTITY_AGENT_PORT = 80
HTTPS_PORT = 443


@dataclass(frozen=True, kw_only=True)
class ServingTarget:
    """The serving pods the workers call (inside the cluster, not through the edge)."""

    namespace: str
    pod_labels: Mapping[str, str]
    url: str
    """``http://<service>.<namespace>.svc.cluster.local:<port>`` (without ``/v1``)."""
    port: int


@dataclass(frozen=True, kw_only=True)
class BatchWorkloadsArgs:
    """What the lane's pods need: the cluster's provider, image, environments, serving target, queues and bucket."""

    k8s_provider: pulumi.ProviderResource
    """Required. The cluster's Kubernetes provider."""
    cluster_name: pulumi.Input[str]
    """Required. The cluster (its Pod Identity associations)."""
    image: pulumi.Input[str]
    """Required. The lane's image (the stack's ECR repository, by digest in production)."""
    lane: LaneEnv
    """Required. Bucket, queues, key, limits and quotas both roles read."""
    worker: WorkerEnv
    """Required. Concurrency and back-off signals."""
    quota_overrides: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    """Default none. Per-client queued quotas ``{client: {queuedTokens, queuedRequests}}`` (a ConfigMap)."""
    serving: ServingTarget
    """Required. Whose HTTP port the workers may reach."""
    bucket_arn: pulumi.Input[str]
    queue_arn: pulumi.Input[str]
    dead_letter_arn: pulumi.Input[str]
    kms_key_arn: pulumi.Input[str]
    """Required. The stack's CMK (objects, queues, the worker's key secret)."""
    region: str
    """Required."""
    api_key_secret_arn: pulumi.Input[str] | None = None
    """Default none (the serving endpoint takes no key). The one secret the workers send."""
    api_replicas: int = 2
    """Default 2."""
    worker_min_replicas: int = 0
    """Default 0. The workers' first replica count (KEDA owns it afterwards)."""
    api_shape: Shape = field(default_factory=lambda: Shape(cpu=0.5, memory_gib=1))
    worker_shape: Shape = field(default_factory=lambda: Shape(cpu=0.5, memory_gib=1))
    gateway_namespace: str | None = None
    """Default none (no edge): nothing outside the cluster reaches the API. The edge gateway's namespace..."""
    gateway_pod_labels: Mapping[str, str] = field(default_factory=dict)
    """...and its Envoy pods' labels: the API admits them on its port."""
    monitoring_namespace: str = "monitoring"
    """Default ``monitoring``: Prometheus scrapes both roles, and the workers query it."""
    prometheus_port: int = 9090
    namespace: str = DEFAULT_NAMESPACE
    partition: str = "aws"
    depends_on: Sequence[pulumi.Resource] = ()
    """Default none. The rollout and the Secrets Store CSI driver (the key's class needs its CRD)."""


class BatchWorkloads(pulumi.ComponentResource):
    """The lane's pods: the Batch API service and the queue workers, with their Pod Identity roles."""

    namespace: str
    api_service: str
    worker_deployment: str
    api_role_arn: pulumi.Output[str]
    worker_role_arn: pulumi.Output[str]

    def __init__(self, name: str, args: BatchWorkloadsArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        _validate(args)
        super().__init__("inference:batch:BatchWorkloads", name, None, opts)
        self.namespace = args.namespace
        namespace = WorkloadNamespace(
            f"{name}-namespace",
            WorkloadNamespaceArgs(
                k8s_provider=args.k8s_provider, namespace=args.namespace, service_accounts=[pods.API, pods.WORKER]
            ),
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.namespace_resource = namespace
        api_role = self._role(name, "api", pods.API, documents.api_policy, args)
        worker_role = self._role(name, "worker", pods.WORKER, documents.worker_policy, args)
        waits: list[pulumi.Resource] = [namespace, api_role, worker_role]
        key_class = None
        if args.api_key_secret_arn is not None:
            delivery = SecretDelivery(
                f"{name}-worker-secrets",
                SecretDeliveryArgs(
                    k8s_provider=args.k8s_provider,
                    namespace=args.namespace,
                    service_account=pods.WORKER,
                    role_name=worker_role.role_name,
                    files={pods.API_KEY_FILE: args.api_key_secret_arn},
                    kms_key_arn=args.kms_key_arn,
                    region=args.region,
                ),
                opts=pulumi.ResourceOptions(parent=self, depends_on=[namespace, *args.depends_on]),
            )
            key_class = delivery.class_name
            waits.append(delivery)
        k8s_opts = pulumi.ResourceOptions(parent=self, provider=args.k8s_provider, depends_on=[namespace])
        waits += self._network_policies(name, args, k8s_opts)
        after = pulumi.ResourceOptions(parent=self, provider=args.k8s_provider, depends_on=[*waits, *args.depends_on])
        self.api_service = pods.API
        k8s.core.v1.Service(
            f"{name}-api",
            metadata={"name": pods.API, "namespace": args.namespace, "labels": pods.API_LABELS},
            spec={
                "selector": pods.API_LABELS,
                "ports": [{"name": "http", "port": pods.API_PORT, "targetPort": "http", "protocol": "TCP"}],
            },
            opts=k8s_opts,
        )
        quotas = k8s.core.v1.ConfigMap(
            f"{name}-quotas",
            metadata={"name": "batch-quotas", "namespace": args.namespace, "labels": pods.API_LABELS},
            data={pods.QUOTAS_FILE: pods.quotas_document(args.quota_overrides)},
            opts=k8s_opts,
        )
        api_main = pods.container(pods.API, args.image, pods.api_env(args.lane), args.api_shape, quotas_mounted=True)
        api_pod = pods.pod_spec(pods.API, api_main, args.api_shape, grace_seconds=30, quotas_config_map="batch-quotas")
        k8s.apps.v1.Deployment(
            f"{name}-api-deployment",
            metadata={"name": pods.API, "namespace": args.namespace, "labels": pods.API_LABELS},
            spec=pods.deployment_spec(pods.API_LABELS, args.api_replicas, api_pod),
            opts=pulumi.ResourceOptions.merge(after, pulumi.ResourceOptions(depends_on=[quotas])),
        )
        if args.api_replicas >= 2:
            k8s.policy.v1.PodDisruptionBudget(
                f"{name}-api-disruption",
                metadata={"name": pods.API, "namespace": args.namespace, "labels": pods.API_LABELS},
                spec={"minAvailable": 1, "selector": {"matchLabels": pods.API_LABELS}},
                opts=k8s_opts,
            )
        key_file = f"{pods.SECRETS_DIR}/{pods.API_KEY_FILE}" if key_class else None
        env = pods.worker_env(args.lane, args.worker, serving_url=args.serving.url, key_file=key_file)
        worker_main = pods.container(pods.WORKER, args.image, env, args.worker_shape, key_mounted=key_class is not None)
        self.worker_deployment = pods.WORKER
        grace = args.lane.request_timeout_seconds + pods.STOP_MARGIN_SECONDS
        worker_pod = pods.pod_spec(
            pods.WORKER, worker_main, args.worker_shape, key_class=key_class, grace_seconds=grace
        )
        k8s.apps.v1.Deployment(
            f"{name}-worker-deployment",
            metadata={"name": pods.WORKER, "namespace": args.namespace, "labels": pods.WORKER_LABELS},
            spec=pods.deployment_spec(pods.WORKER_LABELS, args.worker_min_replicas, worker_pod),
            # KEDA owns the count once it runs: an update must not reset it to the first one.
            opts=pulumi.ResourceOptions.merge(after, pulumi.ResourceOptions(ignore_changes=["spec.replicas"])),
        )
        self.api_role_arn = api_role.role_arn
        self.worker_role_arn = worker_role.role_arn
        self.register_outputs(
            {
                "namespace": self.namespace,
                "api_service": self.api_service,
                "worker_deployment": self.worker_deployment,
                "api_role_arn": self.api_role_arn,
                "worker_role_arn": self.worker_role_arn,
            }
        )

    def _role(
        self,
        name: str,
        role: str,
        account: str,
        document: Callable[[str, str, str, str, str], dict[str, Any]],
        args: BatchWorkloadsArgs,
    ) -> PodIdentityRole:
        arns = pulumi.Output.all(args.bucket_arn, args.queue_arn, args.dead_letter_arn, args.kms_key_arn)
        return PodIdentityRole(
            f"{name}-{role}-identity",
            PodIdentityRoleArgs(
                cluster_name=args.cluster_name,
                namespace=args.namespace,
                service_account=account,
                partition=args.partition,
                inline_policy=arns.apply(lambda v: json.dumps(document(v[0], v[1], v[2], v[3], args.region))),
                description=f"The asynchronous lane's {role}: its bucket prefixes, queues and key only",
            ),
            opts=pulumi.ResourceOptions(parent=self),
        )

    def _network_policies(
        self, name: str, args: BatchWorkloadsArgs, opts: pulumi.ResourceOptions
    ) -> list[k8s.networking.v1.NetworkPolicy]:
        monitoring = {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": args.monitoring_namespace}}}
        aws_egress = [
            dns_egress(),
            {
                "to": [{"ipBlock": {"cidr": POD_IDENTITY_AGENT}}],
                "ports": [{"protocol": "TCP", "port": POD_IDENTITY_AGENT_PORT}],
            },
            # S3 (gateway endpoint: public prefixes), SQS, STS and KMS (interface endpoints or NAT): HTTPS only.
            {"ports": [{"protocol": "TCP", "port": HTTPS_PORT}]},
        ]
        gateway = []
        if args.gateway_namespace is not None:
            gateway.append(
                {
                    "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": args.gateway_namespace}},
                    "podSelector": {"matchLabels": dict(args.gateway_pod_labels)},
                }
            )
        serving = {
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": args.serving.namespace}},
            "podSelector": {"matchLabels": dict(args.serving.pod_labels)},
        }
        api = k8s.networking.v1.NetworkPolicy(
            f"{name}-api-policy",
            metadata={"name": pods.API, "namespace": args.namespace, "labels": pods.API_LABELS},
            spec={
                "podSelector": {"matchLabels": pods.API_LABELS},
                "policyTypes": ["Ingress", "Egress"],
                "ingress": [
                    {"from": [monitoring], "ports": [{"protocol": "TCP", "port": pods.METRICS_PORT}]},
                    *([{"from": gateway, "ports": [{"protocol": "TCP", "port": pods.API_PORT}]}] if gateway else []),
                ],
                "egress": aws_egress,
            },
            opts=opts,
        )
        worker = k8s.networking.v1.NetworkPolicy(
            f"{name}-worker-policy",
            metadata={"name": pods.WORKER, "namespace": args.namespace, "labels": pods.WORKER_LABELS},
            spec={
                "podSelector": {"matchLabels": pods.WORKER_LABELS},
                "policyTypes": ["Ingress", "Egress"],
                "ingress": [{"from": [monitoring], "ports": [{"protocol": "TCP", "port": pods.METRICS_PORT}]}],
                "egress": [
                    *aws_egress,
                    {"to": [serving], "ports": [{"protocol": "TCP", "port": args.serving.port}]},
                    {"to": [monitoring], "ports": [{"protocol": "TCP", "port": args.prometheus_port}]},
                ],
            },
            opts=opts,
        )
        to_serving = k8s.networking.v1.NetworkPolicy(
            f"{name}-workers-to-serving",
            metadata={"name": "batch-workers", "namespace": args.serving.namespace, "labels": pods.WORKER_LABELS},
            spec={
                "podSelector": {"matchLabels": dict(args.serving.pod_labels)},
                "policyTypes": ["Ingress"],
                "ingress": [
                    {
                        "from": [
                            {
                                "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": args.namespace}},
                                "podSelector": {"matchLabels": pods.WORKER_LABELS},
                            }
                        ],
                        "ports": [{"protocol": "TCP", "port": args.serving.port}],
                    }
                ],
            },
            opts=pulumi.ResourceOptions(parent=self, provider=args.k8s_provider),
        )
        return [api, worker, to_serving]


def _validate(args: BatchWorkloadsArgs) -> None:
    problems = []
    if args.api_replicas < 1:
        problems.append(f"api_replicas={args.api_replicas}: >= 1")
    if args.worker_min_replicas < 0:
        problems.append(f"worker_min_replicas={args.worker_min_replicas}: >= 0")
    if not args.serving.url.startswith("http://") and not args.serving.url.startswith("https://"):
        problems.append(f"serving.url={args.serving.url!r}: http(s)://host:port")
    if args.gateway_namespace is not None and not args.gateway_pod_labels:
        problems.append("gateway_pod_labels: required with gateway_namespace (whose pods the API admits)")
    if not 1 <= args.worker.concurrency <= 256:
        problems.append(f"worker.concurrency={args.worker.concurrency}: 1..256 (the worker's own limit)")
    raise_if("BatchWorkloads", problems)
