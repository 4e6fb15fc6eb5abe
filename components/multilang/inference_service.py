"""InferenceService for other Pulumi languages: one Triton rollout (components.serving.InferenceService)."""

# Annotations stay real types (no ``from __future__ import annotations``): the provider's analyzer reads them.
import json
from enum import Enum
from typing import NotRequired, TypedDict

import pulumi

from inference_platform.catalog.pool_profile import Taint
from inference_platform.components.common.errors import ComponentArgsError
from inference_platform.components.common.resource_options import own_depends_on
from inference_platform.components.multilang.options import inner_options, kubernetes_provider, supplied
from inference_platform.components.serving import Exposure
from inference_platform.components.serving import InferenceService as _InferenceService
from inference_platform.components.serving import InferenceServiceArgs as _InferenceServiceArgs
from inference_platform.components.serving.pod import ModelSource, Placement, Resources
from inference_platform.components.serving.serving_config import ServingDocument


class ModelSourceKind(Enum):
    """How engine and tokenizer reach the pod."""

    DOWNLOAD = "download"
    """An init container downloads and verifies them from S3."""
    FSX = "fsx"
    """An init container copies them from the FSx for Lustre model cache (``cacheClaimName``)."""


class Toleration(TypedDict):
    """A node taint the pods tolerate."""

    key: str
    """Taint key, e.g. ``nvidia.com/gpu``."""
    value: str
    """Taint value, e.g. ``true``."""
    effect: NotRequired[str]
    """Default ``NoSchedule``."""


class InferenceServiceArgs(TypedDict):
    """A Triton + TensorRT-LLM (or Neuron) rollout: serving ConfigMap, Deployment (or LeaderWorkerSet across
    nodes), Service, PodDisruptionBudget, NetworkPolicy and ServiceMonitor. Needs the cluster's Kubernetes
    provider as the ``providers: {kubernetes: ...}`` resource option."""

    namespace: str
    """The inference namespace (it and ``serviceAccount`` must exist)."""
    service_account: str
    """The pods' service account (bound to a model read role through Pod Identity)."""
    image: pulumi.Input[str]
    """The inference image, by digest in production (``<repository>@sha256:...``)."""
    image_version: str
    """Tag or short digest, for the ``app.kubernetes.io/version`` label."""
    serving_config: str
    """The serving settings as a JSON object (the keys of ``serving`` in a stack file); the pod refuses at start
    what the serving settings do not accept."""
    region: str
    """AWS region of the model bucket and secrets."""
    engine_uri: pulumi.Input[str]
    """``s3://<bucket>/<prefix>/`` of the engine version (verified against its manifest)."""
    tokenizer_uri: pulumi.Input[str]
    """``s3://<bucket>/<prefix>/`` of the tokenizer version."""
    model_volume_gib: int
    """Local volume for engine and tokenizer (node disk)."""
    model_source: ModelSourceKind
    """``download`` from S3, or ``fsx`` from the model cache."""
    cache_claim_name: NotRequired[str]
    """fsx: the read-only model-cache claim in ``namespace``."""
    cache_engine_path: NotRequired[str]
    """fsx: the engine version's directory inside the cache."""
    cache_tokenizer_path: NotRequired[str]
    """fsx: the tokenizer version's directory inside the cache."""
    engine_manifest_sha256: NotRequired[str]
    """Default unset. The engine manifest's SHA-256: any other manifest is refused before a byte is written."""
    tokenizer_manifest_sha256: NotRequired[str]
    """Default unset. The tokenizer manifest's SHA-256."""
    pool: str
    """The ``node-pool`` label value of the serving pool (a NodePool's ``labels``)."""
    tolerations: NotRequired[list[Toleration]]
    """Default none. The pool's taints (``nvidia.com/gpu=true:NoSchedule`` on GPU pools)."""
    accelerator_resource: NotRequired[str]
    """Default ``nvidia.com/gpu``; ``aws.amazon.com/neuron`` on Neuron pools (a NodePool's ``acceleratorResource``)."""
    accelerators: NotRequired[int]
    """Default 1. Devices per pod."""
    efa: NotRequired[int]
    """Default 0. ``vpc.amazonaws.com/efa`` interfaces per pod."""
    cpu: float
    """Server container cores (requests = limits)."""
    memory_gib: float
    """Server container memory in GiB (requests = limits)."""
    shared_memory_gib: NotRequired[float]
    """Default 2. /dev/shm size; below ``memoryGib``."""
    replicas: NotRequired[int]
    """Default 1. Replicas (multi-node: groups)."""
    nodes: NotRequired[int]
    """Default 1: a Deployment. More: a LeaderWorkerSet of this group size (its CRD must exist)."""
    neuron: NotRequired[bool]
    """Default false. The Neuron image."""
    load_balancer_cidrs: NotRequired[list[str]]
    """Default none. Source CIDRs admitted to HTTP and gRPC."""
    service_monitor: NotRequired[bool]
    """Default true. Create a ServiceMonitor (the Prometheus Operator CRDs must exist)."""
    app_name: NotRequired[str]
    """Default ``triton``. Kubernetes name of the workload and its Service."""


