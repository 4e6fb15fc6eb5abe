"""Image disk rule: a pod's image fits the root volume of every node group it may be scheduled on.

- ``pod-images-fit-node-disk``: for each workload (Job, CronJob, Deployment, StatefulSet, DaemonSet, Pod) whose
  container images come from an ECR repository of the stack that records what its images unpack to (the
  ``inference.platform/unpacked-gib`` tag, ``catalog.image_sizes``), every managed node group (``aws:eks/nodeGroup``:
  its ``labels``, and its root volume from ``diskSize`` or its launch template's block device, a Bottlerocket node's
  data volume, where its images live) whose labels satisfy
  the pod's ``nodeSelector`` and required node affinity must hold the largest of those images while it is pulled
  (unpacked plus the compressed layers in flight) in what the root volume leaves for images (below the kubelet's
  image garbage-collection threshold, after the OS and the system pods' images).

Why: prod's verification Job ran the 40-50 GiB serving image on the 50 GiB system nodes: disk pressure or "no space
left on device", a failed Job, a failed ``pulumi up`` (issue 28). The plan shows a valid Job either way; only the
image's size against the node's disk says it cannot start. The image is related to its repository through the
workload's property dependencies (the image reference is built from the repository's URL).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from pulumi_policy import EnforcementLevel, StackValidationArgs
from pulumi_policy.proxy import UnknownValueError

from inference_platform.catalog.image_cache import CACHE_DEVICE
from inference_platform.catalog.image_sizes import (
    UNPACKED_GIB_TAG,
    fits,
    pull_need_gib,
    room_for_images_gib,
)
from inference_platform.policies.callbacks import ReportViolation, StackValidationPolicy
from inference_platform.policies.props import as_list, get

REPOSITORY = "aws:ecr/repository:Repository"
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
BOTTLEROCKET_AMI_PREFIX = "BOTTLEROCKET_"
BOTTLEROCKET_DATA_DEVICE = "/dev/xvdb"
"""Bottlerocket keeps its OS on the root volume and container images on this data volume ("an OS volume and a data
volume, with the latter used for storing artifacts and container images": aws-samples/bottlerocket-images-cache
README, tests/data/upstream/bottlerocket_data_volume.json); the root is a few GiB (components/compute/node_pool.py
gives it 4)."""
EKS_DEFAULT_DISK_GIB = 20
"""``CreateNodegroup`` ``diskSize``: "The default disk size is 20 GiB for Linux and Bottlerocket" (EKS API reference)."""
POD_SPEC_PATHS: Mapping[str, str] = {
    "kubernetes:batch/v1:Job": "spec.template.spec",
    "kubernetes:batch/v1:CronJob": "spec.jobTemplate.spec.template.spec",
    "kubernetes:apps/v1:Deployment": "spec.template.spec",
    "kubernetes:apps/v1:StatefulSet": "spec.template.spec",
    "kubernetes:apps/v1:DaemonSet": "spec.template.spec",
    "kubernetes:core/v1:Pod": "spec",
}


def _repository_sizes(resources: list[Any]) -> dict[str, float]:
    out = {}
    for resource in resources:
        if resource.resource_type != REPOSITORY:
            continue
        value = (get(resource.props, "tags") or {}).get(UNPACKED_GIB_TAG)
        try:
            out[resource.urn] = float(str(value))
        except ValueError:
            continue
    return out


def _node_groups(resources: list[Any]) -> list[tuple[Any, dict[str, str], float, str]]:
    """(node group, labels, GiB of a volume its images live on) of each managed node group: the root volume, or a
    Bottlerocket node's data volume; with the image cache (catalog/image_cache.py) both the cache volume, containerd's
    root, and the root volume a node falls back to when the cache is not mounted."""
    templates = {r.urn: r for r in resources if r.resource_type == LAUNCH_TEMPLATE}
    out = []
    for group in resources:
        if group.resource_type != NODE_GROUP:
            continue
        disk = get(group.props, "diskSize")
        bottlerocket = str(get(group.props, "amiType") or "").startswith(BOTTLEROCKET_AMI_PREFIX)
        volume = "data volume" if bottlerocket else "root volume"
        cache: list[Any] = []
        for dep in group.property_dependencies.get("launchTemplate", []):
            template = templates.get(dep.urn)
            mappings = as_list(get(template.props, "blockDeviceMappings") if template else None)
            devices = [(get(b, "deviceName"), get(b, "ebs.volumeSize")) for b in mappings]
            sizes = [size for _, size in devices if size is not None]
            data = [size for name, size in devices if name == BOTTLEROCKET_DATA_DEVICE and size is not None]
            cache = [get(b, "ebs.volumeSize") for b in mappings
                     if get(b, "deviceName") == CACHE_DEVICE and get(b, "ebs.snapshotId") and get(b, "ebs.volumeSize")]  # fmt: skip
            if bottlerocket and data:
                disk = data[0]
            elif sizes:
                disk = sizes[0]  # the root device comes first (components/compute/node_pool.py)
        labels = {str(k): str(v) for k, v in dict(get(group.props, "labels") or {}).items()}
        out.append((group, labels, float(disk if disk is not None else EKS_DEFAULT_DISK_GIB), volume))
        if cache and not bottlerocket:
            out.append((group, labels, float(cache[0]), "image cache volume"))
    return out


def _matches(spec: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """Whether a node with ``labels`` satisfies the pod's nodeSelector and required node affinity."""
    for key, value in dict(get(spec, "nodeSelector") or {}).items():
        if labels.get(str(key)) != str(value):
            return False
    terms = as_list(get(spec, "affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"))
    if not terms:
        return True
    return any(all(_expression(e, labels) for e in as_list(get(t, "matchExpressions"))) for t in terms)


