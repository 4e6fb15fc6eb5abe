"""``inference-platform:inference``: how the serving pods roll out (image, replicas, pod shape, drain).

What the pods serve is the ``serving`` section; this one says how many run where, with what image,
resources, probes and policies. Checks that need other sections (the serving pool's instance types,
TP x PP, the FSx cache, the API-key file) run here so a rollout that could never schedule, drain or
start stops before any resource exists, each problem naming its key.
"""

from __future__ import annotations

import ipaddress
import math
import re
from pathlib import PurePosixPath
from typing import ClassVar, Literal

from pydantic import Field, field_validator

from inference_platform import catalog
from inference_platform.catalog import models
from inference_platform.planners import drain
from inference_platform.planners import placement as inference_placement
from inference_platform.settings.base import CheckContext, Problem, Section
from inference_platform.settings.node_pools import NodePoolSettings, cluster_zones, duration_seconds
from inference_platform.settings.serving import ServingSettings

DEFAULT_REPOSITORY = "inference"
DEFAULT_RUN_AS_USER = 1000
"""The ``triton-server`` user of NVIDIA's Triton images (and of Dockerfile.neuron)."""
# ECR repository names (CreateRepository): lower-case path components separated by '/'.
_REPOSITORY = re.compile(r"^[a-z0-9]+(?:[._-][a-z0-9]+)*(?:/[a-z0-9]+(?:[._-][a-z0-9]+)*)*$")
_TAG = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$")
_DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")
_VERSION_PATH = re.compile(r"^[A-Za-z0-9._-]+(?:/[A-Za-z0-9._-]+)*/?$")
_DURATION = re.compile(r"^[1-9][0-9]*(s|m)$")
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
# Directories the pod mounts for itself; the API-key volume must take another.
POD_PATHS = ("/", "/models", "/tmp", "/etc/inference", "/dev/shm", "/mnt/model-cache")
# A multi-node replica's pods must start together; beyond this Pulumi would wait for hours.
MAX_STARTUP_SECONDS = 4 * 3600


class ImageSettings(Section):
    repository: str = DEFAULT_REPOSITORY
    """Default ``inference``. ECR repository, created as ``<project>-<stack>/<repository>``
    (``inference-neuron`` for the Neuron image)."""
    tag: str | None = None
    """Default unset. Image tag; tags are immutable in the repository, so a tag names one image. With
    neither tag nor digest the stack has the repository only (push the first image, then set them)."""
    digest: str | None = None
    """Default unset; required in production. ``sha256:<64 hex>``; the pods reference the image by it."""

    @field_validator("repository")
    @classmethod
    def _repository(cls, value: str) -> str:
        if not _REPOSITORY.match(value) or len(value) > 200:
            raise ValueError("expected an ECR repository name: lower-case letters, digits, '.', '_', '-', '/'")
        return value

    @field_validator("tag")
    @classmethod
    def _tag(cls, value: str | None) -> str | None:
        if value is not None and not _TAG.match(value):
            raise ValueError("expected a Docker tag: letters, digits, '.', '_', '-' (at most 128)")
        return value

    @field_validator("digest")
    @classmethod
    def _digest(cls, value: str | None) -> str | None:
        if value is not None and not _DIGEST.match(value):
            raise ValueError("expected sha256:<64 lower-case hex digits>")
        return value


class EcrSettings(Section):
    keep_images: int = Field(default=30, ge=1, le=1000)
    """Default 30. Images the lifecycle policy keeps (newest first); older ones expire."""
    untagged_expire_days: int = Field(default=7, ge=1, le=365)
    """Default 7. Days after which an untagged image (a failed or superseded push) expires."""
    scan_on_push: bool = True
    """Default ``true``; production requires it. ECR basic scanning of every pushed image."""


class RolloutSettings(Section):
    max_surge: int = Field(default=1, ge=0)
    """Default 1. Extra pods (LeaderWorkerSet: groups) started during an update; they need free
    accelerators in the pool."""
    max_unavailable: int = Field(default=0, ge=0)
    """Default 0: capacity never drops during an update (a new pod loads its model before an old one
    goes). Not 0 together with maxSurge 0."""


