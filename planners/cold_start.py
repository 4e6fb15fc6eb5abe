"""Cold start: the time from a scale-up decision to a replica that serves, phase by phase, at published rates.

Pure data and arithmetic, no Pulumi. Every rate comes from ``catalog/transfer_rates.py`` (S3, EC2 networking, FSx
for Lustre, EBS gp3, instance store, image pulls: each cited, with its basis) and ``catalog/instance_io.py`` (each
instance type's network card, EBS bandwidth and disks, DescribeInstanceTypes as moto vendors it). Nothing here is
measured on this machine: the local S3 emulator's rate (``make bench BENCH_ARGS=cold-start``) tests the download
code only. A figure the stack measured on its own deploy (``coldStart.figures``) replaces the model's and is
shown as ``configured``.

A scale-up goes one of two ways:

- **on a running node** with a free slot: detection, weights, verification (FSx path), engine load, warm-up. The
  node keeps the image it already runs (kubelet collects unused images only past ``imageGCHighThresholdPercent``,
  85 %), so there is no pull;
- **on a new node**: detection, node launch, image pull (``full``, or ``parallel`` with nodeadm's
  ``FastImagePull``), then the same as on a running node.

``standby`` replicas (placeholder pods holding a replica's accelerators at a negative priority, running the
serving image, ``components/autoscaling/standby.py``) turn the first ``standby`` replicas of a scale-up into
running-node starts: the scheduler preempts a placeholder for the replica, and the autoscaler replaces the
placeholder's node in the background.

Phases:

1. **detection**: a scrape of the server's gauges and the HPA's sync period, each at most once before the scale-up is
   decided. KEDA's ``pollingInterval`` is not in this path: with ``minReplicaCount`` above 0 and no trigger's
   ``useCachedMetrics``, each HPA request for the metric reads the scalers live (kedacore/keda v2.20.2
   pkg/scaling/scale_handler.go ``GetScaledObjectMetrics``), and the polling loop only activates from zero (the
   webhook warns that pollingInterval "is only relevant when minReplicaCount = 0 or idleReplicaCount = 0 or
   useCachedMetrics is enabled", apis/keda/v1alpha1/scaledobject_webhook.go; tests/data/upstream/
   keda_v2.20.2_fallback.json). A scale-up is decided with replicas running, so the loop never delays it.
2. **node launch**: Karpenter (EC2 Fleet, "typically under 60 seconds" to Ready) or the cluster autoscaler
   growing a managed group (3-5 min), plus an assumed bring-up of an 8-accelerator node's device plugins and EFA.
3. **image pull**: ``IMAGE_PULL`` (15-20 GB in 4-6 min, second-hand), halved at best by parallel pull; none with
   ``cached`` (the image on a volume restored from a snapshot, ``catalog/image_cache.py``) when fast snapshot restore
   initializes the volume at creation, else the unpacked image at the provisioned initialization rate.
4. **weights**: ``download``: ``inferctl artifacts download`` with ``concurrency`` ranged GETs at 85 MB/s each
   (S3's own guidance), no faster than the pod's share of network card 0, the node's disk, or the threads that
   hash each file as it lands (``HASH_THREADS``, no more than the init container's CPUs; SHA-256 per core); then
   the hash of the last file, on one thread. ``fsx``: the file system's
   disk baseline (PERSISTENT_2 MB/s/TiB x TiB) shared by the pods staging at once, the copy streams and the node's
   disk.
5. **verify** (``fsx`` only): the server hashes every copied file (``artifacts.download`` over a directory without
   a journal: four threads); a download's journal spares it.
6. **engine load**: the LLM API reads the checkpoint back from the node's disk (it reads a local path).
7. **warm-up**: model construction, CUDA graph capture, readiness (an assumption).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final, Literal

from inference_platform.catalog import image_cache, image_sizes, instance_io
from inference_platform.catalog import transfer_rates as rates

Basis = Literal["published", "second-hand", "assumption", "configured", "derived"]
Provisioner = Literal["karpenter", "managed"]
Source = Literal["fsx", "download"]
ImagePull = Literal["full", "parallel", "cached"]
Path = Literal["running node", "new node"]

MIB: Final = 1024 * 1024
GIB: Final = 1024 * MIB

KARPENTER_LAUNCH_S: Final = 60.0
KARPENTER_SOURCE: Final = (
    'Karpenter pod-pending to node-Ready "typically under 60 seconds" (zop.dev; 47 s measured by techplained)'
)
MANAGED_LAUNCH_S: Final = 240.0
MANAGED_SOURCE: Final = (
    "cluster autoscaler + managed node group: 3-5 min on EKS (zop.dev); 3 min 58 s measured (techplained)"
)
GPU_NODE_EXTRA_S: Final = 120.0
"""Assumed extra bring-up of an 8-accelerator node (driver/device plugin/EFA readiness)."""
DEFAULT_IMAGE_GB: Final = 20.0
"""The Triton + TensorRT-LLM image, compressed (~20 GB)."""
FAST_IMAGE_PULL_MIN_VCPUS: Final = 4
FAST_IMAGE_PULL_MIN_MEMORY_GIB: Final = 7
"""nodeadm ignores FastImagePull below 4 vCPUs or 7 GiB (awslabs/amazon-eks-ami v20260724
nodeadm/internal/containerd/config.go UseSOCISnapshotter)."""
FAST_IMAGE_PULL_MIN_DISK_MIB_S: Final = 600.0
"""nodeadm's documentation (v20260724 nodeadm/doc/examples.md "Enabling fast image pull"): "We recommend at least
600MiB/s throughput. Below that value, you may see longer image pull times with this flag."."""

