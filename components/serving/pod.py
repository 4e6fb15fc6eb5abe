"""The Triton pod of an inference rollout as plain Kubernetes dicts: pure builders, no Pulumi calls.

The image's contract (inference_image/README.md) decides the shape: ``inferctl serve`` is the
entrypoint, reads the serving section from ``/etc/inference/serving.json``, downloads and verifies
engine and tokenizer into ``/models`` and writes its repository under ``/tmp``; so those are writable
volumes under a read-only root filesystem, with ``/dev/shm`` in memory for the Python backend.
Artifacts reach ``/models`` before the server starts, from an init container: ``inferctl artifacts
download`` from S3, or a copy from the FSx cache. The server then re-verifies every file against the
version's manifest (reading only the manifest from S3), so a torn copy is never served.
Values may be Pulumi Inputs (the image, the artifact URIs): the dicts go straight into resource args.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import pulumi

from inference_platform.catalog.efa import EFA_ENV, EFA_HUGEPAGES_2MI_MIB, HUGEPAGES_2MI
from inference_platform.catalog.pool_profile import LABEL_POOL, Taint
from inference_platform.catalog.serving_contract import (
    GRPC_PORT,
    HTTP_PORT,
    LIVE_PATH,
    LIVENESS_STALL_ENV,
    METRICS_PORT,
    MODELS_DIR,
    OPENAI_HEALTH_PATH,
    OPENAI_LIVE_PATH,
    OPENAI_PORT,
    READINESS_DEADLINE_ENV,
)
from inference_platform.components.common.security_context import container_security_context, pod_security_context
from inference_platform.planners import cold_start

SERVER_CONTAINER = "triton"
SETTINGS_DIR = "/etc/inference"
SETTINGS_FILE = "serving.json"
SCRATCH_DIR = "/tmp"
SHM_DIR = "/dev/shm"
CACHE_MOUNT = "/mnt/model-cache"
LOG_HEADROOM_GIB = 2
STAGE_STREAMS = cold_start.PARALLEL_COPY_STREAMS
STAGE_SCRIPT = (
    '''set -e; mkdir -p "$2"; cd "$1"; find . -type f -print0 | xargs -0 -r -P "$3" -I{} cp --parents -- {} "$2"'''
)
"""Copy the version's files from the cache ($1) into $2, $3 at a time (GNU findutils/coreutils in the image);
xargs exits non-zero when any copy fails, and set -e fails the container with it."""
"""Ephemeral storage beyond the volumes: container logs (the root filesystem is read-only)."""
SECRETS_CSI_DRIVER = "secrets-store.csi.k8s.io"
LABEL_ZONE = "topology.kubernetes.io/zone"
LABEL_HOST = "kubernetes.io/hostname"
PORTS = (("openai", OPENAI_PORT), ("http", HTTP_PORT), ("grpc", GRPC_PORT), ("metrics", METRICS_PORT))
READINESS_MARGIN_SECONDS = 1
"""The health endpoint answers this much before the probe's timeout, so the reason is the server's, not the kubelet's."""

Spread = Literal["required", "preferred"]
_WHEN = {"required": "DoNotSchedule", "preferred": "ScheduleAnyway"}


@dataclass(frozen=True, kw_only=True)
class Probes:
    """The server's startup, readiness and liveness probes: the startup budget, period, timeout and failure counts."""

    startup_seconds: int = 1800
    """Default 1800. Budget for download, verification and model load before a restart."""
    period_seconds: int = 10
    """Default 10. Period of every probe."""
    timeout_seconds: int = 5
    """Default 5. Below period_seconds."""
    readiness_failures: int = 3
    """Default 3. Failed readiness probes (the OpenAI server's health: a 1-token generation) before the pod
    leaves its Service."""
    liveness_failures: int = 6
    """Default 6. Failed liveness probes (the OpenAI server's /live: the model's process answers and its engine is
    not stalled with work) before the container restarts."""
    engine_stall_seconds: int = 60
    """Default 60. With requests in flight, an engine showing no progress this long fails liveness."""