class PdbSettings(Section):
    max_unavailable: int = Field(default=1, ge=1)
    """Default 1. Pods (LeaderWorkerSet: pods of at most one group) a node drain may evict at once;
    at least 1, or drains and Karpenter expiry would wait forever."""


class ResourceSettings(Section):
    cpu: float = Field(default=4, gt=0, le=512)
    """Default 4. CPU cores of the server container (requests = limits)."""
    memory_gib: float = Field(default=16, gt=0, le=4096)
    """Default 16. Memory of the server container in GiB (requests = limits); includes /dev/shm."""


INIT_CPU_MAX = 8
INIT_MEMORY_GIB_MAX = 16


class InitResourceSettings(Section):
    cpu: float | None = Field(default=None, gt=0, le=64)
    """Default: the server's CPU up to 8 (InferenceSettings.init_cpu). CPU of each artifact init container."""
    memory_gib: float | None = Field(default=None, gt=0, le=256)
    """Default: the server's memory up to 16 GiB. Memory (GiB) of each artifact init container."""


class ModelSettings(Section):
    source: Literal["auto", "fsx", "download"] = "auto"
    """Default ``auto``: ``fsx`` when the stack has the FSx cache (fsx.enabled), else ``download``.
    ``fsx`` stages the version from the cache; ``download`` runs ``inferctl artifacts download`` from S3.
    Either way the server verifies every file against the version's manifest before it loads."""
    engine: str | None = None
    """Required for a rollout. Engine version path under storage.modelPrefix, as ``inferctl prepare``
    published it (``llama-3.1-8b/fp8-tp1-sm89/2026-11-30/``)."""
    tokenizer: str | None = None
    """Required for a rollout. Tokenizer version path under storage.modelPrefix."""
    volume_gib: int = Field(default=50, ge=1, le=8192)
    """Default 50. Local volume (node disk) holding engine and tokenizer; at least the engine's size."""

    @field_validator("engine", "tokenizer")
    @classmethod
    def _path(cls, value: str | None) -> str | None:
        if value is None:
            return value
        if not _VERSION_PATH.match(value) or any(part in (".", "..") for part in value.rstrip("/").split("/")):
            raise ValueError("expected a relative version path such as llama-3.1-8b/fp8-tp1-sm89/v1/")
        return value.rstrip("/") + "/"


class ProbeSettings(Section):
    startup_seconds: int = Field(default=1800, ge=60, le=MAX_STARTUP_SECONDS)
    """Default 1800. Longest model load before the pod is restarted (download + verify + engine load)."""
    period_seconds: int = Field(default=10, ge=1, le=300)
    """Default 10. Probe period of the startup, readiness and liveness probes."""
    timeout_seconds: int = Field(default=5, ge=1, le=60)
    """Default 5. Probe timeout; below periodSeconds."""
    readiness_failures: int = Field(default=3, ge=1, le=100)
    """Default 3. Failed readiness probes (the OpenAI server's /health: a token streamed lately or a 1-token
    generation within timeoutSeconds - 1) before the pod leaves the Service."""
    liveness_failures: int = Field(default=6, ge=1, le=100)
    """Default 6. Failed /v2/health/live probes before the container restarts."""


class TerminationSettings(Section):
    pre_stop_seconds: int = Field(default=15, ge=0, le=600)
    """Default 15. The server keeps serving after the pod left the endpoints, until load balancers have
    deregistered it; then SIGTERM starts Triton's drain (serving.server.exitTimeoutSeconds)."""
    grace_period_seconds: int | None = Field(default=None, ge=1, le=7200)
    """Default derived: preStopSeconds + the drain (serving.server.exitTimeoutSeconds, itself derived from the
    longest stream unless set) + 5. terminationGracePeriodSeconds; when set, at least that sum."""

    def grace_seconds(self, exit_timeout_seconds: int) -> int:
        """terminationGracePeriodSeconds: the hand-set value, else preStop + the drain + the exit margin."""
        if self.grace_period_seconds is not None:
            return self.grace_period_seconds
        return drain.grace_period(self.pre_stop_seconds, exit_timeout_seconds)


