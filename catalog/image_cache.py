"""The serving image cached on an EBS snapshot: what an AL2023 node mounts as containerd's root so that a new node
starts the serving image without pulling it (``coldStart.imagePull: cached``).

How it works, and the upstream facts each step rests on (awslabs/amazon-eks-ami at v20260724, quoted in
tests/data/upstream/amazon_eks_ami_v20260724_image_cache.json):

- ``inferctl image-cache build`` pulls the stack's serving image on a throwaway instance of the node AMI into a blank
  EBS volume formatted with the label ``FS_LABEL`` and mounted at ``/var/lib/containerd``, with containerd's default
  ``overlayfs`` snapshotter and the CRI's ``managed`` label (what aws-samples/bottlerocket-images-cache snapshot.sh
  does for Bottlerocket), then snapshots the volume, encrypted with the stack's volume key, and tags it with the
  image it holds (``IMAGE_TAG_KEY``).
- Each serving node's launch template maps a volume restored from that snapshot (``CACHE_DEVICE``; an EBS volume
  from a snapshot takes the snapshot's encryption: the EC2 API refuses an encryption value beside a snapshot id).
- A cloud-init script (``mount_script``) mounts it at ``/var/lib/containerd`` through a systemd mount unit, which
  holds across reboots. nodeadm-run, which starts containerd,
  runs after cloud-final (templates/al2023/runtime/rootfs/etc/systemd/system/nodeadm-run.service), and the AMI does
  not enable containerd itself, so containerd first opens the cached store.
- The RAID0 of the NVMe disks keeps ``/var/lib/kubelet`` (the weights' emptyDir) but not containerd's directory:
  NodeConfig ``localStorage.disabledMounts: [Containerd]`` (nodeadm/internal/system/local_disk.go passes
  ``--no-bind-containerd`` to setup-local-disks).
- The sandbox (pause) image nodeadm configures, ``localhost/kubernetes/pause:latest`` (nodeadm/cmd/nodeadm/init/
  init.go), is a local-only tag the AMI build put in the root volume's store; a store mounted over it lacks it, and no
  registry serves it, so every pod sandbox would fail. The script imports the AMI's own archive of it,
  ``/etc/eks/pause.tar`` (templates/al2023/runtime/bin/cache-pause-container), as nodeadm itself does for the SOCI
  store (nodeadm/internal/containerd/sandbox_image.go), pinned so the kubelet never collects it.
- FastImagePull must be off: with it containerd's snapshotter is SOCI, which cannot use overlayfs snapshots, and
  nodeadm's SOCI config discards unpacked layers, so the cached image would be pulled again.
- A volume restored from a snapshot reads each block from S3 on first access unless fast snapshot restore (FSR) is
  enabled for the snapshot in the node's zone (then "fully initialized at creation", while volume creation credits
  last) or a volume initialization rate is provisioned (100-300 MiB/s). The cold-start model counts FSR as no pull
  and an initialization rate as the image's bytes at that rate; neither: not counted (no rate is published).

If the volume is missing (a launch without it) the script leaves containerd on the root volume and the node pulls
as before: a stale or absent cache slows a start, it never breaks one.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Final

CACHE_DEVICE: Final = "/dev/xvdc"
"""The launch-template device name of the cache volume (the root is /dev/xvda; Bottlerocket's data is /dev/xvdb)."""
FS_LABEL: Final = "image-cache"
"""XFS label of the cache volume (XFS allows 12 characters): the node finds it by label, whatever NVMe name the
kernel gives the device."""
CONTAINERD_ROOT: Final = "/var/lib/containerd"
SNAPSHOTTER: Final = "overlayfs"
"""containerd's default snapshotter, which nodeadm keeps when FastImagePull is off."""
SANDBOX_IMAGE: Final = "localhost/kubernetes/pause:latest"
PAUSE_ARCHIVE: Final = "/etc/eks/pause.tar"
CRI_MANAGED_LABEL: Final = "io.cri-containerd.image=managed"
CRI_PINNED_LABEL: Final = "io.cri-containerd.pinned=pinned"
IMAGE_TAG_KEY: Final = "inference.platform/cached-image"
"""Snapshot tag: the image reference (with its digest) the snapshot holds."""
SNAPSHOTTER_TAG_KEY: Final = "inference.platform/snapshotter"
MOUNT_WAIT_SECONDS: Final = 60
SNAPSHOT_ID = re.compile(r"^snap-[0-9a-f]{8}([0-9a-f]{9})?$")

CACHE_THROUGHPUT_MIB_S: Final = 1000
"""The cache volume's gp3 throughput: the most a fast-restored volume gets in full ("Volumes provisioned with
performance up to 64,000 IOPS and 1,000 MiB/s throughput receive the full performance benefit")."""
CACHE_IOPS: Final = 4000
"""What 1,000 MiB/s needs on gp3 (at most 0.25 MiB/s per IOPS)."""


@dataclass(frozen=True)
class ImageCacheSpec:
    """The serving pool's cache volume (``coldStart.imageCache``)."""

    snapshot_id: str
    size_gib: int
    fast_snapshot_restore: bool = True
    initialization_rate_mib_s: int | None = None


FSR_MAX_CREDITS: Final = 10
FSR_CREDIT_GIB: Final = 1024
FSR_SOURCE: Final = (
    "Amazon EBS User Guide, fast snapshot restore volume creation credits: one credit bucket per snapshot per "
    "Availability Zone, MAX(1, MIN(10, 1024 / snapshot_size_gib)) credits, refilled at MIN(10, 1024 / "
    "snapshot_size_gib) per hour; a volume created with less than one credit is not fast-restored; volumes up to "
    "64,000 IOPS and 1,000 MiB/s get the full benefit; up to 5 snapshots per Region (ebs-fast-snapshot-restore.html, "
    "volume-creation-credits.html)"
)
INIT_RATE_MIN_MIB_S: Final = 100
INIT_RATE_MAX_MIB_S: Final = 300
INIT_RATE_SOURCE: Final = (
    "EC2 API reference, EbsBlockDevice VolumeInitializationRate: the rate at which snapshot blocks are downloaded "
    "from S3 to the volume, valid range 100-300 MiB/s; a rate beside an FSR-enabled snapshot overrides FSR"
)


def fsr_credits(snapshot_gib: int) -> int:
    """Volumes one zone can create fully initialized at once (the credit bucket's size)."""
    return max(1, min(FSR_MAX_CREDITS, math.floor(FSR_CREDIT_GIB / snapshot_gib)))


def fsr_refill_per_hour(snapshot_gib: int) -> float:
    return min(float(FSR_MAX_CREDITS), FSR_CREDIT_GIB / snapshot_gib)


FSR_OPTIMIZING_MINUTES_PER_TIB: Final = 60
"""Amazon EBS User Guide, fast snapshot restore states: "optimizing ... It takes 60 minutes per TiB to optimize a
snapshot". The resource's create waits for the restore to be enabled, so its create timeout is sized to that."""
FSR_ENABLE_MARGIN_MINUTES: Final = 20


def fsr_enable_minutes(snapshot_gib: int) -> int:
    """The create timeout of one fast snapshot restore: its optimizing time, and a margin."""
    return math.ceil(FSR_OPTIMIZING_MINUTES_PER_TIB * snapshot_gib / 1024) + FSR_ENABLE_MARGIN_MINUTES


MOUNT_UNIT_DIR: Final = "/etc/systemd/system"
MOUNT_UNIT: Final = "var-lib-containerd.mount"
"""systemd's name for a mount at /var/lib/containerd (``systemd-escape --path --suffix=mount``)."""


def mount_unit() -> str:
    """The systemd mount unit that keeps the cache volume at containerd's root across reboots: cloud-init's user
    scripts run once per instance, while nodeadm starts containerd at every boot (setup-local-disks makes its own
    mounts persistent the same way, with units it writes and enables)."""
    return f"""[Unit]
Description=The serving image's cache volume as containerd's root (inference platform, catalog/image_cache.py)
Before=containerd.service

[Mount]
What=LABEL={FS_LABEL}
Where={CONTAINERD_ROOT}
Type=xfs
Options=noatime

[Install]
WantedBy=local-fs.target containerd.service
"""


def mount_script() -> str:
    """The cloud-init script that mounts the cache volume as containerd's root before nodeadm-run starts
    containerd (and at every later boot, through ``mount_unit``), and gives the mounted store the AMI's sandbox
    image. Without the volume it changes nothing."""
    return f"""#!/usr/bin/env bash
# The serving image's cache volume (catalog/image_cache.py): containerd's root, mounted before nodeadm-run starts
# containerd. Without the volume the node keeps its root volume's store and pulls as usual.
set -o nounset -o pipefail
device=""
for _ in $(seq 1 {MOUNT_WAIT_SECONDS}); do
  udevadm settle || true
  device="$(blkid -L {FS_LABEL} || true)"
  [ -n "$device" ] && break
  sleep 1
done
if [ -z "$device" ]; then
  echo "image cache: no volume labelled {FS_LABEL}; containerd keeps the root volume" >&2
  exit 0
fi
set -o errexit
systemctl stop containerd || true
mkdir -p {CONTAINERD_ROOT}
# A unit, not a bare mount: it holds across reboots, when cloud-init runs no user script again.
cat > {MOUNT_UNIT_DIR}/{MOUNT_UNIT} <<'UNIT'
{mount_unit()}UNIT
systemctl daemon-reload
systemctl enable --now {MOUNT_UNIT}
xfs_growfs {CONTAINERD_ROOT} || true
# The sandbox image is a local-only tag of the AMI's root store; the cached store needs it too (it stays there).
systemctl start containerd
ctr --namespace k8s.io images import --local {PAUSE_ARCHIVE}
ctr --namespace k8s.io images label {SANDBOX_IMAGE} {CRI_PINNED_LABEL}
systemctl stop containerd
"""