def _expression(expression: Any, labels: Mapping[str, str]) -> bool:
    key, operator = str(get(expression, "key")), str(get(expression, "operator"))
    values = [str(v) for v in as_list(get(expression, "values"))]
    if operator == "In":
        return labels.get(key) in values
    if operator == "NotIn":
        return labels.get(key) not in values
    if operator == "Exists":
        return key in labels
    if operator == "DoesNotExist":
        return key not in labels
    return True  # Gt/Lt on numeric labels: not judged here


def _workloads(resources: list[Any]) -> Iterator[tuple[Any, Mapping[str, Any]]]:
    for resource in resources:
        path = POD_SPEC_PATHS.get(resource.resource_type)
        if path is None:
            continue
        try:
            spec = get(resource.props, path)
        except UnknownValueError:
            continue
        if spec:
            yield resource, spec


def _fit(args: StackValidationArgs, report: ReportViolation) -> None:
    resources = list(args.resources)
    sizes = _repository_sizes(resources)
    if not sizes:
        return
    groups = _node_groups(resources)
    by_urn = {r.urn: r for r in resources}
    for workload, spec in _workloads(resources):
        repositories = {dep.urn for deps in workload.property_dependencies.values() for dep in deps if dep.urn in sizes}
        if not repositories:
            continue
        largest = max(repositories, key=lambda urn: sizes[urn])
        unpacked = sizes[largest]
        name = get(workload.props, "metadata.name") or workload.name
        for group, labels, disk, volume in groups:
            if _matches(spec, labels) and not fits(unpacked, disk):
                report(
                    f"{workload.resource_type.rsplit(':', 1)[-1]} {name}: its image ({by_urn[largest].name}, "
                    f"{unpacked:g} GiB unpacked, {pull_need_gib(unpacked):g} GiB while pulled) does not fit node group "
                    f"{group.name}'s {disk:g} GiB {volume} ({room_for_images_gib(disk):g} GiB for images): disk "
                    "pressure or 'no space left on device', and the pod never starts; give the workload a smaller "
                    "image or schedule it on nodes with the disk for it",
                    workload.urn,
                )


POLICIES = [
    StackValidationPolicy(
        name="pod-images-fit-node-disk",
        description="A workload's image (by its ECR repository's recorded unpacked size) fits the volume images live "
        "on (the root volume; a Bottlerocket node's data volume) of every node group its pods may be scheduled on.",
        validate=_fit,
        enforcement_level=EnforcementLevel.MANDATORY,
    ),
]