class TopologySpreadSettings(Section):
    zones: Literal["required", "preferred"] = "required"
    """Default ``required`` (DoNotSchedule): replicas differ by at most one per zone of the pool, so
    they really spread (a preferred spread only scores, and pods fill the zone with free capacity).
    Zones whose nodes are tainted unreachable stop counting, so a lost zone's replicas move."""
    hosts: Literal["required", "preferred"] = "preferred"
    """Default ``preferred`` (ScheduleAnyway): pods spread over nodes where they can."""


class MonitoringSettings(Section):
    service_monitor: bool = True
    """Default ``true``. A ServiceMonitor (monitoring.coreos.com/v1) for Triton's metrics port."""
    install_crds: bool = True
    """Default ``true``: install the Prometheus Operator CRDs (prometheus-operator-crds chart) so the
    ServiceMonitor applies before an observability stack exists. ``false`` when one installs them."""
    namespace: str = "monitoring"
    """Default ``monitoring``. Namespace of the Prometheus that scrapes (the NetworkPolicy admits it)."""
    scrape_interval: str = "15s"
    """Default ``15s``. Scrape interval (``<n>s`` or ``<n>m``)."""

    @field_validator("namespace")
    @classmethod
    def _namespace(cls, value: str) -> str:
        if not _DNS_LABEL.match(value):
            raise ValueError("expected a namespace name (DNS label)")
        return value

    @field_validator("scrape_interval")
    @classmethod
    def _interval(cls, value: str) -> str:
        if not _DURATION.match(value):
            raise ValueError("expected a duration such as 15s or 1m")
        return value


class NetworkPolicySettings(Section):
    load_balancer_cidrs: list[str] | None = None
    """Default: the stack's public subnets (where its internet-facing load balancers live). CIDRs
    allowed to reach the HTTP and gRPC ports; ``[]`` admits no load balancer at all."""