GP3_BASE_MIB_S: Final = rates.GP3_BASELINE.value
GP3_MAX_MIB_S: Final = rates.GP3_MAXIMUM.value
GP3_BASE_IOPS: Final = rates.GP3_BASE_IOPS
GP3_MIB_S_PER_IOPS: Final = rates.GP3_MIB_S_PER_IOPS
SINGLE_STREAM_MIB_S: Final = 400.0
"""Assumed throughput of one ``cp`` stream (one CPU) from Lustre."""
PARALLEL_COPY_STREAMS: Final = 8
"""Files the FSx stage init container copies at once (components/serving/pod.py)."""
DEFAULT_DOWNLOAD_CONCURRENCY: Final = 10
"""``inferctl artifacts download --concurrency`` default (artifacts/transfer.py DEFAULT_MAX_CONCURRENCY)."""
VERIFY_THREADS: Final = rates.HASH_THREADS
"""Threads ``artifacts.download`` hashes files with (artifacts/checksums.py ``hash_threads``)."""
WARMUP_S: Final = 90.0
"""Assumed model construction + CUDA graph capture + readiness after the weights are read."""
DEFAULT_SCRAPE_S: Final = 15.0


@dataclass(frozen=True)
class Disks:
    """Instance storage, EBS baseline and the pod-facing network card of one instance type
    (``catalog/instance_io.py``)."""

    nvme_count: int
    nvme_gb: int
    ebs_baseline_mb_s: float
    network_gbps: float
    """Network card 0's baseline: what a pod's flows share."""


def disks(instance_type: str) -> Disks | None:
    io = instance_io.instance_io(instance_type)
    if io is None:
        return None
    return Disks(io.nvme_disks, io.nvme_disk_gb, io.ebs_baseline_mb_s, io.default_card_baseline_gbps)


@dataclass(frozen=True)
class Figures:
    """Figures the stack measured on its own deploy (``coldStart.figures``); each replaces the model's phase."""

    node_launch_s: float | None = None
    image_pull_s: float | None = None
    weights_mib_s: float | None = None
    warmup_s: float | None = None


