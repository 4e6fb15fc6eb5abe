"""The rollout checks in the cluster: load generators never take accelerator nodes, and the verification Job
is one ``pulumi up`` waits for, that fails once and reads its key from a file.

- ``load-test-off-accelerators``: every pod of the load test (``app.kubernetes.io/name: loadtest``) is
  pinned to the system nodes by required node affinity, tolerates no accelerator taint and requests no
  accelerator: a generator on a GPU node would take capacity from serving and measure itself.
- ``verification-job-awaited``: the verification Job (``app.kubernetes.io/name: verification``) has no
  ``pulumi.com/skipAwait`` (otherwise a failed verdict would not fail the deploy), ``backoffLimit: 0`` (a
  failed verdict is an answer, not a flake to retry) and no API key in its environment.
"""

from __future__ import annotations

from typing import Any

from pulumi_policy import EnforcementLevel, ResourceValidationArgs

from inference_platform.policies.callbacks import ReportViolation, ResourceValidationPolicy
from inference_platform.policies.props import get
from inference_platform.policies.rules.workloads import POD_SPEC_PATHS

JOB = "kubernetes:batch/v1:Job"
POD_OWNERS = (
    JOB,
    "kubernetes:apps/v1:Deployment",
    "kubernetes:apps/v1:StatefulSet",
    "kubernetes:batch/v1:CronJob",
    "kubernetes:core/v1:Pod",
)
NAME_LABEL = "app.kubernetes.io/name"
LOAD_TEST = "loadtest"
VERIFICATION = "verification"
NODE_ROLE = "node-role"
SYSTEM = "system"
ACCELERATOR_RESOURCES = (
    "nvidia.com/gpu",
    "aws.amazon.com/neuron",
    "aws.amazon.com/neuroncore",
    "vpc.amazonaws.com/efa",
)
ACCELERATOR_TAINTS = ("nvidia.com/gpu", "aws.amazon.com/neuron")
SECRET_WORDS = ("KEY", "TOKEN", "SECRET", "PASSWORD")


def _name(args: ResourceValidationArgs) -> str | None:
    """The workload's app name (label keys contain dots: index the labels, not a dotted path)."""
    if args.resource_type not in POD_OWNERS:
        return None
    return (get(args.props, "metadata.labels", {}) or {}).get(NAME_LABEL)


def _pod(args: ResourceValidationArgs) -> dict[str, Any]:
    """The pod spec of any pod owner (a CronJob's job template, a bare Pod's own spec)."""
    path = POD_SPEC_PATHS.get(args.resource_type, ("spec.template.spec",))[0]
    return get(args.props, path, {}) or {}


def _off_accelerators(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if _name(args) != LOAD_TEST:
        return
    report_off_accelerators(_pod(args), "load-test", report)


def report_off_accelerators(pod: dict[str, Any], what: str, report: ReportViolation) -> None:
    """``what``'s pods must be pinned to the system nodes, tolerate no accelerator taint and ask for no
    accelerator (policy load-test-off-accelerators; batch-workers-off-accelerators the same)."""
    terms = get(pod, "affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms", [])
    pinned = bool(terms) and all(
        any(
            e.get("key") == NODE_ROLE and e.get("operator") == "In" and list(e.get("values") or []) == [SYSTEM]
            for e in term.get("matchExpressions") or []
        )
        for term in terms
    )
    selector = (pod.get("nodeSelector") or {}).get(NODE_ROLE)
    if not pinned and selector != SYSTEM:
        report(f"{what} pods are not pinned to the system nodes (required node affinity {NODE_ROLE} In [system])")
    for toleration in pod.get("tolerations") or []:
        key = toleration.get("key")
        if key in ACCELERATOR_TAINTS or (toleration.get("operator") == "Exists" and not key):
            report(f"{what} pods tolerate the accelerator taint {key or '(every taint)'}")
    for container in [*(pod.get("containers") or []), *(pod.get("initContainers") or [])]:
        resources = container.get("resources") or {}
        for kind in ("requests", "limits"):
            asked = [r for r in ACCELERATOR_RESOURCES if r in (resources.get(kind) or {})]
            if asked:
                report(f"{what} container {container.get('name')} {kind} {', '.join(asked)}")


def _awaited(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type != JOB or _name(args) != VERIFICATION:
        return
    annotations = get(args.props, "metadata.annotations", {}) or {}
    if str(annotations.get("pulumi.com/skipAwait", "false")).lower() == "true":
        report("pulumi.com/skipAwait is set: `pulumi up` would not wait for the verdict, a failed check passes")
    backoff = get(args.props, "spec.backoffLimit")
    if backoff is None or backoff != 0:
        report(f"spec.backoffLimit is {backoff}: 0 (a failed verdict is not retried until it passes)")
    for container in _pod(args).get("containers") or []:
        for env in container.get("env") or []:
            name = str(env.get("name", "")).upper()
            if "value" in env and any(word in name for word in SECRET_WORDS):
                report(f"container {container.get('name')} has {env.get('name')} in its environment: mount the key")


POLICIES = [
    ResourceValidationPolicy(
        name="load-test-off-accelerators",
        description="Load-test pods run on the system nodes only: no accelerator taint tolerated or resource asked.",
        validate=_off_accelerators,
        enforcement_level=EnforcementLevel.MANDATORY,
    ),
    ResourceValidationPolicy(
        name="verification-job-awaited",
        description="The verification Job is awaited by pulumi up, never retried, and reads its API key from a file.",
        validate=_awaited,
        enforcement_level=EnforcementLevel.MANDATORY,
    ),
]
