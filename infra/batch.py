"""The asynchronous lane (``batch.enabled``): its bucket and queues, the KEDA operator's queue role, the lane's
image repository and, once the lane and the rollout have images, the Batch API service and the queue workers;
after the observability stack, KEDA's scaling of the workers and the lane's rules and dashboard.

Two steps because the serving rollout's ScaledObject (built with the observability stack) reads the lane's
queue, and the lane's ScaledObject and PrometheusRule need the CRDs that stack's releases install.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import pulumi

from inference_platform.catalog.edge_policy import RouteGroup
from inference_platform.catalog.image_sizes import BATCH_IMAGE_GIB
from inference_platform.catalog.serving_contract import OPENAI_PORT
from inference_platform.components.autoscaling.keda import DEFAULT_NAMESPACE as KEDA_NAMESPACE
from inference_platform.components.batch import edge_routes
from inference_platform.components.batch.bucket import BatchBucket, BatchBucketArgs
from inference_platform.components.batch.documents import monitor_policy
from inference_platform.components.batch.keda_objects import BatchScaling, BatchScalingArgs
from inference_platform.components.batch.monitoring import BatchMonitoring, BatchMonitoringArgs
from inference_platform.components.batch.pods import LaneEnv, Shape, WorkerEnv
from inference_platform.components.batch.queues import BatchQueues, BatchQueuesArgs
from inference_platform.components.batch.scaling import KEDA_OPERATOR_SERVICE_ACCOUNT, QueueSignal
from inference_platform.components.batch.signals import LaneWatch, shed_rules
from inference_platform.components.batch.workloads import BatchWorkloads, BatchWorkloadsArgs, ServingTarget
from inference_platform.components.edge.gateway import NAMESPACE as GATEWAY_NAMESPACE
from inference_platform.components.edge.gateway_api import PROXY_LABEL, Backend
from inference_platform.components.identity.pod_identity import PodIdentityRole, PodIdentityRoleArgs
from inference_platform.components.observability import monitoring_stack
from inference_platform.components.observability.monitoring_stack import Monitor
from inference_platform.components.observability.promql import Scope
from inference_platform.components.serving.image_repository import ImageRepository, ImageRepositoryArgs
from inference_platform.infra.cluster import Compute
from inference_platform.infra.edge import GATEWAY_NAME
from inference_platform.infra.foundation import Foundation
from inference_platform.infra.inference import Inference
from inference_platform.infra.storage import Storage
from inference_platform.settings import Settings

PROMETHEUS_URL = (
    f"http://{monitoring_stack.PROMETHEUS_SERVICE}.{monitoring_stack.DEFAULT_NAMESPACE}.svc:"
    f"{monitoring_stack.PROMETHEUS_PORT}"
)


@dataclass(frozen=True)
class Batch:
    bucket: BatchBucket
    queues: BatchQueues
    repository: ImageRepository
    monitor_role: PodIdentityRole
    """The KEDA operator's queue role: KEDA's release waits for it (credentials are injected at pod start)."""
    signal: QueueSignal
    workloads: BatchWorkloads | None = None


def build_batch(
    settings: Settings,
    foundation: Foundation,
    compute: Compute,
    storage: Storage,
    inference: Inference,
) -> Batch | None:
    cfg = settings.batch
    if not cfg.enabled:
        return None
    key = foundation.keys.storage_key_arn
    bucket = BatchBucket(
        "batch-bucket",
        BatchBucketArgs(
            name_prefix=settings.name_prefix,
            kms_key_arn=key,
            log_bucket=storage.store.log_bucket_name,
            retention_days=cfg.retention_days,
            protect=settings.production,
            force_destroy=settings.storage.force_destroy and not settings.production,
        ),
    )
    queues = BatchQueues(
        "batch-queues",
        BatchQueuesArgs(
            name_prefix=settings.name_prefix,
            kms_key_arn=key,
            visibility_timeout_seconds=cfg.visibility_timeout,
            message_retention_seconds=cfg.queue_retention_seconds,
            max_receive_count=cfg.max_receive_count,
            data_key_reuse_seconds=cfg.data_key_reuse_seconds,
            protect=settings.production,
        ),
    )
    monitor = PodIdentityRole(
        "batch-queue-monitor",
        PodIdentityRoleArgs(
            cluster_name=compute.cluster_name,
            namespace=KEDA_NAMESPACE,
            service_account=KEDA_OPERATOR_SERVICE_ACCOUNT,
            partition=foundation.partition,
            inline_policy=pulumi.Output.all(queues.queue_arn, queues.dead_letter_arn).apply(
                lambda arns: json.dumps(monitor_policy(arns))
            ),
            description="KEDA's aws-sqs-queue scaler: the batch queues' attributes only",
        ),
    )
    repository = ImageRepository(
        "batch-image-repository",
        ImageRepositoryArgs(
            name=f"{settings.name_prefix}/{cfg.image.repository}".lower(),
            kms_key_arn=key,
            keep_images=settings.inference.ecr.keep_images,
            untagged_expire_days=settings.inference.ecr.untagged_expire_days,
            scan_on_push=settings.inference.ecr.scan_on_push,
            force_delete=not settings.production,
            protect=settings.production,
            unpacked_gib=BATCH_IMAGE_GIB,
        ),
    )
    signal = QueueSignal(
        queue_url=queues.queue_url, region=settings.region.name, messages_per_replica=cfg.queue_length_target
    )
    workloads = _workloads(settings, foundation, compute, storage, inference, bucket, queues, repository)
    pulumi.export(
        "batch",
        {
            "bucket": bucket.bucket_name,
            "queueUrl": queues.queue_url,
            "deadLetterQueueUrl": queues.dead_letter_url,
            "imageRepository": repository.repository_url,
            "completionWindowHours": cfg.completion_window_hours,
            "visibilityTimeoutSeconds": cfg.visibility_timeout,
            "workers": workloads is not None,
        },
    )
    return Batch(bucket, queues, repository, monitor, signal, workloads)


def _workloads(
    settings: Settings,
    foundation: Foundation,
    compute: Compute,
    storage: Storage,
    inference: Inference,
    bucket: BatchBucket,
    queues: BatchQueues,
    repository: ImageRepository,
) -> BatchWorkloads | None:
    cfg, service = settings.batch, inference.service
    if not cfg.has_image or service is None:
        reason = "batch.image names no image yet" if service is not None else "there is no serving rollout yet"
        pulumi.log.info(f"batch: no Batch API or workers ({reason}); the bucket, queues and repository are ready")
        return None
    namespace = storage.inference.namespace
    image = pulumi.Output.concat(
        repository.repository_url, "@" if cfg.image.digest else ":", cfg.image.digest or cfg.image.tag or ""
    )
    names = storage.secrets.api_key_names
    key_arn = storage.secrets.secret_arns[names[0]] if settings.serving.auth.enabled and names else None
    scope = Scope(
        namespace=namespace,
        job=service.service_name,
        backend="neuron" if settings.serving.backend == "neuron" else "tensorrtllm",
    )
    quotas = cfg.quotas
    user = settings.inference.run_as_user
    # The edge exists with a domain and a rollout (infra/edge.py); the lane is built first, its routes go to it.
    edge = settings.edge.domain is not None
    return BatchWorkloads(
        "batch-workloads",
        BatchWorkloadsArgs(
            k8s_provider=compute.provider,
            cluster_name=compute.cluster_name,
            image=image,
            lane=LaneEnv(
                region=settings.region.name,
                bucket=bucket.bucket_name,
                queue_url=queues.queue_url,
                dead_letter_url=queues.dead_letter_url,
                kms_key_arn=foundation.keys.storage_key_arn,
                completion_window_hours=cfg.completion_window_hours,
                request_timeout_seconds=cfg.request_timeout_seconds,
                visibility_timeout_seconds=cfg.visibility_timeout,
                max_receive_count=cfg.max_receive_count,
                max_file_bytes=cfg.max_file_bytes,
                max_requests=cfg.max_requests_per_batch,
                lines_per_message=cfg.lines_per_message,
                client_id_header=settings.edge.auth.client_id_header,
                max_output_tokens=settings.serving.max_seq_len - settings.serving.max_input_len,
                quota_requests=quotas.default.queued_requests,
                quota_tokens=quotas.default.queued_tokens,
            ),
            quota_overrides={
                client: {"queuedRequests": q.queued_requests, "queuedTokens": q.queued_tokens}
                for client, q in quotas.clients.items()
            },
            worker=WorkerEnv(
                concurrency=cfg.workers.concurrency,
                prometheus_url=PROMETHEUS_URL,
                shed_rules=shed_rules(
                    scope,
                    waiting_per_replica=cfg.backoff.waiting_per_replica,
                    kv_cache_ratio=cfg.backoff.kv_cache_ratio,
                ),
            ),
            serving=ServingTarget(
                namespace=namespace,
                pod_labels={"app.kubernetes.io/name": service.service_name, "app.kubernetes.io/instance": "inference"},
                url=f"http://{service.service_name}.{namespace}.svc.cluster.local:{OPENAI_PORT}",
                port=OPENAI_PORT,
            ),
            bucket_arn=bucket.bucket_arn,
            queue_arn=queues.queue_arn,
            dead_letter_arn=queues.dead_letter_arn,
            kms_key_arn=foundation.keys.storage_key_arn,
            region=settings.region.name,
            api_key_secret_arn=key_arn,
            api_replicas=cfg.api.replicas,
            worker_min_replicas=cfg.workers.min_replicas,
            api_shape=Shape(cpu=cfg.api.cpu, memory_gib=cfg.api.memory_gib, run_as_user=user),
            worker_shape=Shape(cpu=cfg.workers.cpu, memory_gib=cfg.workers.memory_gib, run_as_user=user),
            gateway_namespace=GATEWAY_NAMESPACE if edge else None,
            gateway_pod_labels={PROXY_LABEL: GATEWAY_NAME} if edge else {},
            monitoring_namespace=monitoring_stack.DEFAULT_NAMESPACE,
            prometheus_port=monitoring_stack.PROMETHEUS_PORT,
            partition=foundation.partition,
            depends_on=[service, *([storage.secrets_store] if storage.secrets_store is not None else [])],
        ),
    )


def batch_routes(batch: Batch | None) -> tuple[list[tuple[RouteGroup, Backend]], list[pulumi.Resource]]:
    """The Batch API's route group for the edge and what it needs first (the lane's namespace, for the route's
    ReferenceGrant), once the API runs."""
    if batch is None or batch.workloads is None:
        return [], []
    return [(edge_routes.route_group(), edge_routes.backend(batch.workloads.namespace))], [
        batch.workloads.namespace_resource
    ]


def batch_monitors(batch: Batch | None) -> list[Monitor]:
    """The lane's scrapes (PodMonitors of the monitoring stack), when its pods exist."""
    if batch is None or batch.workloads is None:
        return []
    from inference_platform.components.batch import pods

    ns = batch.workloads.namespace
    return [
        Monitor(name=pods.API, namespace=ns, kind="PodMonitor", match_labels=pods.API_LABELS, port="metrics"),
        Monitor(name=pods.WORKER, namespace=ns, kind="PodMonitor", match_labels=pods.WORKER_LABELS, port="metrics"),
    ]