@dataclass(frozen=True)
class Phase:
    name: str
    seconds: float
    basis: Basis
    source: str


@dataclass(frozen=True, kw_only=True)
class StartInputs:
    """What one stack's scale-up goes through (built from its settings by inference_platform.settings.cold_start)."""

    provisioner: Provisioner
    instance_type: str
    accelerators_per_node: int
    image_gb: float = DEFAULT_IMAGE_GB
    image_pull: ImagePull = "full"
    """``parallel``: nodeadm's FastImagePull (SOCI parallel pull/unpack), where it takes effect. ``cached``: the
    image on the node's cache volume (``catalog/image_cache.py``)."""
    cache_init_mib_s: float | None = None
    """``cached`` only: the volume initialization rate (MiB/s); None: fast snapshot restore."""
    model_gib: float
    source: Source
    fsx_mb_s: float | None = None
    """The FSx file system's disk baseline (MB/s: TiB x perUnitStorageThroughput), for source fsx."""
    fsx_cache_gib: float | None = None
    """The file servers' RAM cache (GiB: TiB x the tier's GiB per TiB), for source fsx."""
    starts_at_once: int = 1
    """Replicas one scale-up period starts (they share FSx, and a node's disk and card when on one node)."""
    pods_per_node: int = 1
    local_nvme: bool = False
    """The node's ephemeral storage is the RAID0 of its NVMe disks (else the EBS root volume)."""
    ebs_mib_s: float = GP3_BASE_MIB_S
    copy_streams: int = 1
    download_concurrency: int = DEFAULT_DOWNLOAD_CONCURRENCY
    hash_threads: int = VERIFY_THREADS
    """Files the download hashes at once: ``VERIFY_THREADS``, no more than its init container's whole CPUs."""
    warmup_s: float = WARMUP_S
    scrape_s: float = DEFAULT_SCRAPE_S
    standby_replicas: int = 0
    figures: Figures = field(default_factory=Figures)


@dataclass(frozen=True)
class ColdStart:
    inputs: StartInputs
    detection: Phase
    """From the load crossing the target to the scale-up decision (counted in ``scale_up_s``, not in a start)."""
    running: tuple[Phase, ...]
    """A start on a running node with a free slot, from the decision."""
    new: tuple[Phase, ...]
    """A start that needs a new node, from the decision."""
    notes: tuple[str, ...] = field(default=())

    @property
    def running_node_s(self) -> float:
        return sum(p.seconds for p in self.running)

    @property
    def new_node_s(self) -> float:
        return sum(p.seconds for p in self.new)

    @property
    def launch_s(self) -> float:
        return next((p.seconds for p in self.new if p.name == "node launch"), 0.0)

    @property
    def after_launch_s(self) -> float:
        """A new node's start once the node is Ready: what the issue's "launch + 3 minutes" bounds."""
        return self.new_node_s - self.launch_s

    @property
    def standby_covers(self) -> bool:
        """Whether the standby replicas hold a slot for every replica one scale-up period starts."""
        return self.inputs.standby_replicas >= max(1, self.inputs.starts_at_once)

    @property
    def scale_up_s(self) -> float:
        """What one scale-up takes when the running nodes are full, detection included: a new node, unless standby
        replicas cover it. The headroom is derived from this (``headroom``)."""
        start = self.running_node_s if self.standby_covers else self.new_node_s
        return self.detection.seconds + start

    @property
    def scale_up_path(self) -> Path:
        return "running node" if self.standby_covers else "new node"

    def to_dict(self) -> dict[str, object]:
        def phases(ps: tuple[Phase, ...]) -> list[dict[str, object]]:
            return [{"name": p.name, "seconds": round(p.seconds, 1), "basis": p.basis, "source": p.source} for p in ps]

        return {
            "runningNodeSeconds": round(self.running_node_s),
            "newNodeSeconds": round(self.new_node_s),
            "launchSeconds": round(self.launch_s),
            "afterLaunchSeconds": round(self.after_launch_s),
            "detectionSeconds": round(self.detection.seconds),
            "scaleUpSeconds": round(self.scale_up_s),
            "scaleUpPath": self.scale_up_path,
            "imagePull": self.inputs.image_pull,
            "weightsSource": self.inputs.source,
            "standbyReplicas": self.inputs.standby_replicas,
            "detection": phases((self.detection,))[0],
            "runningPhases": phases(self.running),
            "newPhases": phases(self.new),
            "notes": list(self.notes),
        }


