"""Workload rules on the typed Kubernetes objects of a stack (Helm releases are opaque here): hardened
containers, requests and limits, no host access, images from the project's ECR (by digest where the
stack says so), a NetworkPolicy in every inference namespace that the cluster's network plugin
enforces, and ECR repositories that are immutable and scanned.

Exemptions name the workload and what it runs (policies/rules/exemptions.py: its exact pinned images and,
for a chart's objects, the Helm release that installs them), never its name alone:
- privileged: AWS's neuron-monitor DaemonSet must be privileged to read the Neuron devices (its
  published manifest, aws-neuron-sdk src/k8/k8s-neuron-monitor-daemonset.yml), running the image the
  catalog pins (catalog/charts.py NEURON_MONITOR_IMAGE); nothing else is, and an exempt pod must not mount a
  service-account token (automountServiceAccountToken: false).
- host access: the accelerator device plugins (NVIDIA, Neuron, EFA) register with the kubelet through a
  hostPath socket; they come from Helm releases, which policies cannot see into, so no typed object is
  exempt by default: a team that declares one adds its entry with the pinned images and the release.
  hostPath mounts of ``/``, the kubelet's state and the runtime's socket are refused whatever the entry
  (exemptions.SENSITIVE_HOST_PATHS).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from pulumi_policy import EnforcementLevel, PolicyConfigSchema, ResourceValidationArgs, StackValidationArgs

from inference_platform import catalog
from inference_platform.catalog import charts
from inference_platform.policies.callbacks import ReportViolation, ResourceValidationPolicy, StackValidationPolicy
from inference_platform.policies.config_schema import name_list
from inference_platform.policies.props import as_list, get
from inference_platform.policies.rules.exemptions import entry, exempt, normalised, sensitive_host_path

LEADER_WORKER_SET = "kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet"
POD_SPEC_PATHS: dict[str, tuple[str, ...]] = {
    "kubernetes:apps/v1:Deployment": ("spec.template.spec",),
    "kubernetes:apps/v1:StatefulSet": ("spec.template.spec",),
    "kubernetes:apps/v1:DaemonSet": ("spec.template.spec",),
    "kubernetes:apps/v1:ReplicaSet": ("spec.template.spec",),
    "kubernetes:batch/v1:Job": ("spec.template.spec",),
    "kubernetes:batch/v1:CronJob": ("spec.jobTemplate.spec.template.spec",),
    "kubernetes:core/v1:Pod": ("spec",),
    LEADER_WORKER_SET: (
        "spec.leaderWorkerTemplate.leaderTemplate.spec",
        "spec.leaderWorkerTemplate.workerTemplate.spec",
    ),
}
NETWORK_POLICY = "kubernetes:networking.k8s.io/v1:NetworkPolicy"
EKS_CLUSTER = "aws:eks/cluster:Cluster"
EKS_ADDON = "aws:eks/addon:Addon"
VPC_CNI = "vpc-cni"
NAMESPACE = "kubernetes:core/v1:Namespace"
ECR_REPOSITORY = "aws:ecr/repository:Repository"
CONTAINER_LISTS = ("initContainers", "containers", "ephemeralContainers")
ACCELERATOR_RESOURCES = (catalog.RESOURCE_NVIDIA_GPU, catalog.RESOURCE_NEURON_DEVICE, catalog.RESOURCE_NEURON_CORE)
# The one capability the restricted Pod Security Standard lets a container add back.
ALLOWED_ADDED_CAPABILITIES = frozenset({"NET_BIND_SERVICE"})
PRIVILEGED_EXEMPTIONS = [entry("DaemonSet/kube-system/neuron-monitor/neuron-monitor", charts.NEURON_MONITOR_IMAGE)]
HOST_ACCESS_EXEMPTIONS: list[str] = []
INFERENCE_NAMESPACES = ["inference"]


def workload_id(resource_type: str, props: Any, name: str) -> str:
    kind = resource_type.rsplit(":", 1)[-1]
    return f"{kind}/{get(props, 'metadata.namespace', 'default')}/{get(props, 'metadata.name') or name}"


def pod_specs(resource_type: str, props: Any) -> Iterator[tuple[str, Any]]:
    for path in POD_SPEC_PATHS.get(resource_type, ()):
        spec = get(props, path)
        if spec is not None:
            yield path, spec


def containers(spec: Any) -> Iterator[tuple[str, Any]]:
    for field in CONTAINER_LISTS:
        for container in as_list(get(spec, field)):
            yield f"{field}/{get(container, 'name', '?')}", container


def requests_accelerators(spec: Any) -> bool:
    for _, container in containers(spec):
        amounts = {**dict(get(container, "resources.limits") or {}), **dict(get(container, "resources.requests") or {})}
        if any(r in amounts for r in ACCELERATOR_RESOURCES):
            return True
    return False


def _hardened(args: ResourceValidationArgs, report: ReportViolation) -> None:
    entries = list(args.get_config().get("privilegedExemptions") or [])
    workload = workload_id(args.resource_type, args.props, args.name)
    parent = args.opts.parent if args.opts is not None else None
    for path, spec in pod_specs(args.resource_type, args.props):
        for where, container in containers(spec):
            image = str(get(container, "image", ""))
            if exempt(entries, f"{workload}/{get(container, 'name')}", [image], parent):
                # The exemption covers the devices it needs, never the API: a privileged container
                # holding a service-account token turns a node compromise into a cluster one.
                if get(spec, "automountServiceAccountToken") is not False:
                    report(f"{path}: exempt privileged {where} runs with a service-account token")
                continue
            at = f"{path}.{where}"
            context = get(container, "securityContext") or {}
            if get(context, "privileged") is True:
                report(f"{at}: privileged")
            if get(context, "allowPrivilegeEscalation") is not False:
                report(f"{at}: allowPrivilegeEscalation is not false")
            if "ALL" not in [str(c) for c in as_list(get(context, "capabilities.drop"))]:
                report(f"{at}: capabilities.drop does not include ALL")
            added = sorted({str(c) for c in as_list(get(context, "capabilities.add"))} - ALLOWED_ADDED_CAPABILITIES)
            if added:
                report(f"{at}: adds capabilities {', '.join(added)}")


def _resources(args: ResourceValidationArgs, report: ReportViolation) -> None:
    for path, spec in pod_specs(args.resource_type, args.props):
        for where, container in containers(spec):
            if where.startswith("ephemeralContainers/"):
                continue  # the API forbids resources on debug containers
            missing = [
                f"{kind}.{resource}"
                for kind in ("requests", "limits")
                for resource in ("cpu", "memory")
                if get(container, f"resources.{kind}.{resource}") is None
            ]
            if missing:
                report(f"{path}.{where}: no {', '.join(missing)}")


def _host_access(args: ResourceValidationArgs, report: ReportViolation) -> None:
    workload = workload_id(args.resource_type, args.props, args.name)
    entries = list(args.get_config().get("hostAccessExemptions") or [])
    parent = args.opts.parent if args.opts is not None else None
    for path, spec in pod_specs(args.resource_type, args.props):
        for volume in as_list(get(spec, "volumes")):
            host = get(volume, "hostPath.path")
            if host is not None and sensitive_host_path(str(host)):
                report(f"{path}: volume {get(volume, 'name', '?')} mounts the node's {normalised(str(host))} "
                       "(no exemption covers it)")  # fmt: skip
        images = [str(get(c, "image", "")) for _, c in containers(spec)]
        if exempt(entries, workload, images, parent):
            continue
        for flag in ("hostNetwork", "hostPID", "hostIPC"):
            if get(spec, flag) is True:
                report(f"{path}: {flag}")
        for volume in as_list(get(spec, "volumes")):
            host = get(volume, "hostPath.path")
            if get(volume, "hostPath") is not None and not (host is not None and sensitive_host_path(str(host))):
                report(f"{path}: volume {get(volume, 'name', '?')} is a hostPath")
        for where, container in containers(spec):
            for port in as_list(get(container, "ports")):
                if get(port, "hostPort"):
                    report(f"{path}.{where}: hostPort {int(get(port, 'hostPort'))}")


def _images(args: StackValidationArgs, report: ReportViolation) -> None:
    config = args.get_config()
    namespaces = set(config.get("namespaces") or INFERENCE_NAMESPACES)
    require_digest = bool(config.get("requireDigest", True))
    repositories = [
        str(get(r.props, "repositoryUrl"))
        for r in args.resources
        if r.resource_type == ECR_REPOSITORY and get(r.props, "repositoryUrl")
    ]
    for resource in args.resources:
        if get(resource.props, "metadata.namespace", "default") not in namespaces:
            continue
        for path, spec in pod_specs(resource.resource_type, resource.props):
            for where, container in containers(spec):
                image = str(get(container, "image", ""))
                at = f"{resource.name}: {path}.{where}"
                if not any(image.startswith(f"{repo}@") or image.startswith(f"{repo}:") for repo in repositories):
                    report(f"{at}: image {image!r} is not from this stack's ECR repositories", resource.urn)
                elif require_digest and "@sha256:" not in image:
                    report(f"{at}: image {image!r} is not referenced by digest", resource.urn)


def _network_policies(args: StackValidationArgs, report: ReportViolation) -> None:
    named = set(args.get_config().get("namespaces") or INFERENCE_NAMESPACES)
    existing = {get(r.props, "metadata.name") for r in args.resources if r.resource_type == NAMESPACE}
    inference = {ns for ns in named if ns in existing}
    for resource in args.resources:
        if any(requests_accelerators(spec) for _, spec in pod_specs(resource.resource_type, resource.props)):
            inference.add(get(resource.props, "metadata.namespace", "default"))
    covered = {
        get(r.props, "metadata.namespace", "default")
        for r in args.resources
        if r.resource_type == NETWORK_POLICY and _limits_ingress(r.props)
    }
    for namespace in sorted(inference - covered):
        report(f"inference namespace {namespace!r} has no NetworkPolicy limiting ingress")
    if inference and args.get_config().get("requireVpcCniEnforcement", True):
        _vpc_cni_enforcement(args, report)


def _vpc_cni_enforcement(args: StackValidationArgs, report: ReportViolation) -> None:
    """The policies above are only words unless the network plugin enforces them: on EKS the VPC CNI
    add-on does so once its configuration sets ``enableNetworkPolicy`` (off by default)."""
    if not any(r.resource_type == EKS_CLUSTER for r in args.resources):
        return  # objects for a cluster this stack does not make: its plugin is judged where it is made
    addons = [r for r in args.resources if r.resource_type == EKS_ADDON and get(r.props, "addonName") == VPC_CNI]
    if not addons:
        report("the stack's EKS cluster has no vpc-cni add-on: nothing enforces its NetworkPolicies")
    for addon in addons:
        value = _configuration(get(addon.props, "configurationValues")).get("enableNetworkPolicy")
        if str(value).lower() != "true":
            report(
                f'{addon.name}: vpc-cni configurationValues do not set enableNetworkPolicy "true": '
                "NetworkPolicies are accepted but not enforced",
                addon.urn,
            )


def _configuration(raw: Any) -> dict[str, Any]:
    """An add-on's configuration JSON (the engine passes it as text); empty when absent or not an object."""
    if isinstance(raw, Mapping):
        return dict(raw)
    try:
        found = json.loads(raw) if raw else {}
    except (TypeError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


def _limits_ingress(props: Mapping[str, Any]) -> bool:
    types = [str(t) for t in as_list(get(props, "spec.policyTypes"))]
    # Without policyTypes, every NetworkPolicy is an ingress policy (the API's default).
    return "Ingress" in types or not types


def _ecr(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type != ECR_REPOSITORY:
        return
    mutability = get(args.props, "imageTagMutability", "MUTABLE")
    if mutability != "IMMUTABLE":
        report(f"image tags are {mutability}: a tag could be re-pointed under a running rollout; use IMMUTABLE")
    if get(args.props, "imageScanningConfiguration.scanOnPush", False) is not True:
        report("scan on push is off: pushed images are never scanned for vulnerabilities")


POLICIES = [
    ResourceValidationPolicy(
        name="workloads-hardened-containers",
        description="Containers are not privileged, never escalate privileges and drop all capabilities.",
        validate=_hardened,
        enforcement_level=EnforcementLevel.MANDATORY,
        config_schema=name_list(
            "privilegedExemptions",
            PRIVILEGED_EXEMPTIONS,
            "containers allowed to run privileged: 'Kind/ns/name/container image=<pinned ref> [release=<Helm release>]' "
            "(policies/rules/exemptions.py; a name alone matches nothing)",
        ),
    ),
    ResourceValidationPolicy(
        name="workloads-resources-set",
        description="Every container states CPU and memory requests and limits.",
        validate=_resources,
        enforcement_level=EnforcementLevel.MANDATORY,
    ),
    ResourceValidationPolicy(
        name="workloads-no-host-access",
        description="No hostPath volumes, host network/PID/IPC or host ports, except the accelerator device plugins.",
        validate=_host_access,
        enforcement_level=EnforcementLevel.MANDATORY,
        config_schema=name_list(
            "hostAccessExemptions",
            HOST_ACCESS_EXEMPTIONS,
            "workloads allowed host access: 'Kind/ns/name image=<pinned ref> ... [release=<Helm release>]' "
            "(policies/rules/exemptions.py; never a hostPath of /, the kubelet's state or the runtime socket)",
        ),
    ),
    StackValidationPolicy(
        name="workloads-images-from-project-ecr",
        description="Workloads in the inference namespaces run images from the stack's ECR, by digest where required.",
        validate=_images,
        enforcement_level=EnforcementLevel.MANDATORY,
        config_schema=PolicyConfigSchema(
            properties={
                "namespaces": {"type": "array", "items": {"type": "string"}, "default": INFERENCE_NAMESPACES},
                "requireDigest": {"type": "boolean", "default": True},
            }
        ),
    ),
    StackValidationPolicy(
        name="inference-namespaces-network-policy",
        description="Every inference namespace (named, or running accelerator pods) has an ingress NetworkPolicy, "
        "and the stack's EKS cluster enforces NetworkPolicies (vpc-cni enableNetworkPolicy).",
        validate=_network_policies,
        enforcement_level=EnforcementLevel.MANDATORY,
        config_schema=PolicyConfigSchema(
            properties={
                "namespaces": {
                    "type": "array",
                    "items": {"type": "string"},
                    "default": INFERENCE_NAMESPACES,
                    "description": "namespaces that serve inference",
                },
                "requireVpcCniEnforcement": {
                    "type": "boolean",
                    "default": True,
                    "description": "require the vpc-cni add-on to enforce NetworkPolicies (false only for a "
                    "cluster whose policies another plugin enforces)",
                },
            }
        ),
    ),
    ResourceValidationPolicy(
        name="ecr-immutable-scanned",
        description="ECR repositories have immutable tags and scan every pushed image.",
        validate=_ecr,
        enforcement_level=EnforcementLevel.MANDATORY,
    ),
]
