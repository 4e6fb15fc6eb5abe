"""Node volumes restored from a snapshot, and containerd's root mounted from one (``coldStart.imagePull: cached``,
catalog/image_cache.py).

- ``node-snapshot-volumes`` (mandatory): a launch template volume restored from a snapshot sets no encryption value
  (the EC2 API refuses one beside a snapshot id: "If you are creating a volume from a snapshot, you can't specify an
  encryption value", LaunchTemplateEbsBlockDeviceRequest; it would fail at ``pulumi up``, not at preview), and it is
  initialized at creation: the stack enables fast snapshot restore for the snapshot, or the volume has a provisioned
  initialization rate. Otherwise each block comes from S3 on first access, and the start the volume exists to
  shorten is slower than a pull, unmodelled. Its encryption is the snapshot's, which the stack's preview holds to the
  storage key (infra/image_cache.py): ``nodes-ebs-encrypted`` and ``nodes-volumes-cmk`` leave such a volume to it.
- ``node-containerd-root-mount`` (mandatory): user data whose script mounts a volume over ``/var/lib/containerd``
  gives the mounted store the AMI's sandbox image (``localhost/kubernetes/pause:latest`` is a local-only tag of the
  root store: without it no pod sandbox starts, awslabs/amazon-eks-ami v20260724 nodeadm/cmd/nodeadm/init/init.go),
  keeps nodeadm's RAID0 off containerd's directory (``localStorage.disabledMounts: [Containerd]``: else
  setup-local-disks copies the store onto the array and mounts the copy over it), and leaves FastImagePull off (the
  SOCI snapshotter reads none of an overlayfs store). Facts: tests/data/upstream/amazon_eks_ami_v20260724_image_cache.json.
"""

from __future__ import annotations

import re
from typing import Any

from pulumi_policy import EnforcementLevel, ResourceValidationArgs, StackValidationArgs

from inference_platform.catalog import image_cache
from inference_platform.policies.callbacks import (
    ReportViolation,
    ResourceValidationPolicy,
    StackValidationPolicy,
)
from inference_platform.policies.props import as_list, get
from inference_platform.policies.user_data import LAUNCH_TEMPLATE, launch_template, parse

FAST_SNAPSHOT_RESTORE = "aws:ebs/fastSnapshotRestore:FastSnapshotRestore"
MOUNTS_CONTAINERD_ROOT = re.compile(
    r"(\bmount\b[^\n]*\s|^Where=)" + re.escape(image_cache.CONTAINERD_ROOT) + r"/?(\s|$)", re.MULTILINE
)
"""A ``mount`` command or a systemd mount unit's ``Where=`` at containerd's root."""


def snapshot_volumes(props: Any) -> list[tuple[str, Any]]:
    """(device, ebs) of each launch-template volume restored from a snapshot."""
    return [
        (str(get(m, "deviceName", "?")), get(m, "ebs"))
        for m in as_list(get(props, "blockDeviceMappings"))
        if get(m, "ebs.snapshotId")
    ]


def root_mount_problems(user_data: str | None) -> list[str]:
    """What a node whose user data mounts a volume over containerd's root would lack."""
    parsed = parse(user_data)
    mounting = [s for s in parsed.scripts if MOUNTS_CONTAINERD_ROOT.search(s)]
    if parsed.error or not mounting:
        return []
    out = []
    if not any(image_cache.PAUSE_ARCHIVE in s and "import" in s for s in mounting):
        out.append(f"it mounts a volume over {image_cache.CONTAINERD_ROOT} without importing {image_cache.PAUSE_ARCHIVE}: "
                   f"the sandbox image {image_cache.SANDBOX_IMAGE} is a local-only tag of the root store, so no pod "
                   "sandbox would start")  # fmt: skip
    for config in parsed.configs:
        storage = get(config, "spec.instance.localStorage") or {}
        if get(storage, "strategy") and "Containerd" not in as_list(get(storage, "disabledMounts")):
            out.append(f"its NodeConfig's localStorage ({get(storage, 'strategy')}) binds {image_cache.CONTAINERD_ROOT} "
                       "onto the array, over the mounted volume: add disabledMounts: [Containerd]")  # fmt: skip
        if get(config, "spec.featureGates.FastImagePull") is True:
            out.append("its NodeConfig turns FastImagePull on: the SOCI snapshotter reads none of the mounted "
                       "overlayfs store, and the image is pulled again")  # fmt: skip
    return out


def _root_mount(args: ResourceValidationArgs, report: ReportViolation) -> None:
    props = launch_template(args.resource_type, args.props)
    if props is None:
        return
    for problem in root_mount_problems(get(props, "userData")):
        report(f"launch template: {problem}")


def _snapshot_volumes(args: StackValidationArgs, report: ReportViolation) -> None:
    restored: dict[str, set[str]] = {}
    for r in args.resources:
        if r.resource_type == FAST_SNAPSHOT_RESTORE and get(r.props, "snapshotId"):
            restored.setdefault(str(get(r.props, "snapshotId")), set()).add(str(get(r.props, "availabilityZone")))
    for r in args.resources:
        if r.resource_type != LAUNCH_TEMPLATE:
            continue
        for device, ebs in snapshot_volumes(r.props):
            snapshot = str(get(ebs, "snapshotId"))
            if get(ebs, "encrypted") is not None or get(ebs, "kmsKeyId"):
                report(f"EBS volume {device} sets an encryption value beside snapshot {snapshot}: EC2 refuses it (the "
                       "volume takes the snapshot's encryption); remove encrypted and kmsKeyId", r.urn)  # fmt: skip
            if get(ebs, "volumeInitializationRate") is None and snapshot not in restored:
                report(f"EBS volume {device} is restored from {snapshot} with neither fast snapshot restore in the "
                       "stack nor a volumeInitializationRate: its blocks come from S3 on first access, at no "
                       f"published rate ({image_cache.FSR_SOURCE})", r.urn)  # fmt: skip


POLICIES = [
    StackValidationPolicy(
        name="node-snapshot-volumes",
        description="A launch-template volume restored from a snapshot sets no encryption value (EC2 refuses one) and "
        "is initialized at creation: fast snapshot restore for the snapshot in the stack, or a volume initialization "
        "rate.",
        validate=_snapshot_volumes,
        enforcement_level=EnforcementLevel.MANDATORY,
    ),
    ResourceValidationPolicy(
        name="node-containerd-root-mount",
        description="User data that mounts a volume over /var/lib/containerd imports the AMI's sandbox image into it, "
        "keeps nodeadm's RAID0 off containerd's directory and leaves FastImagePull off.",
        validate=_root_mount,
        enforcement_level=EnforcementLevel.MANDATORY,
    ),
]