@dataclass(frozen=True, kw_only=True)
class Drain:
    """How a pod stops: how long it keeps serving after leaving the endpoints, and its termination grace period."""

    pre_stop_seconds: int = 15
    """Default 15. Serving continues this long after the pod left the endpoints (LB deregistration)."""
    grace_period_seconds: int = 60
    """Default 60. terminationGracePeriodSeconds: covers preStop and Triton's own exit timeout."""


@dataclass(frozen=True, kw_only=True)
class Resources:
    """CPU and memory of one container (requests = limits)."""

    cpu: float
    """Required. Cores (requests = limits)."""
    memory_gib: float
    """Required. GiB (requests = limits); a memory emptyDir counts against it."""


@dataclass(frozen=True, kw_only=True)
class ModelSource:
    """Where engine and tokenizer come from before the server verifies them."""

    kind: Literal["download", "fsx"]
    engine_uri: pulumi.Input[str]
    """``s3://<bucket>/<prefix>/`` of the engine version (the server verifies against its manifest)."""
    tokenizer_uri: pulumi.Input[str]
    volume_gib: int
    """Local volume for both (node disk)."""
    claim_name: str | None = None
    """fsx: the read-only model-cache claim in the pod's namespace."""
    engine_path: str | None = None
    """fsx: the engine version's directory inside the cache (``/models/<version path>``)."""
    tokenizer_path: str | None = None
    engine_manifest_sha256: str | None = None
    """Default unset. The engine manifest's SHA-256 (serving.artifacts.engineManifestSha256): a fetch
    init container refuses any other manifest before writing anything (the server checks it again)."""
    tokenizer_manifest_sha256: str | None = None
    """Default unset. The tokenizer manifest's SHA-256, as ``engine_manifest_sha256``."""


@dataclass(frozen=True, kw_only=True)
class SecretMount:
    """The API-key files a pod reads through the Secrets Store CSI driver: its SecretProviderClass and mount."""

    class_name: str
    """The SecretProviderClass of the pod's service account."""
    mount_dir: str
    """Where the files appear (the directory of serving.auth.keyFile)."""


@dataclass(frozen=True, kw_only=True)
class Placement:
    """Where the serving pods run: the pool, its taints, accelerators and EFA interfaces per pod, the zone and host spread."""

    pool: str
    """The ``node-pool`` label value of the serving pool."""
    taints: Sequence[Taint] = ()
    """Default none. The pool's taints, tolerated."""
    resource_name: str = "nvidia.com/gpu"
    """Default ``nvidia.com/gpu``; ``aws.amazon.com/neuron`` on Neuron pools."""
    accelerators: int = 1
    """Default 1. Devices per pod (requests = limits)."""
    efa: int = 0
    """``vpc.amazonaws.com/efa`` interfaces (0: none)."""
    hugepages_2mi_mib: int = EFA_HUGEPAGES_2MI_MIB
    """Default 5120 (AWS's EKS EFA guidance). ``hugepages-2Mi`` requested with EFA interfaces: libfabric's EFA
    provider backs its registered buffers with huge pages (catalog/efa.py); 0 requests none."""
    zones: Spread = "required"
    """Default ``required`` (DoNotSchedule): at most one replica more in any zone than in another.
    Required rather than preferred: ScheduleAnyway only scores, so pods fill whichever zone has free
    accelerators first and the autoscaler never adds a node for the emptier zone; DoNotSchedule keeps
    a pending pod for that zone, which the pool's zonal node groups (and Karpenter) can then grow."""
    hosts: Spread = "preferred"
    """Default ``preferred`` (ScheduleAnyway): spread over nodes where possible."""
    scheduler_name: str | None = None
    """The Neuron scheduler extension keeps a pod's NeuronCores on adjacent devices."""


@dataclass(frozen=True, kw_only=True)
class ServerPod:
    """Everything one serving pod is made of; InferenceService fills it from its Args."""

    image: pulumi.Input[str]
    settings_config_map: str
    """The ConfigMap holding serving.json."""
    model: ModelSource
    placement: Placement
    resources: Resources
    """The server container."""
    init_resources: Resources
    """Each artifact init container."""
    shared_memory_gib: float
    scratch_gib: int
    region: str
    selector: Mapping[str, str]
    """Labels that select this rollout's pods (topology spread counts them)."""
    probes: Probes = field(default_factory=Probes)
    drain: Drain = field(default_factory=Drain)
    secrets: SecretMount | None = None
    """Default none: no API-key volume."""
    neuron: bool = False
    """Default ``False``. The Neuron image (its compile cache goes under /tmp)."""
    run_as_user: int = 1000
    """Default 1000. UID and GID of every container."""