class InferenceSettings(Section):
    key: ClassVar[str] = "inference"

    replicas: int = Field(default=1, ge=0, le=1000)
    """Default 1; production needs at least 2. Serving replicas (multi-node: groups)."""
    image: ImageSettings = Field(default_factory=ImageSettings)
    ecr: EcrSettings = Field(default_factory=EcrSettings)
    rollout: RolloutSettings = Field(default_factory=RolloutSettings)
    pdb: PdbSettings = Field(default_factory=PdbSettings)
    resources: ResourceSettings = Field(default_factory=ResourceSettings)
    init_resources: InitResourceSettings = Field(default_factory=InitResourceSettings)
    shared_memory_gib: float = Field(default=2, gt=0, le=4096)
    """Default 2. /dev/shm (memory emptyDir) in GiB: Python-backend tensors and NCCL; counts against
    resources.memoryGib."""
    scratch_gib: int = Field(default=10, ge=1, le=1024)
    """Default 10. Writable /tmp (rendered repository, caches) under the read-only root filesystem."""
    model: ModelSettings = Field(default_factory=ModelSettings)
    probes: ProbeSettings = Field(default_factory=ProbeSettings)
    termination: TerminationSettings = Field(default_factory=TerminationSettings)
    topology_spread: TopologySpreadSettings = Field(default_factory=TopologySpreadSettings)
    monitoring: MonitoringSettings = Field(default_factory=MonitoringSettings)
    network_policy: NetworkPolicySettings = Field(default_factory=NetworkPolicySettings)
    run_as_user: int = Field(default=DEFAULT_RUN_AS_USER, ge=1, le=2**31 - 1)
    """Default 1000. Non-root UID (and GID) of every container; the image's unprivileged user."""

    @property
    def has_image(self) -> bool:
        """The rollout exists once an image is named; before, only its repository does."""
        return self.image.tag is not None or self.image.digest is not None

    def init_cpu(self) -> float:
        """CPUs of each artifact init container: ``initResources.cpu``, else the server's up to ``INIT_CPU_MAX``."""
        return self.init_resources.cpu if self.init_resources.cpu is not None else min(self.resources.cpu, INIT_CPU_MAX)

    def init_memory_gib(self) -> float:
        """Memory of each artifact init container: as set, else the server's up to ``INIT_MEMORY_GIB_MAX``."""
        init = self.init_resources.memory_gib
        return init if init is not None else min(self.resources.memory_gib, INIT_MEMORY_GIB_MAX)

    def model_source(self, fsx_enabled: bool) -> str:
        """``fsx`` or ``download`` (``auto`` resolved against the stack's FSx cache)."""
        if self.model.source == "auto":
            return "fsx" if fsx_enabled else "download"
        return self.model.source

    def problems(self, ctx: CheckContext) -> list[Problem]:
        out = self._own_problems(ctx)
        if not self.has_image:
            return out
        serving = ctx.sections.get("serving")
        root = getattr(ctx.sections.get("nodePools"), "root", None) or {}
        if not isinstance(serving, ServingSettings) or serving.node_pool not in root:
            return out  # no pool to roll out to (serving names a missing pool)
        out += self._rollout_problems(ctx, serving, root[serving.node_pool])
        return out

    def _own_problems(self, ctx: CheckContext) -> list[Problem]:
        out = []
        if ctx.production and not self.ecr.scan_on_push:
            out.append(Problem("inference.ecr.scanOnPush", "production scans every image it may run: set true"))
        if not self.has_image:
            return out
        if ctx.production and self.image.digest is None:
            out.append(
                Problem(
                    "inference.image.digest",
                    f"missing; production references the image by digest, not by tag ({self.image.tag})",
                )
            )
        # Unset replicas with a capacity plan come from the plan, which keeps production at 2 or more.
        planned = "replicas" not in self.model_fields_set and getattr(ctx.sections.get("capacity"), "enabled", False)
        if ctx.production and self.replicas < 2 and not planned:
            out.append(Problem("inference.replicas", f"got {self.replicas}; production serves from at least 2"))
        if self.rollout.max_surge == 0 and self.rollout.max_unavailable == 0:
            out.append(
                Problem(
                    "inference.rollout.maxSurge",
                    "0 with maxUnavailable 0: an update could neither add nor remove a pod and never progresses",
                )
            )
        for name in ("engine", "tokenizer"):
            if getattr(self.model, name) is None:
                out.append(Problem(f"inference.model.{name}", "missing; the version path under storage.modelPrefix"))
        probes = self.probes
        if probes.timeout_seconds >= probes.period_seconds:
            out.append(
                Problem(
                    "inference.probes.timeoutSeconds",
                    f"got {probes.timeout_seconds}; below periodSeconds ({probes.period_seconds})",
                )
            )
        if self.shared_memory_gib >= self.resources.memory_gib:
            out.append(
                Problem(
                    "inference.sharedMemoryGib",
                    f"got {self.shared_memory_gib:g}; /dev/shm counts against the pod's memory limit: keep it "
                    f"below resources.memoryGib ({self.resources.memory_gib:g})",
                )
            )
        for i, cidr in enumerate(self.network_policy.load_balancer_cidrs or []):
            if not _is_cidr(cidr):
                out.append(Problem(f"inference.networkPolicy.loadBalancerCidrs[{i}]", f"got {cidr!r}; not a CIDR"))
        return out

    def _rollout_problems(self, ctx: CheckContext, serving: ServingSettings, pool: NodePoolSettings) -> list[Problem]:
        out = []
        if self.model.source == "fsx" and not getattr(ctx.sections.get("fsx"), "enabled", False):
            out.append(Problem("inference.model.source", "fsx needs the model cache (fsx.enabled: true)"))
        elif self.model.source == "download" and getattr(ctx.sections.get("fsx"), "enabled", False):
            # The Lustre file system is the rollout's only reader (components/storage ModelCache): downloading
            # past it leaves a cache that is paid for by the hour and never read.
            out.append(
                Problem(
                    "inference.model.source",
                    "got 'download' while fsx.enabled is true: the model cache would be paid for and never read; "
                    "use 'auto' or 'fsx', or set fsx.enabled: false",
                )
            )
        artifacts = serving.artifacts
        for key, value in (("engineUri", artifacts.engine_uri), ("tokenizerUri", artifacts.tokenizer_uri)):
            if value is not None:
                out.append(
                    Problem(
                        f"serving.artifacts.{key}",
                        "the rollout passes the stack bucket's version (inference.model.engine/tokenizer); unset it",
                    )
                )
        out += _auth_problems(serving)
        exit_timeout = serving.exit_timeout_seconds
        needed = drain.grace_period(self.termination.pre_stop_seconds, exit_timeout)
        grace = self.termination.grace_period_seconds
        if grace is not None and grace < needed:
            derived = "" if serving.server.exit_timeout_seconds is not None else " (derived from the longest stream)"
            out.append(
                Problem(
                    "inference.termination.gracePeriodSeconds",
                    f"got {grace}; preStopSeconds {self.termination.pre_stop_seconds} + serving.server."
                    f"exitTimeoutSeconds {exit_timeout}{derived} + {drain.EXIT_MARGIN_SECONDS} = {needed} are "
                    "needed to drain streams; unset it to derive it",
                )
            )
        out += _node_grace_problems(ctx, serving.node_pool, pool, self.termination.grace_seconds(exit_timeout))
        try:
            fit = inference_placement.pool_fit(pool.instance_types, serving.ranks_per_node)
        except (catalog.CatalogError, ValueError):
            return out  # the pool and serving sections name these
        if fit.pods_per_node < 1:
            return out  # serving.tensorParallel names a world too large for the node
        out += self._node_problems(serving, pool, fit)
        zones = cluster_zones(ctx) or []
        shards = pool.shard_count(zones)
        slots = inference_placement.replica_slots(
            fit, max_size=pool.max_size, shards=shards, nodes_per_replica=serving.nodes
        )
        at = f"serving.nodePool {serving.node_pool!r}"
        per_zone = f" per zone x {shards} zones" if shards > 1 else ""
        multi = f" / {serving.nodes} nodes each" if serving.nodes > 1 else ""
        if self.replicas > slots:
            out.append(
                Problem(
                    "inference.replicas",
                    f"got {self.replicas}; {at} holds {slots} at nodePools.{serving.node_pool}.maxSize ({pool.max_size} "
                    f"nodes{per_zone} x "
                    f"{fit.pods_per_node} per node{multi})",
                )
            )
        elif self.replicas + self.rollout.max_surge > slots and self.replicas > 0:
            out.append(
                Problem(
                    "inference.rollout.maxSurge",
                    f"got {self.rollout.max_surge}; {self.replicas} replicas + the surge exceed the {slots} "
                    f"{at} holds at maxSize ({pool.max_size} nodes{per_zone}): the update would wait for capacity "
                    "that never comes",
                )
            )
        pool_zones = pool.zones(zones)
        if ctx.production and self.replicas >= 2 and zones and len(pool_zones) < 2:
            out.append(
                Problem(
                    f"nodePools.{serving.node_pool}.availabilityZones",
                    f"got {', '.join(pool_zones)}; production serves its {self.replicas} replicas from at least two "
                    "zones (an EFA pool gets one node group per zone listed)",
                )
            )
        return out

    def _node_problems(
        self, serving: ServingSettings, pool: NodePoolSettings, fit: inference_placement.PoolFit
    ) -> list[Problem]:
        out = []
        node, per_node = fit.node, fit.pods_per_node
        where = f"{node.instance_type} ({node.ram_gib:g} GiB RAM, {per_node} pod(s) per node)"
        if self.shared_memory_gib > node.ram_gib:
            out.append(
                Problem(
                    "inference.sharedMemoryGib",
                    f"got {self.shared_memory_gib:g}; larger than the node's RAM on {where}",
                )
            )
        elif self.resources.memory_gib * per_node > node.memory_gib:
            out.append(
                Problem(
                    "inference.resources.memoryGib",
                    f"got {self.resources.memory_gib:g}; {where} offers pods about {node.memory_gib:.0f} GiB",
                )
            )
        if self.resources.cpu * per_node > node.cpu:
            out.append(
                Problem(
                    "inference.resources.cpu",
                    f"got {self.resources.cpu:g}; {where} offers pods about {node.cpu:.1f} cores",
                )
            )
        # A pod's request is the larger of its containers' sum and each init container's: an init container
        # beyond the node leaves the pod Pending exactly as the server's own request would.
        init = self.init_resources
        if init.cpu is not None and init.cpu * per_node > node.cpu:
            out.append(
                Problem(
                    "inference.initResources.cpu",
                    f"got {init.cpu:g}; {where} offers pods about {node.cpu:.1f} cores (a pod requests the "
                    "largest of its init containers, so it would stay Pending)",
                )
            )
        if init.memory_gib is not None and init.memory_gib * per_node > node.memory_gib:
            out.append(
                Problem(
                    "inference.initResources.memoryGib",
                    f"got {init.memory_gib:g}; {where} offers pods about {node.memory_gib:.0f} GiB (a pod requests "
                    "the largest of its init containers, so it would stay Pending)",
                )
            )
        engine_gib = _engine_gib(serving)
        if engine_gib is not None:
            per_pod = engine_gib / serving.nodes
            if self.model.volume_gib < per_pod:
                out.append(
                    Problem(
                        "inference.model.volumeGib",
                        f"got {self.model.volume_gib}; the {serving.model} {serving.precision} engine is about "
                        f"{math.ceil(per_pod)} GiB per pod",
                    )
                )
            if self.resources.memory_gib < self.shared_memory_gib + per_pod:
                out.append(
                    Problem(
                        "inference.resources.memoryGib",
                        f"got {self.resources.memory_gib:g}; loading reads each rank's engine into host memory "
                        f"(~{math.ceil(per_pod)} GiB for this pod) next to /dev/shm ({self.shared_memory_gib:g} GiB)",
                    )
                )
        disk = pool.disk_size_gib - inference_placement.IMAGE_DISK_GIB
        local = (self.model.volume_gib + self.scratch_gib) * per_node
        if local > disk:
            out.append(
                Problem(
                    "inference.model.volumeGib",
                    f"model + scratch volumes of {per_node} pod(s) need {local} GiB; nodePools.{serving.node_pool}"
                    f".diskSizeGib {pool.disk_size_gib} leaves {disk} GiB after {inference_placement.IMAGE_DISK_GIB} "
                    "GiB for images",
                )
            )
        return out


