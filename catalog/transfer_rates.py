"""Published rates of what a scale-up moves: S3, EC2 networking, FSx for Lustre, EBS gp3, instance store, image
pulls. Each figure carries its source, the way ``prices`` does; none was measured on this machine.

``planners/cold_start.py`` builds a scale-up's phases from these and from each instance type's own data paths
(``instance_io``, DescribeInstanceTypes). A figure's ``basis`` says how far to trust it:

- ``published``: read in the vendor's own documentation (the page or repository cited);
- ``second-hand``: a vendor figure read only where it is quoted (a republished blog, a README citing it);
- ``assumption``: no published figure was found; the value is ours and says why it is conservative.

The local S3 emulator's rate (``make bench BENCH_ARGS=cold-start``) never enters the model: it tests the download
code, not S3 or a node.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

Basis = Literal["published", "second-hand", "assumption"]
MB: Final = 1e6
MIB: Final = 1024 * 1024


@dataclass(frozen=True)
class Rate:
    """A figure with its unit, source and basis."""

    value: float
    unit: str
    source: str
    basis: Basis

    def cite(self) -> str:
        return f"{self.value:g} {self.unit} ({self.basis}: {self.source})"


# --- Amazon S3 ------------------------------------------------------------------------------------------------------
S3_PER_CONNECTION: Final = Rate(
    85.0,
    "MB/s per connection",
    'Amazon S3 User Guide, Performance design patterns: "Make one concurrent request for each 85-90 MB/s of '
    'desired network throughput" (awsdocs/amazon-s3-userguide doc_source/optimizing-performance-design-patterns'
    ".md); the low end of the range",
    "published",
)
S3_GET_PER_PREFIX: Final = Rate(
    5500.0,
    "GET/s per partitioned prefix",
    "Amazon S3 User Guide, Optimizing performance: at least 5,500 GET/HEAD requests per second per partitioned prefix",
    "published",
)

# --- EC2 networking -------------------------------------------------------------------------------------------------
SINGLE_FLOW: Final = Rate(
    5.0,
    "Gbps per flow",
    'Amazon EC2 User Guide, Amazon EC2 instance network bandwidth: "Baseline bandwidth for single-flow traffic is '
    'limited to 5 Gbps when instances are not in the same cluster placement group"; multi-flow traffic within the '
    "Region (S3 through the gateway endpoint) can use the instance's full bandwidth",
    "published",
)

# --- EBS gp3 --------------------------------------------------------------------------------------------------------
GP3_BASELINE: Final = Rate(
    125.0,
    "MiB/s",
    "EC2 API reference LaunchTemplateEbsBlockDeviceRequest: gp3 Throughput 125-1,000 MiB/s, 125 and 3,000 IOPS "
    "included",
    "published",
)
GP3_MAXIMUM: Final = Rate(1000.0, "MiB/s", GP3_BASELINE.source, "published")
GP3_BASE_IOPS: Final = 3000
GP3_MIB_S_PER_IOPS: Final = 0.25
"""gp3 allows at most 0.25 MiB/s of throughput per provisioned IOPS (same reference)."""

# --- Instance store -------------------------------------------------------------------------------------------------
NVME_DISK_WRITE: Final = Rate(
    1000.0,
    "MiB/s per disk",
    "no sequential figure is published for the instance stores of the GPU types (AWS lists random 4 KiB IOPS "
    "only); 1,000 MiB/s per Nitro NVMe SSD is below what such disks write, so the model is not flattered",
    "assumption",
)
NVME_DISK_READ: Final = Rate(2000.0, "MiB/s per disk", NVME_DISK_WRITE.source, "assumption")

# --- FSx for Lustre PERSISTENT_2 (SSD) --------------------------------------------------------------------------------
FSX_SOURCE: Final = (
    "Amazon FSx for Lustre User Guide, Performance characteristics of SSD and HDD storage classes "
    "(docs.aws.amazon.com/fsx/latest/LustreGuide/ssd-storage.html), per TiB provisioned"
)


@dataclass(frozen=True)
class LustreTier:
    """What one PERSISTENT_2 throughput tier provides per TiB of storage."""

    per_unit_mb_s: int
    network_baseline_mb_s: float
    network_burst_mb_s: float | None
    disk_baseline_mb_s: float
    disk_burst_mb_s: float | None
    cache_gib: float
    """Server RAM cache, GiB per TiB."""


LUSTRE_PERSISTENT_2: Final[dict[int, LustreTier]] = {
    125: LustreTier(125, 320, 1300, 125, 500, 3.4),
    250: LustreTier(250, 640, 1300, 250, 500, 6.8),
    500: LustreTier(500, 1300, None, 500, None, 13.7),
    1000: LustreTier(1000, 2600, None, 1000, None, 27.3),
}

# --- Container images -----------------------------------------------------------------------------------------------
IMAGE_PULL: Final = Rate(
    17.5e3 / 300,
    "MB/s",
    "AWS Machine Learning Blog, Reducing container cold start times using SOCI index on DLAMI and DLC (2026): "
    '"Standard Docker image pulls of 15-20 GB can take 4-6 minutes per instance", the midpoint 17.5 GB / 300 s; '
    "read in republished copies",
    "second-hand",
)
PARALLEL_PULL_SAVING: Final = Rate(
    0.5,
    "of the pull time",
    "aws-samples/karpenter-blueprints blueprints/soci-snapshotter/README.md: SOCI parallel pull/unpack (nodeadm "
    'FastImagePull) reduces image pull time "by up to 50%"; the best case the authors report',
    "second-hand",
)
IMAGE_GC_HIGH_THRESHOLD_PERCENT: Final = 85
"""kubelet's ``imageGCHighThresholdPercent`` default: an unused image stays on the node until its disk passes 85 %
(Kubernetes kubelet configuration reference), so a running node keeps the image it ran."""

# --- CPU ------------------------------------------------------------------------------------------------------------
SHA256_PER_CORE: Final = Rate(
    1000.0,
    "MiB/s per core",
    "SHA-256 with the SHA extensions (OpenSSL through hashlib) on one core; `make bench BENCH_ARGS=cold-start` "
    "prints this machine's rate beside it (about 950 MiB/s on the 2-core development box)",
    "assumption",
)
HASH_THREADS: Final = 4
"""Threads the artifact tools hash files on (artifacts/uploader.py, artifacts/downloader.py), fewer where the process
sees fewer CPUs: hashlib drops the GIL on large updates, so each thread is one core's SHA-256."""
HF_SHARD_GB: Final = Rate(
    5.0,
    "GB per file",
    "Hugging Face transformers' default max_shard_size of save_pretrained: the largest file of a checkpoint, "
    "hashed after its download ends",
    "published",
)

# --- Kubernetes / KEDA reaction -------------------------------------------------------------------------------------
HPA_SYNC_SECONDS: Final = Rate(
    15.0,
    "s",
    "kube-controller-manager --horizontal-pod-autoscaler-sync-period default (Kubernetes, Horizontal Pod Autoscaling)",
    "published",
)
