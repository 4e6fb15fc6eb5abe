"""A Kubernetes Event per canary decision, on the verification Job that made it.

``kubectl get events -n <namespace> --field-selector involvedObject.name=<job>`` (or ``kubectl describe job``) then
shows what the gate decided and why, beside the Job's own events, for as long as the cluster keeps events (an hour
by default): promotion and rollback visible where operators look first. The reasons are CamelCase, as Kubernetes'
own (``CanaryPromoted``, ``CanaryHeld``, ``CanaryRolledBack``, ``CanaryCompleted``); a rollback is a ``Warning``.

A core/v1 Event (``kubernetes`` client ``CoreV1Api.create_namespaced_event``): the verification Role grants
``create`` on ``events`` in its namespace only (components/verification/verification_job.py).
"""

from __future__ import annotations

import datetime
from typing import Any

from inference_platform.inferctl.verify.canary_gate import Decision

REASONS = {
    "promote": "CanaryPromoted",
    "hold": "CanaryHeld",
    "rollback": "CanaryRolledBack",
    "complete": "CanaryCompleted",
}
COMPONENT = "inference-platform-verification"
MAX_MESSAGE = 1024
"""Kubernetes truncates longer event notes; we cut first, visibly."""


def event_manifest(
    decision: Decision, *, model: str, version: str, namespace: str, job: str, instance: str, now: datetime.datetime
) -> dict[str, Any]:
    """The Event: on the Job, its reason the action, its message the weight and why."""
    stamp = now.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    message = f"{model} canary {version}: {decision.action} to {decision.weight} %: {decision.reason}"
    if len(message) > MAX_MESSAGE:
        message = message[: MAX_MESSAGE - 3] + "..."
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"generateName": f"{job}-canary-", "namespace": namespace},
        "involvedObject": {"apiVersion": "batch/v1", "kind": "Job", "name": job, "namespace": namespace},
        "reason": REASONS[decision.action],
        "message": message,
        "type": "Warning" if decision.action == "rollback" else "Normal",
        "source": {"component": COMPONENT},
        "reportingComponent": COMPONENT,
        "reportingInstance": instance[:128],
        "firstTimestamp": stamp,
        "lastTimestamp": stamp,
        "count": 1,
    }


def post(api: Any, manifest: dict[str, Any]) -> None:
    """Create it through a ``CoreV1Api``."""
    api.create_namespaced_event(manifest["metadata"]["namespace"], manifest)