def node_write_mib_s(inputs: StartInputs) -> tuple[float, str]:
    """What the node's ephemeral storage writes (MiB/s) and why."""
    d = disks(inputs.instance_type)
    if inputs.local_nvme and d is not None and d.nvme_count > 0:
        per = rates.NVME_DISK_WRITE.value
        return d.nvme_count * per, f"RAID0 of {d.nvme_count} NVMe disks x {per:g} MiB/s (assumption)"
    ebs = inputs.ebs_mib_s
    why = f"gp3 at {ebs:g} MiB/s"
    if d is not None and d.ebs_baseline_mb_s * 1e6 / MIB < ebs:
        ebs = d.ebs_baseline_mb_s * 1e6 / MIB
        why += f", capped by {inputs.instance_type}'s EBS baseline {d.ebs_baseline_mb_s:g} MB/s"
    return ebs, why


def node_read_mib_s(inputs: StartInputs) -> tuple[float, str]:
    """What the node's ephemeral storage reads back (MiB/s) and why."""
    d = disks(inputs.instance_type)
    if inputs.local_nvme and d is not None and d.nvme_count > 0:
        per = rates.NVME_DISK_READ.value
        return d.nvme_count * per, f"RAID0 of {d.nvme_count} NVMe disks x {per:g} MiB/s (assumption)"
    return node_write_mib_s(inputs)


def fast_image_pull_applies(instance_type: str) -> bool:
    """Whether nodeadm honours FastImagePull on ``instance_type`` (at least 4 vCPUs and 7 GiB)."""
    io = instance_io.instance_io(instance_type)
    return (
        io is not None
        and io.vcpus >= FAST_IMAGE_PULL_MIN_VCPUS
        and io.memory_mib >= (FAST_IMAGE_PULL_MIN_MEMORY_GIB * 1024)
    )


def model(inputs: StartInputs) -> ColdStart:
    """The cold start of ``inputs`` on a running node and on a new one, phase by phase."""
    notes: list[str] = []
    fig = inputs.figures
    detection = _detection(inputs)
    launch = _launch(inputs, fig)
    pull = _pull(inputs, fig, notes)
    weights, verify = _weights(inputs, fig, notes)
    read, read_why = node_read_mib_s(inputs)
    load = Phase("engine load", inputs.model_gib * 1024 / read, "assumption" if "assumption" in read_why else "derived",
                 f"{inputs.model_gib:.1f} GiB read back from the node's disk at {read:,.0f} MiB/s ({read_why}); the "
                 "LLM API loads a local path")  # fmt: skip
    if fig.warmup_s is not None:
        warm = Phase("warm-up", fig.warmup_s, "configured", "coldStart.figures.warmupSeconds")
    else:
        warm = Phase("warm-up", inputs.warmup_s, "assumption",
                     "model construction, CUDA graph capture and readiness after the weights are read")  # fmt: skip
    tail = (weights, *((verify,) if verify else ()), load, warm)
    return ColdStart(inputs=inputs, detection=detection, running=tail, new=(launch, pull, *tail), notes=tuple(notes))


