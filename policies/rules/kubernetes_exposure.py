"""Kubernetes exposure rules on the typed objects of a stack (Helm release values are opaque to
policies; these rules judge Deployments, DaemonSets, Services, PersistentVolumes, RBAC bindings and the
provider's ``*Patch`` resources the program declares):

- ``workloads-non-root``: no container runs as UID 0, nor without ``runAsNonRoot: true`` unless it names
  a non-zero ``runAsUser`` (else it runs as whatever user the image says, often root).
- ``workloads-image-provenance`` (a stack rule: it needs the stack's ECR repositories): images carry a
  tag other than ``latest`` (or a digest) and come from the stack's own ECR registry (the
  ``<account>.dkr.ecr.<region>.amazonaws.com`` host of each ``aws:ecr`` Repository's ``repositoryUrl``:
  this account and region, no other AWS account's) or from the named public images in
  ``allowedRegistries`` (policies/config/<stack>.json: exact ``registry/path`` repositories such as
  ``registry.k8s.io/pause``, matched by whole path segments; a host may be a shell-style pattern, but a
  ``*`` never spans a ``/``; images without a registry are ``docker.io/library/...``). Values unknown
  during a preview are skipped one image at a time, as a resource rule would.
- ``workloads-not-in-default``: nothing runs in the ``default`` namespace (no quota, no NetworkPolicy,
  every service account of the cluster can reach it).
- ``services-load-balancer-source-ranges``: an internet-facing ``LoadBalancer`` Service names its client
  ranges (``loadBalancerSourceRanges``), and together they reach no more public addresses than a /8
  (``inference_platform.planners.cidr.internet_wide``).
- ``persistent-volumes-no-host-path``: a PersistentVolume never mounts a node's filesystem.
- ``workload-patches-not-privileged``: a ``*Patch`` resource (e.g. ``DaemonSetPatch`` on kube-system)
  never makes a workload privileged, root, or host-attached; patches are partial, so only what they set
  is judged.
- ``rbac-no-cluster-admin-for-service-accounts``: no (Cluster)RoleBinding gives ``cluster-admin`` to a
  service account (or to every service account through ``system:serviceaccounts`` groups).

Exemptions name the workload and the exact pinned image it runs (policies/rules/exemptions.py), never the name
alone: AWS's neuron-monitor must run as root and privileged to read the Neuron devices (its published
manifest), as the image the catalog pins.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterator
from typing import Any

from pulumi_policy import EnforcementLevel, PolicyResource, ResourceValidationArgs, StackValidationArgs
from pulumi_policy.proxy import UnknownValueError

from inference_platform.catalog import charts
from inference_platform.planners.cidr import internet_wide
from inference_platform.policies.callbacks import ReportViolation, ResourceValidationPolicy, StackValidationPolicy
from inference_platform.policies.config_schema import name_list
from inference_platform.policies.props import as_list, get
from inference_platform.policies.rules.exemptions import entry, exempt
from inference_platform.policies.rules.workloads import (
    ALLOWED_ADDED_CAPABILITIES,
    ECR_REPOSITORY,
    POD_SPEC_PATHS,
    containers,
    pod_specs,
    workload_id,
)

ROOT_EXEMPTIONS = [entry("DaemonSet/kube-system/neuron-monitor/neuron-monitor", charts.NEURON_MONITOR_IMAGE)]
# The public images the program's typed objects run (the credentials-sync pod's pause container, the
# gateway's rate-limit Redis, AWS's neuron-monitor): each stack's config narrows this to its own.
DEFAULT_REGISTRIES = ["registry.k8s.io/pause", "docker.io/library/redis", "public.ecr.aws/neuron/neuron-monitor"]
SERVICE = "kubernetes:core/v1:Service"
PERSISTENT_VOLUME = "kubernetes:core/v1:PersistentVolume"
BINDINGS = (
    "kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding",
    "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding",
    "kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBindingPatch",
    "kubernetes:rbac.authorization.k8s.io/v1:RoleBindingPatch",
)
# The provider's server-side-apply patch types of every workload kind, read like the kind itself.
PATCH_PATHS = {f"{kind}Patch": paths for kind, paths in POD_SPEC_PATHS.items() if kind.startswith("kubernetes:")}
INTERNAL_SCHEME_ANNOTATIONS = {
    "service.beta.kubernetes.io/aws-load-balancer-scheme": "internal",
    "service.beta.kubernetes.io/aws-load-balancer-internal": "true",
}
SOURCE_RANGES_ANNOTATION = "service.beta.kubernetes.io/load-balancer-source-ranges"
ADMIN_ROLES = ["cluster-admin"]


def _effective(spec: Any, container: Any, field: str) -> Any:
    found = get(container, f"securityContext.{field}")
    return found if found is not None else get(spec, f"securityContext.{field}")


def root_problems(spec: Any, container: Any) -> str | None:
    """Why a container (in its pod) may run as root, or None."""
    uid = _effective(spec, container, "runAsUser")
    if uid is not None and int(float(uid)) == 0:
        return "runs as UID 0 (runAsUser: 0)"
    if uid is None and _effective(spec, container, "runAsNonRoot") is not True:
        return "may run as root: no runAsUser and runAsNonRoot is not true"
    return None


def _non_root(args: ResourceValidationArgs, report: ReportViolation) -> None:
    entries = list(args.get_config().get("rootExemptions") or [])
    workload = workload_id(args.resource_type, args.props, args.name)
    parent = args.opts.parent if args.opts is not None else None
    for path, spec in pod_specs(args.resource_type, args.props):
        for where, container in containers(spec):
            image = str(get(container, "image", ""))
            if exempt(entries, f"{workload}/{get(container, 'name')}", [image], parent):
                continue
            problem = root_problems(spec, container)
            if problem:
                report(f"{path}.{where}: {problem}")


def image_parts(image: str) -> tuple[str, str | None, str | None]:
    """``(registry/path, tag, digest)`` with Docker's defaults: ``redis`` is ``docker.io/library/redis``."""
    name, _, digest = image.partition("@")
    last = name.rsplit("/", 1)[-1]
    tag = None
    if ":" in last:
        name, tag = name.rsplit(":", 1)
    first = name.split("/", 1)[0]
    if "/" not in name or not ("." in first or ":" in first or first == "localhost"):
        name = f"docker.io/{name}" if "/" in name else f"docker.io/library/{name}"
    return name, tag, digest or None