def quantity_gib(gib: float) -> str:
    return f"{int(gib)}Gi" if float(gib).is_integer() else f"{math.ceil(gib * 1024)}Mi"


def quantity_cpu(cores: float) -> str:
    return str(int(cores)) if float(cores).is_integer() else f"{math.ceil(cores * 1000)}m"


def server_args(pod: ServerPod, *extra: str) -> list[pulumi.Input[str]]:
    return [
        "--settings",
        f"{SETTINGS_DIR}/{SETTINGS_FILE}",
        "--engine-uri",
        pod.model.engine_uri,
        "--tokenizer-uri",
        pod.model.tokenizer_uri,
        *extra,
    ]


def server_container(
    pod: ServerPod,
    *,
    args: Sequence[pulumi.Input[str]],
    command: Sequence[str] | None = None,
    serving: bool = True,
    extra_env: Sequence[Mapping[str, Any]] = (),
    extra_mounts: Sequence[Mapping[str, Any]] = (),
    readiness_command: Sequence[str] | None = None,
) -> dict[str, Any]:
    """The server container. ``serving`` adds ports and HTTP probes; a multi-node worker has neither
    (its ranks listen on nothing) and is ready once ``readiness_command`` succeeds."""
    container: dict[str, Any] = {
        "name": SERVER_CONTAINER,
        "image": pod.image,
        "imagePullPolicy": "IfNotPresent",
        "args": list(args),
        "env": [*_env(pod), *extra_env],
        "resources": _server_resources(pod),
        "securityContext": container_security(pod.run_as_user),
        "volumeMounts": [*_server_mounts(pod), *extra_mounts],
    }
    if command is not None:
        container["command"] = list(command)
    if serving:
        probes = pod.probes
        container["ports"] = [{"name": name, "containerPort": port, "protocol": "TCP"} for name, port in PORTS]
        container["startupProbe"] = _http_probe(
            LIVE_PATH, probes, math.ceil(probes.startup_seconds / probes.period_seconds)
        )
        # Ready means the engine can generate (inference_image/readiness.py), not only that Triton answers.
        container["readinessProbe"] = _http_probe(OPENAI_HEALTH_PATH, probes, probes.readiness_failures, port="openai")
        # Live means the model's process answers and its engine is not stalled with work (inference_image/liveness.py):
        # Triton's own /v2/health/live stays 200 while its Python model's process is dead.
        container["livenessProbe"] = _http_probe(OPENAI_LIVE_PATH, probes, probes.liveness_failures, port="openai")
        # Keep serving while load balancers deregister the pod; SIGTERM then starts Triton's drain.
        container["lifecycle"] = {"preStop": {"sleep": {"seconds": pod.drain.pre_stop_seconds}}}
    elif readiness_command is not None:
        container["readinessProbe"] = {
            "exec": {"command": list(readiness_command)},
            "periodSeconds": pod.probes.period_seconds,
            "timeoutSeconds": pod.probes.timeout_seconds,
        }
    return container


