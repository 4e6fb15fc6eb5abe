"""Multi-node replicas as LeaderWorkerSet groups: pure builders of the group's pods and launch rights.

One replica spans ``nodes`` pods (leader + workers), one per node. Every pod downloads, verifies and
renders the same repository (workers with the image's serve module and ``--prepare-only``, then hold their
accelerators); the leader waits until every worker is ready and runs the image entrypoint with
``--hosts``, which runs ``mpirun ... trtllm-llmapi-launch``: rank 0 on the leader runs the server, the
other ranks the LLM API's workers (inference_image/mpi_world.py).

Drain: the leader's entrypoint supervises mpirun instead of becoming it, and on SIGTERM drains the server
before the MPI world stops; a worker's PID 1 (``drain hold``) keeps its container alive while its ranks run,
so deleting a group (every pod gets SIGTERM at once) does not cut the leader's drain short
(inference_image/drain.py; why mpirun cannot be told to wait: catalog/open_mpi.py).

mpirun starts its daemons on the workers through the agent below, ``kubectl exec`` into the
worker's server container: the pattern of NVIDIA's EKS multi-node Triton + TensorRT-LLM tutorial,
without ssh keys to manage. The leader alone mounts an API token, and its Role may only read and
exec into the group's worker pods, named by LeaderWorkerSet as ``<set>-<group>-<index>``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from inference_platform.catalog.open_mpi import launch_agent_env
from inference_platform.components.serving.pod import (
    LABEL_HOST,
    LABEL_ZONE,
    SERVER_CONTAINER,
    SETTINGS_DIR,
    SETTINGS_FILE,
    ServerPod,
    pod_spec,
    scheduling,
    server_args,
    server_container,
)

LWS_API_VERSION = "leaderworkerset.x-k8s.io/v1"
LWS_KIND = "LeaderWorkerSet"
LABEL_WORKER_INDEX = "leaderworkerset.sigs.k8s.io/worker-index"
LABEL_GROUP_KEY = "leaderworkerset.sigs.k8s.io/group-key"
LABEL_REVISION = "leaderworkerset.sigs.k8s.io/template-revision-hash"
LAUNCHER_DIR = "/opt/inference/mpi"
LAUNCHER_FILE = "kubexec"
# OpenMPI calls its remote agent as "<agent> <host> <command...>"; the host is a worker pod's name.
LAUNCHER_SCRIPT = f"""#!/bin/sh
host="$1"
shift
exec kubectl exec "$host" --container {SERVER_CONTAINER} -- /bin/sh -c "$*"
"""
WORKER_READY_FILE = "/tmp/prepared.json"
"""Written (atomically) by a worker once its repository is rendered: its readiness signal."""
HOLD = "python3 -m inference_platform.inference_image.drain hold --budget-seconds"
SERVE = "python3 -m inference_platform.inference_image.serve"
HOSTS_FROM_LWS = (
    'leader="${LWS_LEADER_ADDRESS%%.*}"; hosts="$leader"; i=1; '
    'while [ "$i" -lt "$LWS_GROUP_SIZE" ]; do hosts="$hosts,$leader-$i"; i=$((i + 1)); done;'
)
"""``$hosts`` = the group's pods, leader first (``<set>-<group>``, then ``<set>-<group>-<i>``), from the
variables LeaderWorkerSet v0.10.0 injects into every container (pkg/utils/pod/pod_utils.go AddLWSVariables:
LWS_LEADER_ADDRESS ``<set>-<group>.<subdomain>.<namespace>``, LWS_GROUP_SIZE the group's size)."""
"""The images' entrypoint module (their ENTRYPOINT): no CLI code runs in a pod."""


def worker_pod_names(name: str, groups: int, nodes: int) -> list[str]:
    """Pods of every group a rollout can run (replicas plus surge), workers only."""
    return [f"{name}-{group}-{index}" for group in range(groups) for index in range(1, nodes)]


def launcher_rules(worker_pods: list[str]) -> list[dict[str, Any]]:
    """The leader's rights: wait for its workers and exec into them, nothing else."""
    return [
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"], "resourceNames": worker_pods},
        # kubectl exec upgrades to WebSockets with GET (1.30+); older clients POST: grant both.
        {"apiGroups": [""], "resources": ["pods/exec"], "verbs": ["create", "get"], "resourceNames": worker_pods},
    ]


def hosts_arg(nodes: int) -> str:
    """``--hosts`` for the entrypoint: the leader's pod name first, then its workers'."""
    return "--hosts=" + ",".join(["$(POD_NAME)", *(f"$(POD_NAME)-{i}" for i in range(1, nodes))])


def leader_spec(
    pod: ServerPod, *, service_account: str, nodes: int, launcher_config_map: str, wait_seconds: int
) -> dict[str, Any]:
    # Workers hold no API token: every daemon is started from the leader (no tree spawn), on either Open MPI line.
    agent = launch_agent_env(f"{LAUNCHER_DIR}/{LAUNCHER_FILE}")
    env = [*_identity_env(), *({"name": name, "value": value} for name, value in agent)]
    mount = {"name": "mpi-launcher", "mountPath": LAUNCHER_DIR, "readOnly": True}
    container = server_container(pod, args=server_args(pod, hosts_arg(nodes)), extra_env=env, extra_mounts=[mount])
    spec = pod_spec(
        pod,
        [container],
        service_account=service_account,
        automount_token=True,
        extra_volumes=[{"name": "mpi-launcher", "configMap": {"name": launcher_config_map, "defaultMode": 0o555}}],
        spread_label_keys=[LABEL_REVISION],
    )
    workers = [f"pod/$(POD_NAME)-{i}" for i in range(1, nodes)]
    wait = {
        "name": "wait-for-workers",
        "image": pod.image,
        "imagePullPolicy": "IfNotPresent",
        "command": ["kubectl", "wait", "--for=condition=Ready", f"--timeout={wait_seconds}s", *workers],
        "env": _identity_env(),
        "resources": spec["initContainers"][0]["resources"],
        "securityContext": container["securityContext"],
    }
    spec["initContainers"].append(wait)
    return spec


def worker_spec(pod: ServerPod, *, service_account: str, selector: Mapping[str, str]) -> dict[str, Any]:
    # The URIs arrive as the script's positional parameters ($1, $2): no shell quoting of values. The group's
    # hosts, as the leader passes them, from what LeaderWorkerSet injects (HOSTS_FROM_LWS).
    prepare = (
        f"{HOSTS_FROM_LWS} "
        f'{SERVE} --settings {SETTINGS_DIR}/{SETTINGS_FILE} --engine-uri "$1" --tokenizer-uri "$2" --hosts "$hosts" '
        f"--prepare-only > {WORKER_READY_FILE}.tmp && mv {WORKER_READY_FILE}.tmp {WORKER_READY_FILE} "
        # On SIGTERM, stay while the leader's ranks run here, up to the grace period (the kubelet's own bound).
        f"&& exec {HOLD} {pod.drain.grace_period_seconds}"
    )
    container = server_container(
        pod,
        command=["/bin/sh", "-c", prepare, "prepare-worker"],
        args=[pod.model.engine_uri, pod.model.tokenizer_uri],
        serving=False,
        extra_env=_identity_env(),
        readiness_command=["test", "-s", WORKER_READY_FILE],
    )
    spec = pod_spec(pod, [container], service_account=service_account)
    # A worker follows its leader's zone (EFA and NCCL stay in one zone); only nodes are spread.
    placed = scheduling(pod)
    spec["topologySpreadConstraints"] = [
        c for c in placed["topologySpreadConstraints"] if c["topologyKey"] == LABEL_HOST
    ]
    spec["affinity"] = {
        **placed["affinity"],
        "podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "labelSelector": {"matchLabels": dict(selector)},
                    "matchLabelKeys": [LABEL_GROUP_KEY],
                    "topologyKey": LABEL_ZONE,
                }
            ]
        },
    }
    return spec


def leader_worker_set_spec(
    *,
    replicas: int,
    nodes: int,
    max_surge: int,
    max_unavailable: int,
    leader_labels: Mapping[str, str],
    worker_labels: Mapping[str, str],
    leader: Mapping[str, Any],
    worker: Mapping[str, Any],
) -> dict[str, Any]:
    return {
        "replicas": replicas,
        "startupPolicy": "LeaderCreated",
        "rolloutStrategy": {
            "type": "RollingUpdate",
            "rollingUpdateConfiguration": {"maxSurge": max_surge, "maxUnavailable": max_unavailable},
        },
        "networkConfig": {"subdomainPolicy": "Shared"},
        "leaderWorkerTemplate": {
            "size": nodes,
            # One lost rank stalls the whole MPI world: restart the group together.
            "restartPolicy": "RecreateGroupOnPodRestart",
            "leaderTemplate": {"metadata": {"labels": dict(leader_labels)}, "spec": dict(leader)},
            "workerTemplate": {"metadata": {"labels": dict(worker_labels)}, "spec": dict(worker)},
        },
    }


def _identity_env() -> list[dict[str, Any]]:
    return [
        {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        {"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
    ]