def registry_allowed(repository: str, patterns: list[str]) -> bool:
    """Whether ``registry/path`` is under one of the allowed ``host-pattern[/path]`` entries. The host is
    matched on its own (a ``*`` never spans a ``/``, so ``evil.example/x.dkr.ecr...`` is no ECR) and the
    path as a prefix of whole segments."""
    host, _, path = repository.partition("/")
    for pattern in patterns:
        host_pattern, _, prefix = pattern.partition("/")
        if fnmatch.fnmatchcase(host, host_pattern) and (not prefix or f"{path}/".startswith(f"{prefix}/")):
            return True
    return False


def stack_registries(resources: list[PolicyResource]) -> list[str]:
    """The registry hosts of the stack's own ECR repositories (account and region included), sorted."""
    hosts = set()
    for resource in resources:
        if resource.resource_type != ECR_REPOSITORY:
            continue
        try:
            url = str(get(resource.props, "repositoryUrl") or "")
        except UnknownValueError:
            continue  # a repository created by this update: images naming it are unknown as well
        if url:
            hosts.add(url.partition("/")[0])
    return sorted(hosts)


def _images(args: StackValidationArgs, report: ReportViolation) -> None:
    named = [str(p) for p in args.get_config().get("allowedRegistries") or DEFAULT_REGISTRIES]
    allowed = [*stack_registries(list(args.resources)), *named]
    for resource in args.resources:
        for path, spec in pod_specs(resource.resource_type, resource.props):
            for where, container in containers(spec):
                try:
                    image = str(get(container, "image", "") or "")
                except UnknownValueError:
                    continue  # e.g. the stack's repository URL during the preview that creates it
                if not image:
                    continue
                at = f"{resource.name}: {path}.{where}"
                repository, tag, digest = image_parts(image)
                if digest is None and tag in (None, "latest"):
                    report(f"{at}: image {image!r} has no tag or uses :latest; pin a version or a digest", resource.urn)
                if not registry_allowed(repository, allowed):
                    report(
                        f"{at}: image {image!r} is neither from this stack's ECR nor a named public image "
                        f"({', '.join(allowed) or 'none'})",
                        resource.urn,
                    )


