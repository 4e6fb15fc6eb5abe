"""The stack's inference rollout: the image repository, the controllers the rollout needs and the
Triton service on the serving pool.

The repository exists whenever the stack does (the first image is pushed to it before any rollout);
the workload exists once ``inference.image`` names an image and the stack has the serving pool. Everything
Kubernetes goes through the cluster's one provider and into the namespace, service account, secret
class and model-cache claim the storage area created.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from typing import Any

import pulumi

from inference_platform import catalog
from inference_platform.catalog.image_sizes import SERVING_GPU_IMAGE_GIB
from inference_platform.catalog.pool_profile import LABEL_NODE_ROLE, LABEL_POOL, ROLE_SYSTEM, PoolProfile
from inference_platform.components.compute.accelerator_software import NEURON_SCHEDULER_NAME
from inference_platform.components.serving.controllers import ServingControllers, ServingControllersArgs
from inference_platform.components.serving.image_repository import ImageRepository, ImageRepositoryArgs
from inference_platform.components.serving.inference_service import (
    DEFAULT_APP_NAME,
    Exposure,
    InferenceService,
    InferenceServiceArgs,
)
from inference_platform.components.serving.pod import Drain, ModelSource, Placement, Probes, Resources, SecretMount
from inference_platform.infra.cluster import Compute
from inference_platform.infra.foundation import Foundation
from inference_platform.infra.storage import Storage
from inference_platform.planners import placement as inference_placement
from inference_platform.planners.cidr import carve
from inference_platform.settings import Settings
from inference_platform.settings.derived import (
    capacity_summary,
    cold_start_summary,
    day_bounds,
    drain_budget,
    planned_replicas,
)
from inference_platform.settings.inference import InferenceSettings


@dataclass(frozen=True)
class Inference:
    repository: ImageRepository
    service: InferenceService | None
    controllers: ServingControllers | None = None
    """The LeaderWorkerSet controller and Prometheus Operator CRDs, when the stack installs them."""


def build_inference(settings: Settings, foundation: Foundation, compute: Compute, storage: Storage) -> Inference:
    serving = settings.serving
    repository = _repository(settings, foundation)
    pool = compute.pools.get(serving.node_pool)
    rollout = settings.inference.has_image and pool is not None
    controllers = _controllers(settings, compute, rollout)
    if not rollout:
        reason = "inference.image names no image yet" if pool is not None else f"no node pool {serving.node_pool!r}"
        pulumi.log.info(f"inference: no rollout ({reason}); the image repository is ready for pushes")
        return Inference(repository, None, controllers=controllers)
    assert pool is not None
    image = _image(settings, repository)
    service = _service(settings, foundation, compute, storage, pool, image, controllers)
    _export(settings, storage, pool, service, image)
    return Inference(repository, service, controllers)


def _repository(settings: Settings, foundation: Foundation) -> ImageRepository:
    cfg = settings.inference
    repository = ImageRepository(
        "image-repository",
        ImageRepositoryArgs(
            name=f"{settings.name_prefix}/{cfg.image.repository}".lower(),
            kms_key_arn=foundation.keys.storage_key_arn,
            keep_images=cfg.ecr.keep_images,
            untagged_expire_days=cfg.ecr.untagged_expire_days,
            scan_on_push=cfg.ecr.scan_on_push,
            force_delete=not settings.production,
            protect=settings.production,
            unpacked_gib=SERVING_GPU_IMAGE_GIB if settings.serving.backend == "tensorrtllm" else None,
        ),
    )
    pulumi.export("imageRepository", {"name": repository.repository_name, "url": repository.repository_url})
    return repository


def _controllers(settings: Settings, compute: Compute, rollout: bool) -> ServingControllers | None:
    monitoring, serving = settings.inference.monitoring, settings.serving
    # One owner for the Prometheus Operator CRDs, whether or not a rollout exists yet: the rollout's
    # ServiceMonitor and the observability stack's rules and monitors both need them, and a release
    # that changed hands would delete the CRDs (and every object of their kinds) on the way.
    prometheus_crds = monitoring.install_crds and (
        settings.observability.enabled or (rollout and monitoring.service_monitor)
    )
    leader_worker_set = rollout and serving.nodes > 1
    if not (leader_worker_set or prometheus_crds):
        return None
    return ServingControllers(
        "serving-controllers",
        ServingControllersArgs(
            k8s_provider=compute.provider,
            leader_worker_set=leader_worker_set,
            prometheus_crds=prometheus_crds,
            system_node_selector={LABEL_NODE_ROLE: ROLE_SYSTEM},
        ),
        # The LeaderWorkerSet manager runs on the system nodes and Helm waits for it; its Fail webhooks
        # refuse every LeaderWorkerSet until it is Ready (the CRDs-only release needs no nodes).
        opts=pulumi.ResourceOptions(depends_on=[compute.system_nodes] if leader_worker_set else []),
    )


def _image(settings: Settings, repository: ImageRepository) -> pulumi.Output[str]:
    image = settings.inference.image
    if image.digest:
        return pulumi.Output.concat(repository.repository_url, "@", image.digest)
    return pulumi.Output.concat(repository.repository_url, ":", image.tag or "")


def _service(
    settings: Settings,
    foundation: Foundation,
    compute: Compute,
    storage: Storage,
    pool: PoolProfile,
    image: pulumi.Output[str],
    controllers: ServingControllers | None,
    name: str = "inference",
    app_name: str = DEFAULT_APP_NAME,
    autoscaled: bool = True,
) -> InferenceService:
    """``name``/``app_name``: the stack's own model keeps ``inference``/``triton`` (its URNs); another model or a
    canary (infra/models.py) takes its own. ``autoscaled=False`` (a canary): its replicas stay the settings', even
    where the stack autoscales."""
    cfg, serving = settings.inference, settings.serving
    namespace = storage.namespaces.get(storage.inference)
    if namespace is None:
        raise pulumi.RunError(
            "inference: the storage area made no inference namespace (it was built without a cluster)"
        )
    probes, drain, monitoring = cfg.probes, cfg.termination, cfg.monitoring
    return InferenceService(
        name,
        InferenceServiceArgs(
            app_name=app_name,
            k8s_provider=compute.provider,
            namespace=storage.inference.namespace,
            service_account=storage.inference.name,
            image=image,
            image_version=cfg.image.tag or (cfg.image.digest or "")[7:19],
            serving_config=serving,
            model=_model_source(settings, storage),
            placement=_placement(settings, pool),
            resources=Resources(cpu=cfg.resources.cpu, memory_gib=cfg.resources.memory_gib),
            init_resources=_init_resources(cfg),
            region=settings.region.name,
            shared_memory_gib=cfg.shared_memory_gib,
            scratch_gib=cfg.scratch_gib,
            replicas=planned_replicas(settings),
            autoscaled_max=_autoscaled_max(settings) if autoscaled else None,
            nodes=serving.nodes,
            max_surge=cfg.rollout.max_surge,
            max_unavailable=cfg.rollout.max_unavailable,
            pdb_max_unavailable=cfg.pdb.max_unavailable,
            probes=Probes(
                startup_seconds=probes.startup_seconds,
                period_seconds=probes.period_seconds,
                timeout_seconds=probes.timeout_seconds,
                readiness_failures=probes.readiness_failures,
                liveness_failures=probes.liveness_failures,
            ),
            drain=Drain(
                pre_stop_seconds=drain.pre_stop_seconds,
                grace_period_seconds=drain.grace_seconds(serving.exit_timeout_seconds),
            ),
            secrets=_secrets(settings, storage),
            neuron=serving.backend == "neuron",
            run_as_user=cfg.run_as_user,
            exposure=Exposure(
                load_balancer_cidrs=_load_balancer_cidrs(settings, foundation),
                monitoring_namespace=monitoring.namespace,
                service_monitor=monitoring.service_monitor,
                scrape_interval=monitoring.scrape_interval,
            ),
            depends_on=list(controllers.releases.values()) if controllers else [],
            namespace_resources=[namespace],
        ),
    )


def _export(
    settings: Settings, storage: Storage, pool: PoolProfile, service: InferenceService, image: pulumi.Output[str]
) -> None:
    pulumi.export(
        "inference",
        {
            "namespace": storage.inference.namespace,
            "workload": f"{service.workload_kind}/{service.workload_name}",
            "service": service.service_name,
            "image": image,
            "replicas": planned_replicas(settings),
            "nodePool": settings.serving.node_pool,
            "zones": list(pool.zones),
        },
    )
    # Planned capacity and cost (inference-platform:capacity), for the plan report and the PR comment.
    capacity_plan = capacity_summary(settings)
    if capacity_plan is not None:
        pulumi.export("capacityPlan", capacity_plan)
    # How long a removed replica drains, and whether that covers the longest stream (planners/drain.py).
    pulumi.export("drain", drain_budget(settings).to_dict())
    # Modelled cold start of an autoscaled rollout (planners/cold_start.py), for the same readers.
    cold_start = cold_start_summary(settings) if settings.autoscaling.enabled else None
    if cold_start is not None:
        pulumi.export("coldStart", cold_start)


def _autoscaled_max(settings: Settings) -> int | None:
    """KEDA's ceiling when it owns the replica count (it queries the observability stack's Prometheus)."""
    if not (settings.autoscaling.enabled and settings.observability.enabled):
        return None
    bounds = day_bounds(settings)
    return bounds[1] if bounds is not None else None


def _model_source(settings: Settings, storage: Storage) -> ModelSource:
    model = settings.inference.model
    engine, tokenizer = model.engine or "", model.tokenizer or ""
    bucket, prefix = storage.store.bucket_name, settings.storage.model_prefix
    pins = settings.serving.artifacts
    source: dict[str, Any] = {  # what both kinds of source take
        "engine_uri": pulumi.Output.concat("s3://", bucket, "/", prefix, engine),
        "tokenizer_uri": pulumi.Output.concat("s3://", bucket, "/", prefix, tokenizer),
        "engine_manifest_sha256": pins.engine_manifest_sha256,
        "tokenizer_manifest_sha256": pins.tokenizer_manifest_sha256,
    }
    if settings.inference.model_source(settings.fsx.enabled) == "download":
        concurrency = settings.cold_start.download_concurrency
        return ModelSource(kind="download", volume_gib=model.volume_gib, download_concurrency=concurrency, **source)
    if storage.model_claim is None:
        raise pulumi.RunError("inference.model.source: fsx needs the model-cache claim (fsx.enabled and a cluster)")
    # The cache mirrors the bucket's model prefix at fsx.fileSystemPath.
    root = settings.fsx.file_system_path
    return ModelSource(
        kind="fsx",
        volume_gib=model.volume_gib,
        claim_name=storage.model_claim,
        engine_path=f"{root}/{engine}",
        tokenizer_path=f"{root}/{tokenizer}",
        **source,
    )


def _placement(settings: Settings, pool: PoolProfile) -> Placement:
    serving, spread = settings.serving, settings.inference.topology_spread
    fit = inference_placement.pool_fit(pool.spec.instance_types, serving.ranks_per_node)
    return Placement(
        pool=pool.labels[LABEL_POOL],
        taints=pool.taints,
        resource_name=pool.resource_name or catalog.RESOURCE_NVIDIA_GPU,
        accelerators=fit.accelerators,
        efa=inference_placement.efa_per_pod(pool.efa_interfaces, pool.accelerators_per_node, fit.accelerators),
        zones=spread.zones,
        hosts=spread.hosts,
        scheduler_name=NEURON_SCHEDULER_NAME if pool.vendor == catalog.VENDOR_NEURON else None,
    )


def _secrets(settings: Settings, storage: Storage) -> SecretMount | None:
    auth = settings.serving.auth
    if not auth.enabled or auth.key_file is None:
        return None
    class_name = storage.secret_classes.get(storage.inference)
    if class_name is None:
        raise pulumi.RunError("serving.auth.enabled: the storage area delivered no API-key secret class to mount")
    return SecretMount(class_name=class_name, mount_dir=posixpath.dirname(auth.key_file))


def _load_balancer_cidrs(settings: Settings, foundation: Foundation) -> list[str]:
    """The configured CIDRs, or the stack's public subnets (where its internet-facing LBs live); none
    behind the edge, whose gateway is then the only way in (infra/edge.py admits its proxies)."""
    configured = settings.inference.network_policy.load_balancer_cidrs
    if configured is not None:
        return list(configured)
    if settings.edge.domain is not None:
        return []
    net = settings.network
    plans = carve(net.cidr, len(foundation.zones), net.subnet_prefixes)
    return [plan.cidr for plan in plans if plan.tier == "public"]


def _init_resources(cfg: InferenceSettings) -> Resources:
    """The artifact init containers: as set, else up to 8 CPUs and 16 GiB but never more than the server's.

    A pod's request is the larger of its biggest init container and the sum of its containers, so init
    containers within the server's resources cost no capacity, and a 1-CPU, 2-GiB one starves the copy
    (its page cache is charged to the container: planners/cold_start.py)."""
    return Resources(cpu=cfg.init_cpu(), memory_gib=cfg.init_memory_gib())
