"""What each catalogued instance type can move: its network cards, EBS bandwidth and instance-store disks. Pure data.

Source: AWS's EC2 DescribeInstanceTypes answers as moto ships them (``moto/ec2/resources/instance_types.json.gz``:
``NetworkInfo.NetworkCards[].BaselineBandwidthInGbps`` / ``PeakBandwidthInGbps``, ``EbsInfo.EbsOptimizedInfo``
``BaselineThroughputInMBps`` / ``MaximumThroughputInMBps``, ``InstanceStorageInfo.Disks``, ``VCpuInfo``,
``MemoryInfo``), vendored for the catalog's types in ``instance_io.json`` with the moto version and the date;
``python -m inference_platform.catalog.instance_io_refresh`` rewrites it from the installed moto (``--check``
compares). The cold-start model (``planners/cold_start.py``) reads it the way the cost model reads prices.

Why network card 0: a pod's traffic (an S3 download from an init container) leaves through the ENIs the VPC CNI
gives pods, which it attaches to the default network card (``DefaultNetworkCardIndex``, 0 on every type here). A
p5.48xlarge's 3,200 Gbps is 32 cards of 100 Gbps for EFA; a pod's S3 download sees one card, 100 Gbps.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Final

DATA_FILE: Final = Path(__file__).with_name("instance_io.json")
RESOURCE_FILE: Final = "moto/ec2/resources/instance_types.json.gz"


@dataclass(frozen=True)
class InstanceIO:
    """One instance type's data paths (DescribeInstanceTypes)."""

    name: str
    vcpus: int
    memory_mib: int
    network_cards: int
    default_card_baseline_gbps: float
    """``NetworkCards[DefaultNetworkCardIndex].BaselineBandwidthInGbps``: what a pod's flows share."""
    default_card_peak_gbps: float
    """``PeakBandwidthInGbps`` of that card (burst, "up to" types)."""
    ebs_baseline_mb_s: float
    """``EbsOptimizedInfo.BaselineThroughputInMBps``: the instance's own cap on EBS throughput."""
    ebs_maximum_mb_s: float
    nvme_disks: int
    """Instance-store NVMe SSDs (``InstanceStorageInfo.Disks[].Count``; 0 when EBS only)."""
    nvme_disk_gb: int

    @property
    def default_card_mb_s(self) -> float:
        """The default card's baseline in MB/s (10^6 bytes)."""
        return self.default_card_baseline_gbps * 1e9 / 8 / 1e6


@lru_cache(maxsize=1)
def data() -> dict[str, Any]:
    """The vendored file (``instance_io.json``)."""
    loaded: dict[str, Any] = json.loads(DATA_FILE.read_text(encoding="utf-8"))
    return loaded


def source() -> str:
    """Where the figures come from, for a phase's citation."""
    src = data()["source"]
    return f"EC2 DescribeInstanceTypes as vendored from {src['package']} {src['version']} ({src['path']})"


def instance_io(name: str) -> InstanceIO | None:
    """The data paths of ``name``, or None when the vendored file has no record of it."""
    row = data()["instanceTypes"].get(name)
    if row is None:
        return None
    return InstanceIO(name=name, **row)


def known() -> tuple[str, ...]:
    return tuple(sorted(data()["instanceTypes"]))