def _detection(inputs: StartInputs) -> Phase:
    hpa = rates.HPA_SYNC_SECONDS.value
    seconds = inputs.scrape_s + hpa
    return Phase("detection", seconds, "published",
                 f"scrape {inputs.scrape_s:g} s + HPA sync {hpa:g} s ({rates.HPA_SYNC_SECONDS.source}); KEDA reads the "
                 "scalers at each HPA request, its pollingInterval only activates from zero (kedacore/keda v2.20.2 "
                 "pkg/scaling/scale_handler.go GetScaledObjectMetrics)")  # fmt: skip


def _launch(inputs: StartInputs, fig: Figures) -> Phase:
    if fig.node_launch_s is not None:
        return Phase("node launch", fig.node_launch_s, "configured", "coldStart.figures.nodeLaunchSeconds")
    if inputs.provisioner == "karpenter":
        launch, src = KARPENTER_LAUNCH_S, KARPENTER_SOURCE
    else:
        launch, src = MANAGED_LAUNCH_S, MANAGED_SOURCE
    if inputs.accelerators_per_node >= 8:
        launch += GPU_NODE_EXTRA_S
        src += f"; +{GPU_NODE_EXTRA_S:g} s assumed for an 8-accelerator node's device plugins/EFA"
    return Phase("node launch", launch, "second-hand", src)


def _pull(inputs: StartInputs, fig: Figures, notes: list[str]) -> Phase:
    if fig.image_pull_s is not None:
        return Phase("image pull", fig.image_pull_s, "configured", "coldStart.figures.imagePullSeconds")
    if inputs.image_pull == "cached":
        return _cached(inputs)
    full = inputs.image_gb * 1e3 / rates.IMAGE_PULL.value
    src = f"{inputs.image_gb:g} GB at {rates.IMAGE_PULL.value:,.0f} MB/s ({rates.IMAGE_PULL.source})"
    if inputs.image_pull == "parallel":
        disk, _ = node_write_mib_s(inputs)
        if fast_image_pull_applies(inputs.instance_type) and disk < FAST_IMAGE_PULL_MIN_DISK_MIB_S:
            notes.append(f"coldStart.imagePull parallel is not counted: the node's disk writes {disk:,.0f} MiB/s, below "
                         f"the {FAST_IMAGE_PULL_MIN_DISK_MIB_S:g} MiB/s nodeadm's documentation asks for (slower pulls "
                         "are possible below it); raise nodePools.<pool>.diskThroughputMiBps or use local NVMe")  # fmt: skip
        elif fast_image_pull_applies(inputs.instance_type):
            saving = rates.PARALLEL_PULL_SAVING.value
            return Phase("image pull", full * (1 - saving), "second-hand",
                         f"{src}, less {saving:.0%} with nodeadm FastImagePull ({rates.PARALLEL_PULL_SAVING.source})")  # fmt: skip
        notes.append(f"coldStart.imagePull parallel has no effect on {inputs.instance_type} (nodeadm ignores "
                     f"FastImagePull below {FAST_IMAGE_PULL_MIN_VCPUS} vCPUs or {FAST_IMAGE_PULL_MIN_MEMORY_GIB} GiB)")  # fmt: skip
    return Phase("image pull", full, "second-hand", src)


def _cached(inputs: StartInputs) -> Phase:
    """The image from the node's cache volume: present at boot, read at full speed with fast snapshot restore; at a
    provisioned initialization rate, counted as every block the builder wrote (the unpacked image and its layers:
    ``ctr pull`` keeps both) arriving at that rate (which blocks the engine's start reads first is not published)."""
    if inputs.cache_init_mib_s is None:
        return Phase("image pull", 0.0, "published",
                     "none: the image is on the node's cache volume (coldStart.imageCache), restored from its snapshot "
                     "with fast snapshot restore, \"fully initialized at creation\" while the zone has credits "
                     f"({image_cache.FSR_SOURCE})")  # fmt: skip
    gib = image_sizes.pull_need_gib(image_sizes.SERVING_GPU_IMAGE_GIB)
    return Phase("image pull", gib * 1024 / inputs.cache_init_mib_s, "published",
                 f"none, but the cache volume initializes at {inputs.cache_init_mib_s:g} MiB/s "
                 f"(coldStart.imageCache.initializationRateMiBps; {image_cache.INIT_RATE_SOURCE}): the blocks the "
                 f"snapshot holds, the unpacked image and its compressed layers ({gib:g} GiB, catalog/image_sizes.py), "
                 "at that rate, since the order they arrive in is not the order the engine reads them")  # fmt: skip