def init_containers(pod: ServerPod) -> list[dict[str, Any]]:
    """Engine and tokenizer into ``/models`` before the server starts (one container each)."""
    model = pod.model
    out = []
    for what, uri, path, pin in (
        ("engine", model.engine_uri, model.engine_path, model.engine_manifest_sha256),
        ("tokenizer", model.tokenizer_uri, model.tokenizer_path, model.tokenizer_manifest_sha256),
    ):
        dest = f"{MODELS_DIR}/{what}"
        mounts = [{"name": "models", "mountPath": str(MODELS_DIR)}, _mount("scratch", SCRATCH_DIR)]
        if model.kind == "fsx":
            # Files copied STAGE_STREAMS at a time (one cp -R stream could not fill FSx or the node's disk:
            # planners/cold_start.py); the server re-hashes every file.
            command: list[pulumi.Input[str]] = ["sh", "-c", STAGE_SCRIPT, "stage", f"{CACHE_MOUNT}{path}", dest,
                                                str(STAGE_STREAMS)]  # fmt: skip
            mounts.append({"name": "model-cache", "mountPath": CACHE_MOUNT, "readOnly": True})
            name = f"stage-{what}"
        else:
            command = ["inferctl", "artifacts", "download", uri, dest, "--no-progress"]
            if pin is not None:
                command += ["--manifest-sha256", pin]
            name = f"fetch-{what}"
        out.append(
            {
                "name": name,
                "image": pod.image,
                "imagePullPolicy": "IfNotPresent",
                "command": command,
                "env": _env(pod),
                "resources": _equal(
                    {"cpu": quantity_cpu(pod.init_resources.cpu), "memory": quantity_gib(pod.init_resources.memory_gib)}
                ),
                "securityContext": container_security(pod.run_as_user),
                "volumeMounts": mounts,
            }
        )
    return out


def volumes(pod: ServerPod) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [
        {
            "name": "settings",
            "configMap": {
                "name": pod.settings_config_map,
                "items": [{"key": SETTINGS_FILE, "path": SETTINGS_FILE}],
                "defaultMode": 0o444,
            },
        },
        {"name": "models", "emptyDir": {"sizeLimit": quantity_gib(pod.model.volume_gib)}},
        {"name": "scratch", "emptyDir": {"sizeLimit": quantity_gib(pod.scratch_gib)}},
        {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": quantity_gib(pod.shared_memory_gib)}},
    ]
    if pod.model.kind == "fsx":
        out.append(
            {"name": "model-cache", "persistentVolumeClaim": {"claimName": pod.model.claim_name, "readOnly": True}}
        )
    if pod.secrets is not None:
        out.append(
            {
                "name": "api-keys",
                "csi": {
                    "driver": SECRETS_CSI_DRIVER,
                    "readOnly": True,
                    "volumeAttributes": {"secretProviderClass": pod.secrets.class_name},
                },
            }
        )
    return out


def pod_security(run_as_user: int) -> dict[str, Any]:
    """The serving pods' securityContext: user, group and volumes' group ``run_as_user``."""
    # A large cache volume must not be walked on every start to change ownership.
    return pod_security_context(run_as_user, group=True, fs_group=True, fsGroupChangePolicy="OnRootMismatch")


def container_security(run_as_user: int) -> dict[str, Any]:
    """The serving containers' securityContext, pinned to ``run_as_user``."""
    return container_security_context(run_as_user=run_as_user)


def scheduling(pod: ServerPod, *, spread_label_keys: Sequence[str] = ()) -> dict[str, Any]:
    """Node affinity and tolerations of the serving pool, spread over zones and nodes."""
    placement = pod.placement
    out: dict[str, Any] = {
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": LABEL_POOL, "operator": "In", "values": [placement.pool]}]}
                    ]
                }
            }
        },
        "tolerations": [{"key": t.key, "operator": "Exists", "effect": t.effect} for t in placement.taints],
        "topologySpreadConstraints": [
            _spread(LABEL_ZONE, placement.zones, pod.selector, spread_label_keys),
            _spread(LABEL_HOST, placement.hosts, pod.selector, spread_label_keys),
        ],
    }
    if placement.scheduler_name:
        out["schedulerName"] = placement.scheduler_name
    return out


def pod_spec(
    pod: ServerPod,
    containers: Sequence[Mapping[str, Any]],
    *,
    service_account: str,
    with_init: bool = True,
    automount_token: bool = False,
    extra_volumes: Sequence[Mapping[str, Any]] = (),
    spread_label_keys: Sequence[str] = (),
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "serviceAccountName": service_account,
        # AWS credentials come from Pod Identity; only an MPI leader needs the Kubernetes API.
        "automountServiceAccountToken": automount_token,
        "enableServiceLinks": False,
        "securityContext": pod_security(pod.run_as_user),
        "terminationGracePeriodSeconds": pod.drain.grace_period_seconds,
        "containers": [dict(c) for c in containers],
        "volumes": [*volumes(pod), *extra_volumes],
        **scheduling(pod, spread_label_keys=spread_label_keys),
    }
    if with_init:
        spec["initContainers"] = init_containers(pod)
    return spec


