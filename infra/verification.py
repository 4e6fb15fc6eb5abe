"""Checks of the rollout in the cluster: the verification Job (``verification.enabled``) and the distributed
load test (``loadTest.enabled``), both after the rollout and the edge, both on the system nodes.

Both target the edge (``https://<edge.domain>``) with one edge client's key; without an edge the Job
targets the Triton Service in the cluster over plain HTTP (development only: settings refuse it in
production) with the in-pod API key. Their image is the verification image (``verification.image``: Python slim,
``inferctl`` and what verify and loadtest import; inference_image/verification/Dockerfile) in its own ECR repository,
never the serving image: the system nodes' root volume does not hold the serving image's 40-50 GiB (issue 28; the
pack's ``pod-images-fit-node-disk`` refuses the class).
"""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import Sequence
from dataclasses import dataclass

import pulumi

from inference_platform.catalog.image_sizes import VERIFICATION_IMAGE_GIB
from inference_platform.catalog.serving_contract import OPENAI_PORT
from inference_platform.components.serving.image_repository import ImageRepository, ImageRepositoryArgs
from inference_platform.components.verification import (
    InClusterTarget,
    LoadTest,
    LoadTestArgs,
    PodShape,
    VerificationJob,
    VerificationJobArgs,
)
from inference_platform.infra.cluster import Compute
from inference_platform.infra.edge import Edge
from inference_platform.infra.foundation import Foundation
from inference_platform.infra.inference import Inference
from inference_platform.infra.storage import Storage
from inference_platform.settings import Settings
from inference_platform.settings.document import settings_document
from inference_platform.settings.load_test import edge_client


@dataclass(frozen=True)
class Verification:
    job: VerificationJob | None
    load_test: LoadTest | None


def build_verification(
    settings: Settings,
    foundation: Foundation,
    compute: Compute,
    storage: Storage,
    inference: Inference,
    edge: Edge | None,
) -> Verification:
    service = inference.service
    wanted = settings.verification.enabled or settings.load_test.enabled
    if not wanted:
        return Verification(None, None)
    repository = _repository(settings, foundation)
    if service is None:
        pulumi.log.info("verification: no rollout to verify or load yet (inference.image names no image)")
        return Verification(None, None)
    cfg = settings.verification.image
    if not settings.verification.has_image:
        pulumi.log.info("verification: verification.image names no image yet (inference_image/verification/Dockerfile)")
        return Verification(None, None)
    image_version = cfg.digest or cfg.tag or ""
    image = pulumi.Output.concat(repository.repository_url, "@" if cfg.digest else ":", image_version)
    after = [service, *([edge.endpoint, edge.gateway] if edge else [])]
    job = _job(settings, foundation, compute, storage, inference, edge, image, image_version, after)
    # Each has a SecretProviderClass of its own: the CSI driver's CRD first.
    first = [storage.secrets_store] if storage.secrets_store is not None else []
    load = _load_test(settings, foundation, compute, edge, image, image_version, after, first)
    return Verification(job, load)


def _repository(settings: Settings, foundation: Foundation) -> ImageRepository:
    """The verification image's ECR repository, ``<project>-<stack>/<verification.image.repository>``, with the
    serving repository's lifecycle and scanning, protected in production."""
    ecr = settings.inference.ecr
    repository = ImageRepository(
        "verification-image-repository",
        ImageRepositoryArgs(
            name=f"{settings.name_prefix}/{settings.verification.image.repository}".lower(),
            kms_key_arn=foundation.keys.storage_key_arn,
            keep_images=ecr.keep_images,
            untagged_expire_days=ecr.untagged_expire_days,
            scan_on_push=ecr.scan_on_push,
            force_delete=not settings.production,
            protect=settings.production,
            unpacked_gib=VERIFICATION_IMAGE_GIB,
        ),
    )
    pulumi.export("verificationImageRepository", repository.repository_url)
    return repository