class InferenceService(pulumi.ComponentResource):
    """One Triton inference rollout on the cluster (components.serving.InferenceService)."""

    workload_kind: pulumi.Output[str]
    """``Deployment`` or ``LeaderWorkerSet``."""
    workload_name: pulumi.Output[str]
    """Kubernetes name of the workload."""
    service_name: pulumi.Output[str]
    """Kubernetes name of the Service (ports http 8000, grpc 8001, metrics 8002)."""

    def __init__(self, name: str, args: InferenceServiceArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("inference-platform:index:InferenceService", name, {}, opts)
        provider = kubernetes_provider("InferenceService", opts)
        service = _InferenceService(
            name,
            _InferenceServiceArgs(
                k8s_provider=provider,
                # The caller's dependsOn (CRD releases, the namespace and its service account): every object waits.
                depends_on=tuple(own_depends_on(opts)),
                namespace_resources=tuple(own_depends_on(opts)),
                serving_config=_serving_document(args["serving_config"]),
                model=ModelSource(
                    **supplied(
                        args,
                        "engine_uri",
                        "tokenizer_uri",
                        "engine_manifest_sha256",
                        "tokenizer_manifest_sha256",
                        model_source="kind",
                        model_volume_gib="volume_gib",
                        cache_claim_name="claim_name",
                        cache_engine_path="engine_path",
                        cache_tokenizer_path="tokenizer_path",
                    )
                ),
                placement=Placement(
                    taints=tuple(Taint(**supplied(t, "key", "value", "effect")) for t in args.get("tolerations") or []),
                    **supplied(args, "pool", "accelerators", "efa", accelerator_resource="resource_name"),
                ),
                resources=Resources(**supplied(args, "cpu", "memory_gib")),
                exposure=Exposure(**supplied(args, "load_balancer_cidrs", "service_monitor")),
                **supplied(
                    args,
                    "namespace",
                    "service_account",
                    "image",
                    "image_version",
                    "region",
                    "shared_memory_gib",
                    "replicas",
                    "nodes",
                    "neuron",
                    "app_name",
                ),
            ),
            inner_options(self, opts),
        )
        self.workload_kind = pulumi.Output.from_input(service.workload_kind)
        self.workload_name = pulumi.Output.from_input(service.workload_name)
        self.service_name = pulumi.Output.from_input(service.service_name)
        self.register_outputs({})


def _serving_document(text: str) -> ServingDocument:
    """The JSON the caller gave, as the serving settings the rollout writes (one problem naming the input)."""
    try:
        values = json.loads(text)
    except json.JSONDecodeError as err:
        raise ComponentArgsError("InferenceService", [f"servingConfig is not JSON: {err}"]) from None
    if not isinstance(values, dict):
        raise ComponentArgsError("InferenceService", ["servingConfig must be a JSON object"])
    return ServingDocument(values)
