"""The engine-build Job: ``inferctl prepare`` on a node of the serving pool, publishing to the model store.

It builds the TensorRT-LLM engine (or compiles the Neuron model) for exactly the accelerator the
rollout serves on, and publishes engine and tokenizer with the artifact API (manifest last, SHA-256 per
file). The manifest's SHA-256 it prints is what the stack then pins (``serving.artifacts``).

- Runs as the model-sync service account, whose Pod Identity role is the model store's read-write one;
  the inference pods keep the read-only role.
- The Hugging Face token (and the NGC key) arrive as files through the Secrets Store CSI driver, never in
  the Job's spec; ``HF_TOKEN_PATH`` points huggingface_hub at the file.
- No ingress at all (a NetworkPolicy with no rules); egress stays open for S3, STS and the model hub.
- Bounded: ``backoffLimit``, ``activeDeadlineSeconds`` and ``ttlSecondsAfterFinished`` are always set.
- Hardened like the serving pods (non-root, read-only root filesystem, no capabilities, RuntimeDefault
  seccomp, requests = limits) and pinned to the pool's nodes of the one instance type it builds for.
- ``pulumi up`` does not wait for it (``pulumi.com/skipAwait``): a 70B build takes an hour or more and
  must not hold the stack's lock; ``kubectl wait --for=condition=complete job/<name>`` does.
The Job's pod template is immutable, so a changed build (settings, image, target) replaces the Job, which
is what runs the new build.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field

import pulumi
import pulumi_kubernetes as k8s
from inference_platform.components.catalog.serving_contract import MODELS_DIR
from inference_platform.components.common.errors import raise_if
from inference_platform.components.compute.pool_profile import LABEL_POOL
from inference_platform.components.serving.pod import (
    SECRETS_CSI_DRIVER,
    SETTINGS_FILE,
    SHM_DIR,
    Placement,
    Resources,
    SecretMount,
    container_security,
    pod_security,
    quantity_cpu,
    quantity_gib,
)

LABEL_INSTANCE_TYPE = "node.kubernetes.io/instance-type"
WORK_DIR = "/work"
SETTINGS_DIR = "/etc/inference"
DEFAULT_BACKOFF_LIMIT = 1
DEFAULT_ACTIVE_DEADLINE_SECONDS = 4 * 3600
DEFAULT_TTL_SECONDS = 24 * 3600
HF_TOKEN_FILE = "hf-token"


@dataclass(frozen=True, kw_only=True)
class EngineBuildArgs:
    k8s_provider: pulumi.ProviderResource
    """Required. The cluster's Kubernetes provider."""
    namespace: str
    """Required. The model-sync namespace (its service account has the read-write model role)."""
    service_account: str
    """Required. The model-sync service account."""
    image: pulumi.Input[str]
    """Required. The serving image (the build must use the TensorRT-LLM/Neuron versions it serves with)."""
    serving_config: str
    """Required. The stack's validated serving section as JSON (what ``inferctl prepare --settings`` reads)."""
    instance_type: str
    """Required. The one instance type the engine is built for; the pod runs only on it."""
    placement: Placement
    """Required. The serving pool: label, taints, accelerator resource and count (requests = limits)."""
    engine_uri: pulumi.Input[str]
    """Required. ``s3://<bucket>/<prefix>/<engine version>/`` to publish to."""
    tokenizer_uri: pulumi.Input[str]
    """Required. ``s3://...`` of the tokenizer version."""
    region: str
    """Required. The stack's region (the S3 client's)."""
    resources: Resources
    """Required. CPU and memory of the build container (a 70B conversion needs host memory)."""
    work_gib: int = 500
    """Default 500. Node-disk scratch for the checkpoint download and the build."""
    shared_memory_gib: float = 16
    """Default 16. ``/dev/shm`` for the build's MPI ranks."""
    secrets: SecretMount | None = None
    """Default none. The model-sync SecretProviderClass (HF token, NGC key) and where it mounts."""
    force: bool = False
    """Default ``False``. Replace an existing version instead of refusing to overwrite it."""
    backoff_limit: int = DEFAULT_BACKOFF_LIMIT
    """Default 1 (0-10). Retries of a failed build."""
    active_deadline_seconds: int = DEFAULT_ACTIVE_DEADLINE_SECONDS
    """Default 14400 (4 h). The build is killed after this long."""
    ttl_seconds_after_finished: int = DEFAULT_TTL_SECONDS
    """Default 86400. The finished Job (and its logs) are deleted after this long."""
    run_as_user: int = 1000
    """Default 1000. UID and GID of the container."""
    depends_on: Sequence[pulumi.Resource] = field(default_factory=tuple)
    """Default none. What must exist first (the namespace, the secret class)."""


