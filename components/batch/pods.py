"""The pods of the asynchronous lane, as plain typed data: the Batch API service and the queue workers.

Both run the lane's image (batch/Dockerfile, ``python -m inference_platform.batch api|worker``) on the system
nodes only: required node affinity to ``node-role: system``, no accelerator toleration or resource (policy
``batch-workers-off-accelerators``). Hardened like every platform pod (non-root, read-only root filesystem,
no capabilities, RuntimeDefault seccomp), requests = limits. The environment is the running code's contract
(h7, ``inference_platform.batch``): every variable the code reads at start, each validated there.

The worker sends the one API key it is given (a Secrets Store CSI file, verification style) to the serving
endpoint inside the cluster, and backs off while the servers' waiting requests or KV-cache use per replica
is above the stack's thresholds (``BATCH_SHED_RULES``, PromQL against the stack's Prometheus).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from inference_platform.components.batch.documents import FILES_PREFIX, RESULTS_PREFIX
from inference_platform.components.secrets.delivery import CSI_DRIVER_NAME
from inference_platform.components.serving.pod import container_security, pod_security, quantity_cpu, quantity_gib
from inference_platform.components.verification.pods import PodShape, system_affinity

API_PORT = 8080
METRICS_PORT = 9090
"""Both roles: ``/metrics``, ``/healthz``, ``/readyz`` (the API serves the Batch API on API_PORT besides)."""
QUOTAS_DIR = "/etc/batch"
QUOTAS_FILE = "quotas.json"
HEALTH_PATH = "/healthz"
READY_PATH = "/readyz"
METRICS_PATH = "/metrics"
SECRETS_DIR = "/mnt/secrets/batch"
API_KEY_FILE = "api-key"
API = "batch-api"
WORKER = "batch-worker"
PART_OF = {"app.kubernetes.io/part-of": "inference-platform"}
API_LABELS = {**PART_OF, "app.kubernetes.io/name": API}
WORKER_LABELS = {**PART_OF, "app.kubernetes.io/name": WORKER}
STOP_MARGIN_SECONDS = 30
"""SIGTERM: the worker stops receiving and finishes what is in flight (at most the request timeout), then exits."""


Shape = PodShape
"""requests = limits of one role's container (the verification pods' shape; its ``work_gib`` is unused: the lane's
pods write nothing to disk)."""


@dataclass(frozen=True, kw_only=True)
class ShedRule:
    """The worker stops taking work while ``expr`` (PromQL, max over its result) is above ``above``."""

    expr: str
    above: float


@dataclass(frozen=True, kw_only=True)
class LaneEnv:
    """What both roles read (h7's contract §2)."""

    region: str
    bucket: Any
    queue_url: Any
    dead_letter_url: Any
    kms_key_arn: Any
    completion_window_hours: int
    request_timeout_seconds: int
    visibility_timeout_seconds: int
    max_receive_count: int
    max_file_bytes: int
    max_requests: int
    max_output_tokens: int
    lines_per_message: int
    client_id_header: str
    """The header the edge sets to the authenticated client's id (edge.auth.clientIdHeader); quotas key by it."""
    quota_requests: int
    quota_tokens: int
    endpoints: Sequence[str] = ("/v1/chat/completions", "/v1/completions")
    budgets: str | None = None
    """``BATCH_BUDGETS`` (JSON, ``components.edge.token_limits.batch_budgets``): the edge's monthly budgets both
    roles check and debit at the rate-limit service; None: no client has a budget, or there is no edge."""


@dataclass(frozen=True, kw_only=True)
class WorkerEnv:
    """What the workers read besides :class:`LaneEnv` (h7's contract §2, worker role)."""

    concurrency: int
    prometheus_url: str | None
    """The stack's Prometheus (back-off signals); None: no shedding (the worker warns at start)."""
    shed_rules: Sequence[ShedRule] = ()


def common_env(env: LaneEnv) -> list[dict[str, Any]]:
    return [
        {"name": "AWS_REGION", "value": env.region},
        {"name": "BATCH_BUCKET", "value": env.bucket},
        {"name": "BATCH_FILES_PREFIX", "value": FILES_PREFIX},
        {"name": "BATCH_RESULTS_PREFIX", "value": RESULTS_PREFIX},
        {"name": "BATCH_QUEUE_URL", "value": env.queue_url},
        {"name": "BATCH_DLQ_URL", "value": env.dead_letter_url},
        {"name": "BATCH_COMPLETION_WINDOW_HOURS", "value": str(env.completion_window_hours)},
        {"name": "BATCH_REQUEST_TIMEOUT_SECONDS", "value": str(env.request_timeout_seconds)},
        # Cross-checked by the code against the queue itself at start: drift between the two refuses to run.
        {"name": "BATCH_VISIBILITY_TIMEOUT_SECONDS", "value": str(env.visibility_timeout_seconds)},
        {"name": "BATCH_MAX_RECEIVE_COUNT", "value": str(env.max_receive_count)},
        {"name": "BATCH_METRICS_PORT", "value": str(METRICS_PORT)},
        # The bucket policy refuses uploads under another key; naming the stack's key on every put says so.
        {"name": "BATCH_SSE_KMS_KEY_ID", "value": env.kms_key_arn},
        *([{"name": "BATCH_BUDGETS", "value": env.budgets}] if env.budgets is not None else []),
    ]


def api_env(env: LaneEnv) -> list[dict[str, Any]]:
    return [
        *common_env(env),
        {"name": "BATCH_API_PORT", "value": str(API_PORT)},
        {"name": "BATCH_CLIENT_ID_HEADER", "value": env.client_id_header},
        {"name": "BATCH_ENDPOINTS", "value": ",".join(env.endpoints)},
        {"name": "BATCH_MAX_FILE_BYTES", "value": str(env.max_file_bytes)},
        {"name": "BATCH_MAX_REQUESTS_PER_BATCH", "value": str(env.max_requests)},
        {"name": "BATCH_LINES_PER_MESSAGE", "value": str(env.lines_per_message)},
        {"name": "BATCH_MAX_OUTPUT_TOKENS", "value": str(env.max_output_tokens)},
        {"name": "BATCH_QUOTA_QUEUED_REQUESTS", "value": str(env.quota_requests)},
        {"name": "BATCH_QUOTA_QUEUED_TOKENS", "value": str(env.quota_tokens)},
        {"name": "BATCH_QUOTAS_FILE", "value": f"{QUOTAS_DIR}/{QUOTAS_FILE}"},
    ]


def quotas_document(overrides: Mapping[str, Mapping[str, int]]) -> str:
    """``BATCH_QUOTAS_FILE``: ``{client: {queuedTokens, queuedRequests}}`` (a ConfigMap the API mounts)."""
    return json.dumps({c: dict(q) for c, q in sorted(overrides.items())}, sort_keys=True, indent=2)


def worker_env(env: LaneEnv, worker: WorkerEnv, *, serving_url: str, key_file: str | None) -> list[dict[str, Any]]:
    out = [
        *common_env(env),
        {"name": "BATCH_SERVING_URL", "value": serving_url},
        {"name": "BATCH_CONCURRENCY", "value": str(worker.concurrency)},
    ]
    if key_file is not None:
        out.append({"name": "BATCH_API_KEY_FILE", "value": key_file})
    if worker.prometheus_url is not None:
        rules = [{"expr": r.expr, "above": r.above} for r in worker.shed_rules]
        out += [
            {"name": "BATCH_PROMETHEUS_URL", "value": worker.prometheus_url},
            {"name": "BATCH_SHED_RULES", "value": json.dumps(rules)},
        ]
    return out


def container(role: str, image: Any, env: list[dict[str, Any]], shape: Shape, *, key_mounted: bool = False,
              quotas_mounted: bool = False) -> dict[str, Any]:  # fmt: skip
    """The role's container: health and metrics on METRICS_PORT (``metrics``), the API on API_PORT (``http``)."""
    amounts = {"cpu": quantity_cpu(shape.cpu), "memory": quantity_gib(shape.memory_gib)}
    ports = [{"name": "metrics", "containerPort": METRICS_PORT, "protocol": "TCP"}]
    if role == API:
        ports.insert(0, {"name": "http", "containerPort": API_PORT, "protocol": "TCP"})
    mounts = []
    if key_mounted:
        mounts.append({"name": "api-key", "mountPath": SECRETS_DIR, "readOnly": True})
    if quotas_mounted:
        mounts.append({"name": "quotas", "mountPath": QUOTAS_DIR, "readOnly": True})
    out: dict[str, Any] = {
        "name": role,
        "image": image,
        "imagePullPolicy": "IfNotPresent",
        # The image's entrypoint is ``python -m inference_platform.batch``; the argument picks the role.
        "args": ["api" if role == API else "worker"],
        "env": env,
        "ports": ports,
        "resources": {"requests": dict(amounts), "limits": dict(amounts)},
        "securityContext": container_security(shape.run_as_user),
        "livenessProbe": {
            "httpGet": {"path": HEALTH_PATH, "port": "metrics"},
            "periodSeconds": 10,
            "failureThreshold": 6,
        },
        "readinessProbe": {"httpGet": {"path": READY_PATH, "port": "metrics"}, "periodSeconds": 10},
    }
    if mounts:
        out["volumeMounts"] = mounts
    return out


def deployment_spec(labels: Mapping[str, str], replicas: int, pod: dict[str, Any]) -> dict[str, Any]:
    """A Deployment's ``spec`` for one role: its labels select its pods."""
    return {
        "replicas": replicas,
        "selector": {"matchLabels": dict(labels)},
        "template": {"metadata": {"labels": dict(labels)}, "spec": pod},
    }


def pod_spec(service_account: str, main: dict[str, Any], shape: Shape, *, grace_seconds: int,
             key_class: str | None = None, quotas_config_map: str | None = None) -> dict[str, Any]:  # fmt: skip
    spec: dict[str, Any] = {
        "serviceAccountName": service_account,
        "automountServiceAccountToken": False,
        "enableServiceLinks": False,
        "terminationGracePeriodSeconds": grace_seconds,
        "securityContext": pod_security(shape.run_as_user),
        "affinity": system_affinity(),
        "containers": [main],
    }
    volumes: list[dict[str, Any]] = []
    if key_class is not None:
        volumes.append(
            {
                "name": "api-key",
                "csi": {
                    "driver": CSI_DRIVER_NAME,
                    "readOnly": True,
                    "volumeAttributes": {"secretProviderClass": key_class},
                },
            }
        )
    if quotas_config_map is not None:
        volumes.append({"name": "quotas", "configMap": {"name": quotas_config_map}})
    if volumes:
        spec["volumes"] = volumes
    return spec