def _weights(inputs: StartInputs, fig: Figures, notes: list[str]) -> tuple[Phase, Phase | None]:
    write, write_why = node_write_mib_s(inputs)
    on_node = max(1, min(inputs.pods_per_node, inputs.starts_at_once))
    per_pod_disk = write / on_node
    size_mib = inputs.model_gib * 1024
    label = f"weights from {'FSx' if inputs.source == 'fsx' else 'S3'}"
    if fig.weights_mib_s is not None:
        staged = Phase(label, size_mib / fig.weights_mib_s, "configured",
                       f"{inputs.model_gib:.1f} GiB at coldStart.figures.weightsMiBps {fig.weights_mib_s:g}")  # fmt: skip
    elif inputs.source == "fsx":
        fsx = (inputs.fsx_mb_s or 0.0) * 1e6 / MIB
        share = fsx / max(1, inputs.starts_at_once)
        copy = SINGLE_STREAM_MIB_S * max(1, inputs.copy_streams)
        limits = {
            f"FSx disk baseline {inputs.fsx_mb_s or 0:,.0f} MB/s ({rates.FSX_SOURCE}) / {inputs.starts_at_once} "
            "pod(s) staging at once": share,
            f"node disk ({write_why}) / {on_node} pod(s) on it": per_pod_disk,
            f"{inputs.copy_streams} copy stream(s) x {SINGLE_STREAM_MIB_S:g} MiB/s (assumption)": copy,
        }
        rate = min(limits.values())
        staged = Phase(label, size_mib / rate if rate > 0 else math.inf, "derived",
                       f"{inputs.model_gib:.1f} GiB at {rate:,.0f} MiB/s, the least of "
                       + "; ".join(f"{k} = {v:,.0f}" for k, v in limits.items()))  # fmt: skip
    else:
        staged = _download(inputs, per_pod_disk, write_why, on_node)
    if inputs.source != "fsx":
        return staged, None
    hash_rate = VERIFY_THREADS * rates.SHA256_PER_CORE.value
    read, read_why = node_read_mib_s(inputs)
    rate = min(hash_rate, read)
    verify = Phase("verify", size_mib / rate, "assumption",
                   f"the server hashes every staged file (no download journal): {VERIFY_THREADS} threads x "
                   f"{rates.SHA256_PER_CORE.cite()}, no faster than the disk reads ({read:,.0f} MiB/s, {read_why})")  # fmt: skip
    cache = inputs.fsx_cache_gib or 0.0
    notes.append(f"FSx reads are taken at the disk baseline: the file servers' RAM cache ({cache:,.0f} GiB) "
                 + ("is smaller than the model" if cache < inputs.model_gib else "may hold the model after a first "
                    "read, which this model does not count"))  # fmt: skip
    return staged, verify