def _env(pod: ServerPod) -> list[dict[str, Any]]:
    env = [
        {"name": "AWS_REGION", "value": pod.region},
        {"name": "AWS_DEFAULT_REGION", "value": pod.region},
        # Libraries cache under $HOME by default, which the read-only root filesystem refuses.
        {"name": "HOME", "value": f"{SCRATCH_DIR}/home"},
        {"name": "XDG_CACHE_HOME", "value": f"{SCRATCH_DIR}/cache"},
        {"name": "HF_HOME", "value": f"{SCRATCH_DIR}/huggingface"},
    ]
    if pod.neuron:
        env.append({"name": "NEURON_COMPILE_CACHE_URL", "value": f"{SCRATCH_DIR}/neuron-compile-cache"})
    if pod.placement.efa:
        # NCCL loads aws-ofi-nccl only when asked; without it, ranks on different nodes talk over TCP.
        env += [{"name": name, "value": value} for name, value in EFA_ENV]
    env.append(
        {"name": READINESS_DEADLINE_ENV, "value": str(max(1, pod.probes.timeout_seconds - READINESS_MARGIN_SECONDS))}
    )
    env.append({"name": LIVENESS_STALL_ENV, "value": str(pod.probes.engine_stall_seconds)})
    return env


def _server_resources(pod: ServerPod) -> dict[str, Any]:
    placement = pod.placement
    amounts = {
        "cpu": quantity_cpu(pod.resources.cpu),
        "memory": quantity_gib(pod.resources.memory_gib),
        "ephemeral-storage": quantity_gib(pod.model.volume_gib + pod.scratch_gib + LOG_HEADROOM_GIB),
        placement.resource_name: str(placement.accelerators),
    }
    if placement.efa:
        amounts["vpc.amazonaws.com/efa"] = str(placement.efa)
        if placement.hugepages_2mi_mib:
            # Huge pages are their own resource (not memory) and must be requested = limited.
            amounts[HUGEPAGES_2MI] = f"{placement.hugepages_2mi_mib}Mi"
    return _equal(amounts)


def _equal(amounts: Mapping[str, str]) -> dict[str, Any]:
    """Requests equal to limits: Guaranteed QoS, so the node never evicts a loaded model under pressure."""
    return {"requests": dict(amounts), "limits": dict(amounts)}


def _server_mounts(pod: ServerPod) -> list[dict[str, Any]]:
    mounts: list[dict[str, Any]] = [
        {"name": "settings", "mountPath": SETTINGS_DIR, "readOnly": True},
        {"name": "models", "mountPath": str(MODELS_DIR)},
        _mount("scratch", SCRATCH_DIR),
        _mount("dshm", SHM_DIR),
    ]
    if pod.secrets is not None:
        mounts.append({"name": "api-keys", "mountPath": pod.secrets.mount_dir, "readOnly": True})
    return mounts


def _mount(name: str, path: str) -> dict[str, Any]:
    return {"name": name, "mountPath": path}


def _http_probe(path: str, probes: Probes, failures: int, port: str = "http") -> dict[str, Any]:
    return {
        "httpGet": {"path": path, "port": port},
        "periodSeconds": probes.period_seconds,
        "timeoutSeconds": probes.timeout_seconds,
        "failureThreshold": failures,
    }


def _spread(key: str, mode: Spread, selector: Mapping[str, str], label_keys: Sequence[str]) -> dict[str, Any]:
    constraint: dict[str, Any] = {
        "maxSkew": 1,
        "topologyKey": key,
        "whenUnsatisfiable": _WHEN[mode],
        "labelSelector": {"matchLabels": dict(selector)},
        # Count only nodes the pod may use: a lost zone's nodes (tainted unreachable) and cordoned ones
        # drop out, so replicas evicted from it reschedule into the surviving zone instead of pending
        # to keep a skew against pods that are gone.
        "nodeTaintsPolicy": "Honor",
    }
    if label_keys:
        # Count only pods of the same revision, so a rollout's surge pod does not skew the old ones.
        constraint["matchLabelKeys"] = list(label_keys)
    return constraint
