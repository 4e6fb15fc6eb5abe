"""Pod Security Admission, judged before the cluster judges it.

The platform's namespaces enforce the ``restricted`` Pod Security Standard. Admission rejects a pod that
breaks it only when the pod is created, i.e. after ``pulumi up`` has already reported the Deployment as
created and while it waits for replicas that never come. These rules read the level each namespace
enforces and check every typed pod template in it against that level, so the plan fails instead.

The checks follow the Pod Security Standards page (kubernetes.io/docs/concepts/security/pod-security-standards,
"Restricted" and "Baseline" tables); Helm releases are opaque here, as for every workload rule.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from pulumi_policy import EnforcementLevel, PolicyConfigSchema, ResourceValidationArgs, StackValidationArgs

from inference_platform.catalog.efa import HUGEPAGES_2MI
from inference_platform.policies.callbacks import ReportViolation, ResourceValidationPolicy, StackValidationPolicy
from inference_platform.policies.props import as_list, get
from inference_platform.policies.rules.workloads import NAMESPACE, containers, pod_specs

ENFORCE_LABEL = "pod-security.kubernetes.io/enforce"
PART_OF_LABEL = "app.kubernetes.io/part-of"
PLATFORM = "inference-platform"
LEVELS = ("privileged", "baseline", "restricted")
# The restricted profile's volume types (everything else, hostPath included, is refused).
RESTRICTED_VOLUMES = frozenset(
    {"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim", "projected", "secret"}
)
SECCOMP_TYPES = frozenset({"RuntimeDefault", "Localhost"})
ALLOWED_ADDED_CAPABILITIES = frozenset({"NET_BIND_SERVICE"})
# Baseline: the capabilities a container may add (the container runtime's defaults).
BASELINE_CAPABILITIES = frozenset(
    {
        "AUDIT_WRITE",
        "CHOWN",
        "DAC_OVERRIDE",
        "FOWNER",
        "FSETID",
        "KILL",
        "MKNOD",
        "NET_BIND_SERVICE",
        "SETFCAP",
        "SETGID",
        "SETPCAP",
        "SETUID",
        "SYS_CHROOT",
    }
)


EFA_RESOURCE = "vpc.amazonaws.com/efa"
INERT_FOR_NON_ROOT = frozenset({"IPC_LOCK", "SYS_RESOURCE"})
"""What EFA guides reach for to lift the locked-memory limit; a non-root container never holds them."""


def _label(props: Mapping[str, Any], key: str) -> Any:
    labels = get(props, "metadata.labels") or {}
    return labels.get(key) if isinstance(labels, Mapping) else None


def _platform_namespaces_enforce_restricted(args: StackValidationArgs, report: ReportViolation) -> None:
    exempt = set(args.get_config().get("exemptNamespaces") or [])
    for resource in args.resources:
        if resource.resource_type != NAMESPACE or _label(resource.props, PART_OF_LABEL) != PLATFORM:
            continue
        name = str(get(resource.props, "metadata.name") or resource.name)
        level = _label(resource.props, ENFORCE_LABEL) or "privileged"
        if name not in exempt and level != "restricted":
            report(f"namespace {name!r} enforces Pod Security {level!r}; the platform's namespaces enforce 'restricted'",
                   resource.urn)  # fmt: skip


def _pods_meet_their_namespace_level(args: StackValidationArgs, report: ReportViolation) -> None:
    levels = {}
    for resource in args.resources:
        if resource.resource_type == NAMESPACE:
            name = str(get(resource.props, "metadata.name") or resource.name)
            levels[name] = str(_label(resource.props, ENFORCE_LABEL) or "privileged")
    for resource in args.resources:
        namespace = str(get(resource.props, "metadata.namespace", "default"))
        level = levels.get(namespace, "privileged")
        if level == "privileged":
            continue
        for path, spec in pod_specs(resource.resource_type, resource.props):
            for problem in _breaches(spec, restricted=level == "restricted"):
                report(f"{resource.name}: {path}: {problem} (namespace {namespace!r} enforces {level!r})", resource.urn)


def _breaches(spec: Any, *, restricted: bool) -> Iterator[str]:
    yield from _baseline(spec)
    if restricted:
        yield from _restricted(spec)


def _baseline(spec: Any) -> Iterator[str]:
    for flag in ("hostNetwork", "hostPID", "hostIPC"):
        if get(spec, flag) is True:
            yield f"{flag} is true"
    for volume in as_list(get(spec, "volumes")):
        if get(volume, "hostPath") is not None:
            yield f"volume {get(volume, 'name', '?')} is a hostPath"
    for where, container in containers(spec):
        context = get(container, "securityContext") or {}
        if get(context, "privileged") is True:
            yield f"{where}: privileged"
        added = {str(c) for c in as_list(get(context, "capabilities.add"))} - BASELINE_CAPABILITIES
        if added:
            yield f"{where}: adds capabilities {', '.join(sorted(added))}"
        if any(get(port, "hostPort") for port in as_list(get(container, "ports"))):
            yield f"{where}: uses a hostPort"
        if get(context, "procMount") not in (None, "Default"):
            yield f"{where}: procMount {get(context, 'procMount')}"


def _restricted(spec: Any) -> Iterator[str]:
    for volume in as_list(get(spec, "volumes")):
        kinds = [k for k in (volume if isinstance(volume, Mapping) else {}) if k != "name"]
        wrong = [k for k in kinds if k not in RESTRICTED_VOLUMES]
        if wrong:
            yield f"volume {get(volume, 'name', '?')} has type {', '.join(wrong)}"
    pod_context = get(spec, "securityContext") or {}
    pod_non_root = get(pod_context, "runAsNonRoot")
    pod_seccomp = get(pod_context, "seccompProfile.type")
    if get(pod_context, "runAsUser") == 0:
        yield "securityContext.runAsUser is 0"
    if pod_seccomp is not None and pod_seccomp not in SECCOMP_TYPES:
        yield f"securityContext.seccompProfile.type is {pod_seccomp}"
    for where, container in containers(spec):
        context = get(container, "securityContext") or {}
        non_root = get(context, "runAsNonRoot")
        if non_root is False or (non_root is None and pod_non_root is not True):
            yield f"{where}: runAsNonRoot is not true"
        if get(context, "runAsUser") == 0:
            yield f"{where}: runAsUser is 0"
        seccomp = get(context, "seccompProfile.type") or pod_seccomp
        if seccomp not in SECCOMP_TYPES:
            yield f"{where}: no RuntimeDefault or Localhost seccompProfile"
        if get(context, "allowPrivilegeEscalation") is not False:
            yield f"{where}: allowPrivilegeEscalation is not false"
        if "ALL" not in [str(c) for c in as_list(get(context, "capabilities.drop"))]:
            yield f"{where}: capabilities.drop does not include ALL"
        added = {str(c) for c in as_list(get(context, "capabilities.add"))} - ALLOWED_ADDED_CAPABILITIES
        if added:
            yield f"{where}: adds capabilities {', '.join(sorted(added))}"


def _efa_pods_get_huge_pages_not_capabilities(args: ResourceValidationArgs, report: ReportViolation) -> None:
    for path, spec in pod_specs(args.resource_type, args.props):
        for problem in _efa_problems(spec):
            report(f"{path}: {problem}")


def _efa_problems(spec: Any) -> Iterator[str]:
    pod_user = get(spec, "securityContext.runAsUser")
    pod_non_root = get(spec, "securityContext.runAsNonRoot")
    for where, container in containers(spec):
        context = get(container, "securityContext") or {}
        user = get(context, "runAsUser", pod_user)
        non_root = get(context, "runAsNonRoot", pod_non_root) is True or (user is not None and float(user) != 0)
        added = {str(c) for c in as_list(get(context, "capabilities.add"))} & INERT_FOR_NON_ROOT
        if added and non_root:
            yield (
                f"{where}: adds {', '.join(sorted(added))} to a non-root container, which never holds it (Kubernetes "
                "sets no ambient capabilities; the exec as a non-root user clears them): raise the locked-memory "
                "limit on the node's container runtime instead (catalog/efa.py)"
            )
        requests = dict(get(container, "resources.requests") or {})
        limits = dict(get(container, "resources.limits") or {})
        if float(limits.get(EFA_RESOURCE, requests.get(EFA_RESOURCE, 0)) or 0) <= 0:
            continue
        pages = requests.get(HUGEPAGES_2MI, limits.get(HUGEPAGES_2MI))
        if not pages or str(pages) in ("0", "0Mi", "0Gi"):
            yield (
                f"{where}: requests {EFA_RESOURCE} without {HUGEPAGES_2MI}: libfabric's EFA provider backs its "
                "registered buffers with huge pages, and a pod may use only what it requests (AWS's EKS EFA "
                "guidance requests 5120Mi)"
            )
        elif str(requests.get(HUGEPAGES_2MI)) != str(limits.get(HUGEPAGES_2MI)):
            yield f"{where}: {HUGEPAGES_2MI} requests and limits differ; Kubernetes requires them equal"


POLICIES = [
    StackValidationPolicy(
        name="pod-security-platform-namespaces-restricted",
        description="Namespaces the platform creates enforce the restricted Pod Security Standard.",
        validate=_platform_namespaces_enforce_restricted,
        enforcement_level=EnforcementLevel.MANDATORY,
        config_schema=PolicyConfigSchema(
            properties={
                "exemptNamespaces": {
                    "type": "array",
                    "items": {"type": "string"},
                    "default": [],
                    "description": "platform namespaces allowed a lower level (say why in the stack's config)",
                }
            }
        ),
    ),
    ResourceValidationPolicy(
        name="efa-pods-huge-pages-no-inert-capabilities",
        description="Pods with EFA interfaces request hugepages-2Mi (= limits); no non-root container adds "
        "IPC_LOCK/SYS_RESOURCE, which it could never hold (the locked-memory limit is the node's).",
        validate=_efa_pods_get_huge_pages_not_capabilities,
        enforcement_level=EnforcementLevel.MANDATORY,
    ),
    StackValidationPolicy(
        name="pod-security-admission",
        description="Every pod template meets the Pod Security level its namespace enforces, as admission will.",
        validate=_pods_meet_their_namespace_level,
        enforcement_level=EnforcementLevel.MANDATORY,
    ),
]
