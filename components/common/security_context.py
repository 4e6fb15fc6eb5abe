"""The hardened Kubernetes security contexts every platform pod uses: one definition of each.

A container runs without privilege escalation, on a read-only root filesystem, with every Linux capability
dropped; a pod runs as a non-root user under the runtime's default seccomp profile. These are what the
``restricted`` Pod Security Standard asks (kubernetes.io/docs/concepts/security/pod-security-standards) and
what the policy pack checks (policies/rules/pod_security.py, policies/rules/workloads.py). Key order is kept
as the components wrote it, so the rendered manifests do not change.
"""

from __future__ import annotations

from typing import Any

NOBODY_UID = 65534
"""``nobody``: the user the controllers' distroless images (Cluster Autoscaler, the AWS Load Balancer
Controller, ExternalDNS, pause) run as."""


def container_security_context(*, run_as_user: int | None = None) -> dict[str, Any]:
    """A container's ``securityContext``: no privilege escalation, read-only root, no capabilities.
    ``run_as_user`` also pins the container's user (non-root, not privileged), as the serving images want."""
    if run_as_user is None:
        return {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True, "capabilities": {"drop": ["ALL"]}}
    return {
        "allowPrivilegeEscalation": False,
        "privileged": False,
        "readOnlyRootFilesystem": True,
        "runAsNonRoot": True,
        "runAsUser": run_as_user,
        "capabilities": {"drop": ["ALL"]},
    }


def pod_security_context(
    run_as_user: int, *, group: bool = False, fs_group: bool = False, **extra: Any
) -> dict[str, Any]:
    """A pod's ``securityContext``: non-root as ``run_as_user``, the runtime's default seccomp profile;
    ``group`` runs as that group too, ``fs_group`` gives mounted volumes to it, ``extra`` adds fields
    (``fsGroupChangePolicy`` ...)."""
    context: dict[str, Any] = {"runAsNonRoot": True, "runAsUser": run_as_user}
    if group:
        context["runAsGroup"] = run_as_user
    if fs_group:
        context["fsGroup"] = run_as_user
    return {**context, **extra, "seccompProfile": {"type": "RuntimeDefault"}}