class EngineBuild(pulumi.ComponentResource):
    job_name: str

    def __init__(self, name: str, args: EngineBuildArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        _validate(args)
        super().__init__("inference:serving:EngineBuild", name, None, opts)
        child = pulumi.ResourceOptions(parent=self, provider=args.k8s_provider, depends_on=list(args.depends_on))
        labels = {"app.kubernetes.io/name": "engine-build", "app.kubernetes.io/part-of": "inference-platform"}
        digest = hashlib.sha256(args.serving_config.encode()).hexdigest()[:10]
        config_map = f"engine-build-{digest}"
        k8s.core.v1.ConfigMap(
            f"{name}-config",
            metadata={"name": config_map, "namespace": args.namespace, "labels": labels},
            data={SETTINGS_FILE: args.serving_config},
            immutable=True,
            opts=child,
        )
        self.job_name = f"engine-build-{digest}"
        k8s.batch.v1.Job(
            f"{name}-job",
            metadata={
                "name": self.job_name,
                "namespace": args.namespace,
                "labels": labels,
                "annotations": {"pulumi.com/skipAwait": "true"},
            },
            spec={
                "backoffLimit": args.backoff_limit,
                "activeDeadlineSeconds": args.active_deadline_seconds,
                "ttlSecondsAfterFinished": args.ttl_seconds_after_finished,
                "template": {"metadata": {"labels": labels}, "spec": _pod_spec(args, config_map)},
            },
            opts=child,
        )
        # Nothing ever calls a build: deny all ingress (the pod still reaches S3, STS and the model hub).
        k8s.networking.v1.NetworkPolicy(
            f"{name}-ingress",
            metadata={"name": "engine-build-deny-ingress", "namespace": args.namespace, "labels": labels},
            spec={"podSelector": {"matchLabels": labels}, "policyTypes": ["Ingress"], "ingress": []},
            opts=child,
        )
        self.register_outputs({"job_name": self.job_name})


def _pod_spec(args: EngineBuildArgs, config_map: str) -> dict:
    placement = args.placement
    amounts = {
        "cpu": quantity_cpu(args.resources.cpu),
        "memory": quantity_gib(args.resources.memory_gib),
        "ephemeral-storage": quantity_gib(args.work_gib + 2),
        placement.resource_name: str(placement.accelerators),
    }
    command = [
        "inferctl",
        "prepare",
        "--settings",
        f"{SETTINGS_DIR}/{SETTINGS_FILE}",
        "--instance-type",
        args.instance_type,
        "--engine-uri",
        args.engine_uri,
        "--tokenizer-uri",
        args.tokenizer_uri,
        "--work-dir",
        f"{WORK_DIR}/build",
    ]
    if args.force:
        command.append("--force")
    env = [
        {"name": "AWS_REGION", "value": args.region},
        {"name": "AWS_DEFAULT_REGION", "value": args.region},
        {"name": "HOME", "value": f"{WORK_DIR}/home"},
        {"name": "XDG_CACHE_HOME", "value": f"{WORK_DIR}/cache"},
        {"name": "HF_HOME", "value": f"{WORK_DIR}/huggingface"},
        {"name": "TMPDIR", "value": f"{WORK_DIR}/tmp"},
    ]
    mounts = [
        {"name": "settings", "mountPath": SETTINGS_DIR, "readOnly": True},
        {"name": "work", "mountPath": WORK_DIR},
        {"name": "models", "mountPath": str(MODELS_DIR)},
        {"name": "dshm", "mountPath": SHM_DIR},
    ]
    volumes: list[dict] = [
        {
            "name": "settings",
            "configMap": {
                "name": config_map,
                "items": [{"key": SETTINGS_FILE, "path": SETTINGS_FILE}],
                "defaultMode": 0o444,
            },
        },
        {"name": "work", "emptyDir": {"sizeLimit": quantity_gib(args.work_gib)}},
        {"name": "models", "emptyDir": {"sizeLimit": "1Gi"}},
        {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": quantity_gib(args.shared_memory_gib)}},
    ]
    if args.secrets is not None:
        env.append({"name": "HF_TOKEN_PATH", "value": f"{args.secrets.mount_dir}/{HF_TOKEN_FILE}"})
        mounts.append({"name": "build-secrets", "mountPath": args.secrets.mount_dir, "readOnly": True})
        volumes.append(
            {
                "name": "build-secrets",
                "csi": {
                    "driver": SECRETS_CSI_DRIVER,
                    "readOnly": True,
                    "volumeAttributes": {"secretProviderClass": args.secrets.class_name},
                },
            }
        )
    spec = {
        "serviceAccountName": args.service_account,
        "automountServiceAccountToken": False,
        "enableServiceLinks": False,
        "restartPolicy": "Never",
        "securityContext": pod_security(args.run_as_user),
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {"key": LABEL_POOL, "operator": "In", "values": [placement.pool]},
                                {"key": LABEL_INSTANCE_TYPE, "operator": "In", "values": [args.instance_type]},
                            ]
                        }
                    ]
                }
            }
        },
        "tolerations": [{"key": t.key, "operator": "Exists", "effect": t.effect} for t in placement.taints],
        "containers": [
            {
                "name": "build",
                "image": args.image,
                "imagePullPolicy": "IfNotPresent",
                "command": command,
                "env": env,
                "resources": {"requests": dict(amounts), "limits": dict(amounts)},
                "securityContext": container_security(args.run_as_user),
                "volumeMounts": mounts,
            }
        ],
        "volumes": volumes,
    }
    if placement.scheduler_name:
        spec["schedulerName"] = placement.scheduler_name
    return spec


def _validate(args: EngineBuildArgs) -> None:
    problems = []
    if not 0 <= args.backoff_limit <= 10:
        problems.append(f"backoff_limit={args.backoff_limit}: 0-10")
    if not 600 <= args.active_deadline_seconds <= 7 * 86400:
        problems.append(f"active_deadline_seconds={args.active_deadline_seconds}: 600-604800")
    if not 0 <= args.ttl_seconds_after_finished <= 30 * 86400:
        problems.append(f"ttl_seconds_after_finished={args.ttl_seconds_after_finished}: 0-2592000")
    if args.placement.accelerators < 1:
        problems.append(
            f"placement.accelerators={args.placement.accelerators}: the build needs the pool's accelerators"
        )
    if args.work_gib < 10:
        problems.append(f"work_gib={args.work_gib}: at least 10")
    raise_if("EngineBuild", problems)