def _not_in_default(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type not in POD_SPEC_PATHS:
        return
    namespace = get(args.props, "metadata.namespace", "default")
    if namespace == "default":
        report("runs in the 'default' namespace; give it a namespace of its own")


def _load_balancer_ranges(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type != SERVICE or get(args.props, "spec.type") != "LoadBalancer":
        return
    annotations = get(args.props, "metadata.annotations") or {}
    if any(str(annotations.get(k, "")).lower() == v for k, v in INTERNAL_SCHEME_ANNOTATIONS.items()):
        return
    ranges = [str(r) for r in as_list(get(args.props, "spec.loadBalancerSourceRanges"))]
    ranges += [r.strip() for r in str(annotations.get(SOURCE_RANGES_ANNOTATION, "")).split(",") if r.strip()]
    if not ranges:
        report("internet-facing LoadBalancer Service without loadBalancerSourceRanges: open to the world")
    elif {"0.0.0.0/0", "::/0"} & set(ranges) or internet_wide(ranges):
        report(f"LoadBalancer Service source ranges {ranges} cover the internet (more public addresses than a /8)")


def _no_host_path_volumes(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type == PERSISTENT_VOLUME and get(args.props, "spec.hostPath") is not None:
        report(f"PersistentVolume mounts the node's {get(args.props, 'spec.hostPath.path', '?')} (hostPath)")


def patch_problems(spec: Any) -> Iterator[str]:
    """What a (partial) pod spec from a patch sets that breaks out of the container."""
    for flag in ("hostNetwork", "hostPID", "hostIPC"):
        if get(spec, flag) is True:
            yield f"sets {flag}"
    for volume in as_list(get(spec, "volumes")):
        if get(volume, "hostPath") is not None:
            yield f"adds hostPath volume {get(volume, 'name', '?')}"
    if get(spec, "securityContext.runAsUser") in (0, 0.0) or get(spec, "securityContext.runAsNonRoot") is False:
        yield "sets the pod to run as root"
    for where, container in containers(spec):
        context = get(container, "securityContext") or {}
        if get(context, "privileged") is True:
            yield f"{where}: privileged"
        if get(context, "allowPrivilegeEscalation") is True:
            yield f"{where}: allowPrivilegeEscalation"
        added = sorted({str(c) for c in as_list(get(context, "capabilities.add"))} - ALLOWED_ADDED_CAPABILITIES)
        if added:
            yield f"{where}: adds capabilities {', '.join(added)}"
        if get(context, "runAsUser") in (0, 0.0) or get(context, "runAsNonRoot") is False:
            yield f"{where}: runs as root"


def _patches(args: ResourceValidationArgs, report: ReportViolation) -> None:
    paths = PATCH_PATHS.get(args.resource_type)
    if not paths:
        return
    target = workload_id(args.resource_type.removesuffix("Patch"), args.props, args.name)
    if target in set(args.get_config().get("exemptions") or []):
        return
    for path in paths:
        spec = get(args.props, path)
        for problem in patch_problems(spec) if spec is not None else ():
            report(f"patch of {target}: {path} {problem}")


def _no_cluster_admin_for_service_accounts(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type not in BINDINGS:
        return
    roles = set(args.get_config().get("adminRoles") or ADMIN_ROLES)
    if get(args.props, "roleRef.name") not in roles:
        return
    for subject in as_list(get(args.props, "subjects")):
        kind, name = get(subject, "kind"), str(get(subject, "name", ""))
        if kind == "ServiceAccount" or (kind == "Group" and name.startswith("system:serviceaccounts")):
            report(
                f"binds {get(args.props, 'roleRef.name')} to {kind} {get(subject, 'namespace', '')}/{name}: "
                "a stolen pod token would own the cluster; grant a Role with the verbs it needs"
            )


POLICIES = [
    ResourceValidationPolicy(
        name="workloads-non-root",
        description="No container runs as UID 0 or without runAsNonRoot (or a non-zero runAsUser).",
        validate=_non_root,
        enforcement_level=EnforcementLevel.MANDATORY,
        config_schema=name_list(
            "rootExemptions",
            ROOT_EXEMPTIONS,
            "containers allowed root: 'Kind/ns/name/container image=<pinned ref> [release=<Helm release>]'",
        ),
    ),
    StackValidationPolicy(
        name="workloads-image-provenance",
        description="Images are pinned (a tag other than latest, or a digest) and come from the stack's own ECR "
        "(its account and region) or are named public images.",
        validate=_images,
        enforcement_level=EnforcementLevel.MANDATORY,
        config_schema=name_list(
            "allowedRegistries",
            DEFAULT_REGISTRIES,
            "public images (registry/path, whole segments) allowed besides the stack's own ECR registry",
        ),
    ),
    ResourceValidationPolicy(
        name="workloads-not-in-default",
        description="No workload runs in the default namespace.",
        validate=_not_in_default,
        enforcement_level=EnforcementLevel.MANDATORY,
    ),
    ResourceValidationPolicy(
        name="services-load-balancer-source-ranges",
        description="Internet-facing LoadBalancer Services name client ranges that do not cover the internet.",
        validate=_load_balancer_ranges,
        enforcement_level=EnforcementLevel.MANDATORY,
    ),
    ResourceValidationPolicy(
        name="persistent-volumes-no-host-path",
        description="No PersistentVolume mounts a node's filesystem (hostPath).",
        validate=_no_host_path_volumes,
        enforcement_level=EnforcementLevel.MANDATORY,
    ),
    ResourceValidationPolicy(
        name="workload-patches-not-privileged",
        description="Patches of workloads (e.g. DaemonSetPatch on kube-system) never add privilege, root or host "
        "access.",
        validate=_patches,
        enforcement_level=EnforcementLevel.MANDATORY,
        config_schema=name_list("exemptions", [], "patched workloads allowed to gain privilege (Kind/ns/name)"),
    ),
    ResourceValidationPolicy(
        name="rbac-no-cluster-admin-for-service-accounts",
        description="No (Cluster)RoleBinding grants cluster-admin to service accounts.",
        validate=_no_cluster_admin_for_service_accounts,
        enforcement_level=EnforcementLevel.MANDATORY,
        config_schema=name_list("adminRoles", ADMIN_ROLES, "roles never to bind to service accounts"),
    ),
]