def _download(inputs: StartInputs, per_pod_disk: float, write_why: str, on_node: int) -> Phase:
    d = disks(inputs.instance_type)
    size_mib = inputs.model_gib * 1024
    connections = inputs.download_concurrency * rates.S3_PER_CONNECTION.value * 1e6 / MIB
    card = d.network_gbps * 1e9 / 8 / MIB / on_node if d else math.inf
    hashing = inputs.hash_threads * rates.SHA256_PER_CORE.value
    limits = {
        f"{inputs.download_concurrency} ranged GETs x {rates.S3_PER_CONNECTION.value:g} MB/s "
        f"({rates.S3_PER_CONNECTION.basis}: S3 User Guide)": connections,
        f"network card 0 {d.network_gbps:g} Gbps ({instance_io.source()}) / {on_node} pod(s) on the node"
        if d
        else "network card (unknown type)": card,
        f"node disk ({write_why}) / {on_node} pod(s) on it": per_pod_disk,
        f"{inputs.hash_threads} hashing thread(s) x {rates.SHA256_PER_CORE.value:g} MiB/s (assumption)": hashing,
    }
    rate = min(limits.values())
    tail_mib = min(size_mib, rates.HF_SHARD_GB.value * 1e9 / MIB)
    seconds = size_mib / rate + tail_mib / rates.SHA256_PER_CORE.value  # one file is one thread's
    return Phase(
        "weights from S3",
        seconds,
        "derived",
        f"{inputs.model_gib:.1f} GiB at {rate:,.0f} MiB/s, the least of "
        + "; ".join(f"{k} = {v:,.0f}" for k, v in limits.items())
        + f"; then the last file's hash on one thread ({tail_mib / 1024:.1f} GiB, {rates.HF_SHARD_GB.source})",
    )


def gp3_iops_for(throughput_mib_s: float) -> int:
    """The least gp3 IOPS that allow ``throughput_mib_s`` (0.25 MiB/s per IOPS), at least the free 3,000."""
    return max(GP3_BASE_IOPS, math.ceil(throughput_mib_s / GP3_MIB_S_PER_IOPS))


def headroom(cold_start_s: float, ramp_per_hour: float) -> float:
    """Fraction of spare capacity a replica needs so the load a ramp adds during one scale-up fits: the load grows
    by ``ramp_per_hour`` (fraction of itself per hour) for ``cold_start_s``."""
    return ramp_per_hour * cold_start_s / 3600.0


def max_target_share(cold_start_s: float, ramp_per_hour: float) -> float:
    """The highest share of a replica's capacity the autoscaler may target and still absorb the ramp."""
    return 1.0 / (1.0 + headroom(cold_start_s, ramp_per_hour))


TARGET_RUNNING_S: Final = 180.0
"""Issue 31's target for a scale-up on a running node, from the decision: 3 minutes."""
TARGET_AFTER_LAUNCH_S: Final = 180.0
"""Issue 31's target for a scale-up on a new node: the node's launch + 3 minutes."""


@dataclass(frozen=True)
class NotOffered:
    """A cold-start option the issue names that this stack cannot take, and the upstream fact that says why."""

    name: str
    why: str
    source: str


NOT_OFFERED: Final = (
    NotOffered("lazy image loading (SOCI index v2)",
               "the pinned AMI cannot lazy-load through its documented node configuration: nodeadm's one SOCI switch, "
               "FastImagePull, writes parallel_pull_unpack.enable = true, and then the snapshotter skips lazy-load "
               "entirely (it prepares no remote snapshot, so a SOCI index built into the image by `soci convert` "
               "would never be read); NodeConfig has no field for the snapshotter's own config",
               "awslabs/amazon-eks-ami v20260724 nodeadm/internal/containerd/snapshotter/soci-snapshotter.config.toml, "
               "nodeadm/api/v1alpha1/nodeconfig_types.go (tests/data/upstream/amazon_eks_ami_v20260724_fast_image_pull"
               ".json); awslabs/soci-snapshotter v0.15.0 docs/config.md:116 \"When true, lazy-load is skipped "
               "entirely\", snapshot/snapshot.go skipRemoteSnapshotPrepare "
               "(tests/data/upstream/soci_snapshotter_v0.15.0_pull_modes.json)"),
    NotOffered("streaming weight loader",
               "TensorRT-LLM's LLM API reads a local path: its HF loader globs {checkpoint_dir}/*.safetensors (then "
               "*.bin, *.pth) and prefetches them into the page cache, with no S3 or streaming source, so the "
               "weights must be on the node (or FSx) before the engine starts",
               "NVIDIA/TensorRT-LLM tensorrt_llm/_torch/models/checkpoints/hf/weight_loader.py HfWeightLoader."
               "load_weights, read at 149b2213 (a stored copy: the repository is beyond this machine's fetch limit, "
               "so not at the 1.2.1 tag)"),
)  # fmt: skip


