"""How much root volume an image needs on a node, by what each of our images unpacks to, and what a node's root
volume leaves for images: the data behind the pack's ``pod-images-fit-node-disk``.

- The serving images (Triton + TensorRT-LLM on NVIDIA's base) unpack to about 40-50 GiB (``planners/placement.py``
  ``IMAGE_DISK_GIB``'s figure): 50 GiB is the planning value.
- The verification image (inference_image/verification/Dockerfile: python:3.11-slim, our package and what
  ``inferctl verify``/``loadtest`` import) and the batch image (batch/Dockerfile) are Python slim images well under
  1 GiB (tests/inference_image/test_verification_image.py measures the verification environment): 1 GiB each.

A node's root volume holds the OS, the system pods' images and every image its pods run. While an image is pulled its
compressed layers sit beside the unpacked snapshot until each layer is unpacked (the EKS AL2023 AMI's containerd sets
``discard_unpacked_layers = true``: awslabs/amazon-eks-ami v20260724 nodeadm/internal/containerd/config.template.toml,
so the compressed copies go once unpacked); the kubelet garbage-collects images above 85 % of the disk
(KubeletConfiguration ``imageGCHighThresholdPercent`` default) and evicts pods below 10 % free (nodeadm's
``evictionHard`` ``nodefs.available: 10%``, nodeadm/internal/kubelet/config.go at the same tag).
"""

from __future__ import annotations

import math
from typing import Final

SERVING_GPU_IMAGE_GIB: Final = 50
VERIFICATION_IMAGE_GIB: Final = 1
BATCH_IMAGE_GIB: Final = 1
UNPACKED_GIB_TAG: Final = "inference.platform/unpacked-gib"
"""Tag on an ECR repository: what its images unpack to (GiB), read by the pack."""

PULL_OVERHEAD: Final = 0.5
"""Compressed layers present during the pull, as a share of the unpacked size (layers compress to well under half;
a half is the bound used)."""
OS_AND_SYSTEM_GIB: Final = 10
"""AL2023's own files and the system DaemonSets' images (VPC CNI, kube-proxy, CSI drivers, exporters)."""
IMAGE_GC_HIGH_THRESHOLD: Final = 0.85
"""The kubelet's default ``imageGCHighThresholdPercent``: above it, images are deleted."""


def pull_need_gib(unpacked_gib: float) -> float:
    """Root volume an image needs while it is pulled and after: unpacked plus the compressed layers in flight."""
    return unpacked_gib * (1 + PULL_OVERHEAD)


def room_for_images_gib(disk_gib: float) -> float:
    """What a root volume of ``disk_gib`` leaves for the pods' images before the kubelet starts deleting them."""
    return disk_gib * IMAGE_GC_HIGH_THRESHOLD - OS_AND_SYSTEM_GIB


def fits(unpacked_gib: float, disk_gib: float) -> bool:
    return pull_need_gib(unpacked_gib) <= room_for_images_gib(disk_gib)


def min_disk_gib(unpacked_gib: float) -> int:
    """The least whole GiB a volume needs for ``fits`` to hold."""
    return math.ceil((pull_need_gib(unpacked_gib) + OS_AND_SYSTEM_GIB) / IMAGE_GC_HIGH_THRESHOLD)