def build_batch_scaling(
    settings: Settings, compute: Compute, batch: Batch | None, keda: pulumi.Resource | None,
    monitoring: pulumi.Resource | None,
) -> None:  # fmt: skip
    """KEDA's ScaledObject for the workers and the lane's rules and dashboard (after KEDA and the monitoring
    stack: their CRDs)."""
    if batch is None or batch.workloads is None:
        return
    cfg = settings.batch
    if keda is None:
        # Settings require autoscaling with the lane; without bounds KEDA is not installed and no worker would run.
        raise pulumi.RunError("batch: the workers scale with KEDA, which this stack does not install (autoscaling)")
    if keda is not None:
        BatchScaling(
            "batch-scaling",
            BatchScalingArgs(
                k8s_provider=compute.provider,
                namespace=batch.workloads.namespace,
                deployment=batch.workloads.worker_deployment,
                signal=batch.signal,
                min_replicas=cfg.workers.min_replicas,
                max_replicas=cfg.workers.max_replicas,
                depends_on=[keda, batch.workloads],
            ),
        )
    if monitoring is not None:
        BatchMonitoring(
            "batch-monitoring",
            BatchMonitoringArgs(
                k8s_provider=compute.provider,
                watch=LaneWatch(
                    namespace=batch.workloads.namespace, completion_window_hours=cfg.completion_window_hours
                ),
                monitoring_namespace=monitoring_stack.DEFAULT_NAMESPACE,
                depends_on=[monitoring, batch.workloads],
            ),
        )