def _job(
    settings: Settings,
    foundation: Foundation,
    compute: Compute,
    storage: Storage,
    inference: Inference,
    edge: Edge | None,
    image: pulumi.Input[str],
    image_version: str,
    after: Sequence[pulumi.Resource],
) -> VerificationJob | None:
    cfg = settings.verification
    if not cfg.enabled:
        return None
    service = inference.service
    assert service is not None  # build_verification returns before without a rollout
    namespace = storage.inference.namespace
    pod_labels = {"app.kubernetes.io/name": service.service_name, "app.kubernetes.io/instance": "inference"}
    in_cluster = None
    if edge is not None and cfg.url is None:
        url = f"https://{settings.edge.domain}"
        client = edge_client(cfg.client, settings.edge)
        key_arn = edge.gateway.client_secret_arns.get(client) if client else None
    else:
        url = cfg.url or f"http://{service.service_name}.{namespace}.svc.cluster.local:{OPENAI_PORT}"
        in_cluster = InClusterTarget(pod_labels=pod_labels, port=OPENAI_PORT) if cfg.url is None else None
        names = storage.secrets.api_key_names
        key_arn = storage.secrets.secret_arns[names[0]] if settings.serving.auth.enabled and names else None
    job = VerificationJob(
        "verification",
        VerificationJobArgs(
            k8s_provider=compute.provider,
            cluster_name=compute.cluster_name,
            namespace=namespace,
            stack=settings.stack,
            image=image,
            image_version=image_version,
            settings_document=json.dumps(settings_document(settings), indent=2, sort_keys=True),
            url=url,
            model=settings.serving.served_model_name,
            api_key_secret_arn=key_arn,
            kms_key_arn=foundation.keys.storage_key_arn,
            region=settings.region.name,
            partition=foundation.partition,
            shape=PodShape(cpu=cfg.job.cpu, memory_gib=cfg.job.memory_gib, run_as_user=settings.inference.run_as_user),
            pod_selector=f"app.kubernetes.io/name={service.service_name}",
            in_cluster=in_cluster,
            prometheus=_prometheus(cfg.prometheus_url),
            canary=settings.models.canary is not None and settings.models.canary.gate.enabled,
            active_deadline_seconds=cfg.job.active_deadline_seconds,
            ttl_seconds_after_finished=cfg.job.ttl_seconds_after_finished,
            depends_on=[*after, storage.namespaces[storage.inference]],
        ),
        # Its SecretProviderClass: in the inference namespace, and needs the CSI driver's CRD.
        opts=pulumi.ResourceOptions(
            depends_on=[
                storage.namespaces[storage.inference],
                *([storage.secrets_store] if storage.secrets_store is not None else []),
            ]
        ),
    )
    pulumi.export("verification", {"job": job.job_name, "namespace": namespace, "url": url})
    return job


def _load_test(
    settings: Settings,
    foundation: Foundation,
    compute: Compute,
    edge: Edge | None,
    image: pulumi.Input[str],
    image_version: str,
    after: Sequence[pulumi.Resource],
    first: Sequence[pulumi.Resource],
) -> LoadTest | None:
    cfg = settings.load_test
    if not cfg.enabled:
        return None
    if cfg.url is None and edge is None:
        raise pulumi.RunError("loadTest.url: unset and the stack has no edge (edge.domain) to load")
    url = cfg.url or f"https://{settings.edge.domain}"
    client = edge_client(cfg.client, settings.edge)
    key_arn = edge.gateway.client_secret_arns.get(client) if edge and client else None
    verification = settings.verification
    guided = settings.serving.guided_decoding.backend != "none"
    load = LoadTest(
        "load-test",
        LoadTestArgs(
            k8s_provider=compute.provider,
            cluster_name=compute.cluster_name,
            image=image,
            image_version=image_version,
            url=url,
            model=settings.serving.served_model_name,
            rate=cfg.target_rate,
            workers=cfg.planned_workers,
            concurrency_per_worker=cfg.concurrency_per_worker,
            duration_seconds=cfg.duration_seconds,
            max_requests=cfg.request_budget,
            request_timeout_seconds=cfg.request_timeout_seconds,
            protocol=cfg.protocol,
            isl=(verification.isl.mean, verification.isl.spread),
            osl=(verification.osl.mean, verification.osl.spread),
            structured_share=verification.structured_share if guided else 0.0,
            api_key_secret_arn=key_arn,
            kms_key_arn=foundation.keys.storage_key_arn,
            region=settings.region.name,
            partition=foundation.partition,
            vpc_cidrs=[settings.network.cidr],
            worker_shape=PodShape(cpu=1, memory_gib=2, run_as_user=settings.inference.run_as_user),
            master_shape=PodShape(cpu=1, memory_gib=4, work_gib=4, run_as_user=settings.inference.run_as_user),
            depends_on=after,
        ),
        opts=pulumi.ResourceOptions(depends_on=first),
    )
    pulumi.export(
        "loadTest",
        {"namespace": load.namespace, "masterJob": load.master_job, "workers": cfg.planned_workers, "url": url},
    )
    return load


def _prometheus(url: str | None) -> tuple[str, int] | None:
    """(namespace, port) of an in-cluster Prometheus URL (``http://<service>.<namespace>[.svc...]:<port>``)."""
    if not url:
        return None
    parsed = urllib.parse.urlsplit(url)
    labels = (parsed.hostname or "").split(".")
    if len(labels) < 2:
        return None
    return labels[1], parsed.port or (443 if parsed.scheme == "https" else 80)
