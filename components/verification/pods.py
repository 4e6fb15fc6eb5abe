"""What the verification Job and the load-test pods share: where they run, how they are hardened, how the
API key arrives, and the egress they may use.

- System nodes only (``node-role: system``); no toleration of accelerator taints, no accelerator resource.
- Hardened like the serving pods (``pod_security``/``container_security``: non-root, read-only root
  filesystem, no capabilities, RuntimeDefault seccomp), requests = limits.
- The API key is a file from the Secrets Store CSI driver (one key, this workload's own class).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from inference_platform.catalog.pool_profile import LABEL_NODE_ROLE, ROLE_SYSTEM
from inference_platform.components.secrets.delivery import CSI_DRIVER_NAME
from inference_platform.components.serving.pod import container_security, pod_security, quantity_cpu, quantity_gib

SECRETS_DIR = "/mnt/secrets/verification"
API_KEY_FILE = "api-key"
WORK_DIR = "/work"
DNS_PORT = 53
HTTPS_PORT = 443


@dataclass(frozen=True, kw_only=True)
class PodShape:
    """Resources and user of the verification and load-test pods (requests = limits), and their working volume."""

    cpu: float
    """CPU (requests = limits)."""
    memory_gib: float
    """Memory in GiB (requests = limits)."""
    run_as_user: int = 1000
    """Default 1000. UID and GID (the image's unprivileged user)."""
    work_gib: float = 1
    """Default 1. The writable scratch (reports, records, HOME)."""


def system_affinity() -> dict[str, Any]:
    """Required node affinity to the system node group: accelerator nodes serve, they never test."""
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": LABEL_NODE_ROLE, "operator": "In", "values": [ROLE_SYSTEM]}]}
                ]
            }
        }
    }


def container(name: str, image: Any, command: list[Any], shape: PodShape, *, key_class: str | None,
              env: list[dict[str, Any]] | None = None, ports: list[dict[str, Any]] | None = None) -> dict[str, Any]:  # fmt: skip
    amounts = {
        "cpu": quantity_cpu(shape.cpu),
        "memory": quantity_gib(shape.memory_gib),
        "ephemeral-storage": quantity_gib(shape.work_gib + 1),
    }
    mounts: list[dict[str, Any]] = [{"name": "work", "mountPath": WORK_DIR}]
    if key_class is not None:
        mounts.append({"name": "api-key", "mountPath": SECRETS_DIR, "readOnly": True})
    out: dict[str, Any] = {
        "name": name,
        "image": image,
        "imagePullPolicy": "IfNotPresent",
        "command": command,
        # HOME, caches and matplotlib's config under the one writable volume (the root filesystem is read-only).
        "env": [
            {"name": "HOME", "value": f"{WORK_DIR}/home"},
            {"name": "MPLCONFIGDIR", "value": f"{WORK_DIR}/matplotlib"},
            {"name": "TMPDIR", "value": WORK_DIR},
            *(env or []),
        ],
        "resources": {"requests": dict(amounts), "limits": dict(amounts)},
        "securityContext": container_security(shape.run_as_user),
        "volumeMounts": mounts,
    }
    if ports:
        out["ports"] = ports
    return out


def pod_spec(service_account: str, containers: list[dict[str, Any]], shape: PodShape, *, key_class: str | None,
             automount_token: bool = False) -> dict[str, Any]:  # fmt: skip
    volumes: list[dict[str, Any]] = [{"name": "work", "emptyDir": {"sizeLimit": quantity_gib(shape.work_gib)}}]
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
    return {
        "serviceAccountName": service_account,
        "automountServiceAccountToken": automount_token,
        "enableServiceLinks": False,
        "restartPolicy": "Never",
        "securityContext": pod_security(shape.run_as_user),
        "affinity": system_affinity(),
        "containers": containers,
        "volumes": volumes,
    }


def dns_egress() -> dict[str, Any]:
    return {
        "to": [
            {
                "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}},
                "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}},
            }
        ],
        "ports": [{"protocol": "UDP", "port": DNS_PORT}, {"protocol": "TCP", "port": DNS_PORT}],
    }


def public_https_egress(private_cidrs: list[str]) -> dict[str, Any]:
    """TCP 443 to public addresses only: the internet-facing ALB's addresses change, so the rule is every
    address outside the VPC (and the link-local metadata service), not a list of ALB IPs."""
    return {
        "to": [{"ipBlock": {"cidr": "0.0.0.0/0", "except": [*private_cidrs, "169.254.0.0/16"]}}],
        "ports": [{"protocol": "TCP", "port": HTTPS_PORT}],
    }