def target_lines(cs: ColdStart) -> list[str]:
    """The issue's two targets against this model: met, or what keeps the start above it."""
    running = cs.running_node_s <= TARGET_RUNNING_S
    after = cs.after_launch_s <= TARGET_AFTER_LAUNCH_S
    out = [f"target <= {TARGET_RUNNING_S / 60:g} min on a running node: {'met' if running else 'missed'} "
           f"({cs.running_node_s / 60:.1f} min)",
           f"target <= launch + {TARGET_AFTER_LAUNCH_S / 60:g} min on a new node: {'met' if after else 'missed'} "
           f"(launch + {cs.after_launch_s / 60:.1f} min)"]  # fmt: skip
    if not after:
        new_only = [p for p in cs.new if p.name != "node launch" and p.name not in {r.name for r in cs.running}]
        worst = max(new_only, key=lambda p: p.seconds, default=None)
        blocker = f"; {worst.name} alone takes {worst.seconds:.0f} s" if worst is not None else ""
        cache = worst is not None and worst.name == "image pull" and cs.inputs.image_pull != "cached"
        remedy = (
            "coldStart.imagePull cached (an image cache on a fast-restored snapshot, inferctl image-cache build) "
            "removes it"
            if cache
            else "no option this stack can take removes it (options not offered above)"
        )
        out[-1] += (f"{blocker}: {remedy}; "
                    + ("standby replicas keep the scale-up off this path" if cs.standby_covers else
                       "coldStart.standbyReplicas keeps a scale-up off this path, at the price of the nodes it holds"))  # fmt: skip
    return out


def text(cs: ColdStart) -> list[str]:
    """Human lines: the two paths and each phase with its basis and source."""
    i = cs.inputs
    standby = (f"; {i.standby_replicas} standby replica(s) {'cover' if cs.standby_covers else 'do not cover'} a "
               f"scale-up period's {i.starts_at_once}") if i.standby_replicas else ""  # fmt: skip
    lines = [
        f"cold start from the scale-up decision: {cs.running_node_s / 60:.1f} min on a running node, "
        f"{cs.new_node_s / 60:.1f} min with a new node (launch {cs.launch_s / 60:.1f} + {cs.after_launch_s / 60:.1f} "
        f"min); with {cs.detection.seconds:.0f} s of detection a scale-up takes {cs.scale_up_s / 60:.1f} min on a "
        f"{cs.scale_up_path}{standby}",
        f"  image pull {i.image_pull}, weights from {'FSx' if i.source == 'fsx' else 'S3'}"
        + (f" at concurrency {i.download_concurrency}" if i.source == "download" else ""),
    ]
    new_only = {p.name for p in cs.new} - {p.name for p in cs.running}
    lines.append(
        f"  {cs.detection.name:<16} {cs.detection.seconds:7.0f} s  {cs.detection.basis:<11} [before either]  "
        f"{cs.detection.source}"
    )
    for p in cs.new:
        where = "new node only" if p.name in new_only else "both"
        lines.append(f"  {p.name:<16} {p.seconds:7.0f} s  {p.basis:<11} [{where}]  {p.source}")
    lines += [f"  note: {n}" for n in cs.notes]
    return lines


def figure_problems(figures: Mapping[str, float | None]) -> list[tuple[str, str]]:
    """(field, message) for configured figures that are not finite positive numbers."""
    out = []
    for name, value in figures.items():
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
            out.append((name, f"got {value!r}; expected a finite number > 0"))
    return out