def _auth_problems(serving: ServingSettings) -> list[Problem]:
    auth = serving.auth
    if not auth.enabled:
        return []
    out = []
    if "health" in auth.restricted_apis:
        out.append(Problem("serving.auth.restrictedApis", "kubelet probes carry no API key: leave health unrestricted"))
    if auth.key_env is not None:
        out.append(Problem("serving.auth.keyEnv", "the rollout delivers API keys as files (secrets CSI): use keyFile"))
    elif auth.key_file is not None:
        directory = PurePosixPath(auth.key_file).parent
        if not PurePosixPath(auth.key_file).is_absolute() or str(directory) in POD_PATHS:
            out.append(
                Problem(
                    "serving.auth.keyFile",
                    f"got {auth.key_file!r}; the secrets volume mounts on the key's directory, which must be an "
                    f"absolute path other than {', '.join(POD_PATHS)}",
                )
            )
    return out


def _engine_gib(serving: ServingSettings) -> float | None:
    try:
        arch = serving.resolved_architecture()
        return models.weight_bytes(arch, serving.precision) / inference_placement.GIB
    except (models.UnknownModelError, ValueError):
        return None


def _is_cidr(value: str) -> bool:
    try:
        ipaddress.IPv4Network(value, strict=True)
    except ValueError:
        return False
    return True


def _node_grace_problems(ctx: CheckContext, name: str, pool: NodePoolSettings, pod_grace: int) -> list[Problem]:
    """A Karpenter pool's terminationGracePeriod below the serving pods' own: Karpenter deletes such a pod early and
    grants it only what is left of the node's (v1.14.1 terminator.go DeleteExpiringPods; tests/data/upstream/
    karpenter_v1.14.1_termination_grace_period.json), so a draining node would cut the streams the pod's drain is
    sized for."""
    if getattr(ctx.sections.get("cluster"), "provisioning", "managed") != "karpenter":
        return []
    node_grace = duration_seconds(pool.termination_grace_period)
    if node_grace is None or node_grace >= pod_grace:
        return []  # a malformed value is the node pool's own problem
    return [
        Problem(
            f"nodePools.{name}.terminationGracePeriod",
            f"got {pool.termination_grace_period!r} ({node_grace} s) on a Karpenter pool (cluster.provisioning); the "
            f"serving pods' inference.termination.gracePeriodSeconds is {pod_grace} s (preStop + the drain the longest "
            "stream needs + 5): a node Karpenter drains would cut their streams; raise it to at least that",
        )
    ]
