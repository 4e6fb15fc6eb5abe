"""Cold start: the time from a scale-up decision to a replica that serves, phase by phase.

Pure data and arithmetic, no Pulumi. A scale-up that needs a new node goes through five phases; each is a
``Phase`` whose seconds are ``measured`` (run here, conditions stated) or ``modelled`` (a published figure
or an assumption, with its source):

1. node launch by the provisioner (only when no running node has a free slot);
2. image pull (the ~20 GB Triton + TensorRT-LLM image), with or without lazy loading;
3. weights staged onto the node: from the FSx cache (its provisioned throughput shared by the pods that
   start together) or downloaded from S3 through ``inferctl artifacts`` (the measured figure), each
   limited by what the node can write (EBS gp3 throughput, or the RAID0 of local NVMe disks) and by the
   copy itself (a single ``cp -R`` stream);
4. engine load: the server reads the staged engine back from the node's disk into accelerator memory;
5. warm-up: engine deserialisation, CUDA graphs / Neuron load and Triton readiness (modelled).

Sources
- Node launch: Karpenter watches unschedulable pods and calls EC2 Fleet directly, pod-pending to
  node-Ready "typically under 60 seconds"; the cluster autoscaler polls every 10 s and grows a managed
  group's ASG, "3 to 5 minutes on AWS EKS with standard AMIs" (zop.dev, "Cluster Autoscaler vs Karpenter
  in production"; techplained.aptechsolutions.io measured 47 s vs 3 min 58 s on identical clusters).
  Large GPU nodes add their own bring-up (NVIDIA/Neuron device plugins, EFA): ``GPU_NODE_EXTRA_S`` is an
  assumption (modelled), not a measurement.
- Image pull: AWS, "Reducing container cold start times using SOCI index on DLAMI and DLC" (AWS Machine
  Learning Blog, 2026): "Standard Docker image pulls of 15-20 GB can take 4-6 minutes per instance", i.e.
  17.5 GB in 300 s = ``IMAGE_PULL_MB_S`` at the midpoint. Lazy loading (SOCI index) starts the container
  with only the files it reads first; ``LAZY_PULL_FRACTION`` is an assumption. SOCI is not the default on
  EKS AMIs (awslabs ai-on-eks, "Using SOCI snapshotter": "currently isn't the default in EKS AMIs"; it is
  installed by user data), so no shipped stack turns it on and the plan shows both figures.
- Instance storage and EBS limits: AWS DescribeInstanceTypes as vendored by moto 5.2.5
  (``moto/ec2/resources/instance_types.json.gz``: ``InstanceStorageInfo``, ``EbsOptimizedInfo``
  baseline throughput); ``INSTANCE_DISKS`` below. gp3: 125 MiB/s and 3,000 IOPS without extra charge,
  up to 1,000 MiB/s (launch-template ``Throughput`` 125-1000) at 0.25 MiB/s per provisioned IOPS (EC2 API
  reference, ``LaunchTemplateEbsBlockDeviceRequest``).
- Local NVMe: Karpenter v1.14.1 ``EC2NodeClass.spec.instanceStorePolicy: RAID0`` "configures a RAID-0
  array that includes all ephemeral NVMe instance storage disks. The containerd and kubelet state
  directories ... will then use the ephemeral storage" (pkg/apis/v1/ec2nodeclass.go); nodeadm sets
  ``spec.instance.localStorage.strategy: RAID0`` for it (pkg/providers/amifamily/bootstrap/nodeadm.go),
  which a managed group's AL2023 NodeConfig sets directly. ``NVME_DISK_MIB_S`` per disk is an assumption
  (modelled, conservative for Nitro SSDs); the array is capped by nothing else here.
- FSx for Lustre PERSISTENT_2: throughput = storage TiB x perUnitStorageThroughput MB/s (AWS FSx for
  Lustre user guide, "Aggregate throughput"); shared by every pod that stages at once.
- S3 download: measured here (``S3_MEASURED``): ``make bench`` (``python -m bench cold-start``) times
  ``inference_platform.artifacts.download`` of a synthetic engine from moto's ThreadedMotoServer on 127.0.0.1, the
  median of its repetitions. It measures the library (parallel ranged GETs, SHA-256 of every byte,
  atomic writes) on a 2-core machine, not S3 or a node's network: on a node the smaller of it and the
  node's network is used.
- A single ``cp -R`` stream: ``SINGLE_STREAM_MIB_S`` is an assumption (one 1-CPU reader/writer on Lustre).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Final, Literal

Basis = Literal["measured", "modelled"]
Provisioner = Literal["karpenter", "managed"]
Source = Literal["fsx", "download"]

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

IMAGE_PULL_MB_S: Final = 17.5e3 / 300
"""MB/s: AWS's 15-20 GB in 4-6 minutes without lazy loading, at the midpoint (17.5 GB / 300 s)."""
IMAGE_SOURCE: Final = "AWS ML blog (SOCI on DLAMI/DLC): 15-20 GB pulls take 4-6 min without lazy loading"
LAZY_PULL_FRACTION: Final = 0.25
"""Assumed share of the full pull a lazily loaded (SOCI) start waits for."""
DEFAULT_IMAGE_GB: Final = 20.0
"""The Triton + TensorRT-LLM image (REFERENCE §1/node_pools: ~20 GB)."""

GP3_BASE_MIB_S: Final = 125.0
GP3_MAX_MIB_S: Final = 1000.0
GP3_BASE_IOPS: Final = 3000
GP3_MIB_S_PER_IOPS: Final = 0.25
NVME_DISK_MIB_S: Final = 1000.0
"""Assumed sequential write of one NVMe instance-store disk (conservative for Nitro SSDs)."""
SINGLE_STREAM_MIB_S: Final = 400.0
"""Assumed throughput of one ``cp`` stream (one CPU) from Lustre."""
PARALLEL_COPY_STREAMS: Final = 8
"""Files the FSx stage init container copies at once (components/serving/pod.py)."""
WARMUP_S: Final = 90.0
"""Assumed engine deserialisation + CUDA graph capture + readiness after the weights are in memory."""


@dataclass(frozen=True)
class Disks:
    """Instance storage and EBS baseline of one instance type (AWS DescribeInstanceTypes via moto 5.2.5)."""

    nvme_count: int
    nvme_gb: int
    ebs_baseline_mb_s: float
    network_gbps: float


INSTANCE_DISKS: Final[dict[str, Disks]] = {
    "p5.48xlarge": Disks(8, 3800, 10000.0, 3200),
    "p5en.48xlarge": Disks(8, 3800, 12500.0, 3200),
    "p6-b200.48xlarge": Disks(8, 3800, 12500.0, 3200),
    "p4d.24xlarge": Disks(8, 1000, 2375.0, 400),
    "g5.xlarge": Disks(1, 250, 87.5, 2.5),
    "g6.xlarge": Disks(1, 250, 125.0, 2.5),
    "g6.2xlarge": Disks(1, 450, 250.0, 5),
    "g6e.xlarge": Disks(1, 250, 125.0, 2.5),
    "g6e.2xlarge": Disks(1, 450, 250.0, 5),
    "g6e.12xlarge": Disks(2, 1900, 2500.0, 100),
    "g6.12xlarge": Disks(4, 940, 2500.0, 40),
    "g6.48xlarge": Disks(8, 940, 7500.0, 100),
    "g6e.24xlarge": Disks(2, 1900, 3750.0, 200),
    "g6e.48xlarge": Disks(4, 1900, 7500.0, 400),
    "g5.12xlarge": Disks(1, 3800, 2000.0, 40),
    "g5.48xlarge": Disks(2, 3800, 2375.0, 100),
    "inf2.xlarge": Disks(0, 0, 156.25, 2.5),
    "inf2.8xlarge": Disks(0, 0, 1250.0, 25),
    "inf2.24xlarge": Disks(0, 0, 3750.0, 50),
    "inf2.48xlarge": Disks(0, 0, 7500.0, 100),
    "trn1.32xlarge": Disks(4, 1900, 10000.0, 800),
}


@dataclass(frozen=True)
class Measured:
    """A figure measured here, with the conditions it was measured under."""

    mib_s: float
    conditions: str


S3_MEASURED: Final = Measured(
    mib_s=24.0,
    conditions="median of 5 downloads (19-36 MiB/s) of a 969 MiB synthetic engine through inference_platform.artifacts."
    "download from moto 5.2.5 ThreadedMotoServer on 127.0.0.1, shared 2-CPU machine, Python 3.11.7, "
    "2026-12-03 (`make bench BENCH_ARGS=cold-start`); moto reads the whole object for every ranged GET, so "
    "this bounds the library here from below, not S3",
)


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
    lazy_loading: bool = False
    model_gib: float
    source: Source
    fsx_mb_s: float | None = None
    """Provisioned FSx throughput (MB/s), for source fsx."""
    starts_at_once: int = 1
    """Pods that stage at the same time (sharing FSx, and the node's disk when on one node)."""
    pods_per_node: int = 1
    local_nvme: bool = False
    """The node's ephemeral storage is the RAID0 of its NVMe disks (else the EBS root volume)."""
    ebs_mib_s: float = GP3_BASE_MIB_S
    copy_streams: int = 1
    s3: Measured = S3_MEASURED
    warmup_s: float = WARMUP_S


@dataclass(frozen=True)
class ColdStart:
    inputs: StartInputs
    phases: tuple[Phase, ...]
    existing_node_s: float
    """Seconds when a running node has a free slot (no node launch)."""
    new_node_s: float
    """Seconds when the scale-up needs a new node."""
    lazy_new_node_s: float
    """new_node_s with lazy image loading (the other choice from inputs.lazy_loading)."""
    notes: tuple[str, ...] = field(default=())

    def to_dict(self) -> dict[str, object]:
        return {
            "newNodeSeconds": round(self.new_node_s),
            "existingNodeSeconds": round(self.existing_node_s),
            "withLazyLoadingSeconds": round(self.lazy_new_node_s),
            "lazyLoading": self.inputs.lazy_loading,
            "phases": [
                {"name": p.name, "seconds": round(p.seconds, 1), "basis": p.basis, "source": p.source}
                for p in self.phases
            ],
            "notes": list(self.notes),
        }


def disks(instance_type: str) -> Disks | None:
    return INSTANCE_DISKS.get(instance_type)


def node_write_mib_s(inputs: StartInputs) -> tuple[float, str]:
    """What the node's ephemeral storage writes (MiB/s) and why."""
    d = disks(inputs.instance_type)
    if inputs.local_nvme and d is not None and d.nvme_count > 0:
        return (
            d.nvme_count * NVME_DISK_MIB_S,
            f"RAID0 of {d.nvme_count} NVMe disks x {NVME_DISK_MIB_S:g} MiB/s (assumed)",
        )
    ebs = inputs.ebs_mib_s
    why = f"gp3 at {ebs:g} MiB/s"
    if d is not None and d.ebs_baseline_mb_s * 1e6 / MIB < ebs:
        ebs = d.ebs_baseline_mb_s * 1e6 / MIB
        why += f", capped by {inputs.instance_type}'s EBS baseline {d.ebs_baseline_mb_s:g} MB/s"
    return ebs, why


def model(inputs: StartInputs) -> ColdStart:
    """The cold start of ``inputs``, phase by phase."""
    phases: list[Phase] = []
    notes: list[str] = []
    big = inputs.accelerators_per_node >= 8
    if inputs.provisioner == "karpenter":
        launch, src = KARPENTER_LAUNCH_S, KARPENTER_SOURCE
    else:
        launch, src = MANAGED_LAUNCH_S, MANAGED_SOURCE
    if big:
        launch += GPU_NODE_EXTRA_S
        src += f"; +{GPU_NODE_EXTRA_S:g} s assumed for an 8-accelerator node's device plugins/EFA"
    phases.append(Phase("node launch", launch, "modelled", src))

    pull_full = inputs.image_gb * 1e3 / IMAGE_PULL_MB_S
    pull_lazy = pull_full * LAZY_PULL_FRACTION
    pull = pull_lazy if inputs.lazy_loading else pull_full
    how = "lazy loading (SOCI), assumed 25% of the full pull" if inputs.lazy_loading else "full pull"
    phases.append(Phase("image pull", pull, "modelled", f"{inputs.image_gb:g} GB, {how}: {IMAGE_SOURCE}"))

    write, write_why = node_write_mib_s(inputs)
    # The pods on one node share its disk; the pods starting together share FSx.
    per_pod_disk = write / max(1, min(inputs.pods_per_node, inputs.starts_at_once))
    if inputs.source == "fsx":
        fsx = (inputs.fsx_mb_s or 0.0) * 1e6 / MIB
        share = fsx / max(1, inputs.starts_at_once)
        copy = SINGLE_STREAM_MIB_S * max(1, inputs.copy_streams)
        rate = min(share, per_pod_disk, copy)
        limits = {
            f"FSx {inputs.fsx_mb_s or 0:,.0f} MB/s / {inputs.starts_at_once} pod(s) staging at once": share,
            f"node disk ({write_why}) / pods sharing it": per_pod_disk,
            f"{inputs.copy_streams} copy stream(s) x {SINGLE_STREAM_MIB_S:g} MiB/s (assumed)": copy,
        }
        basis: Basis = "modelled"
        src = f"{inputs.model_gib:.1f} GiB at {rate:,.0f} MiB/s, the least of " + "; ".join(
            f"{k} = {v:,.0f}" for k, v in limits.items()
        )
    else:
        d = disks(inputs.instance_type)
        network = (d.network_gbps * 1e9 / 8 / MIB) if d else float("inf")
        measured = inputs.s3.mib_s if inputs.s3.mib_s > 0 else float("inf")
        rate = min(measured, network, per_pod_disk)
        basis = "measured" if rate == measured else "modelled"
        src = (
            f"{inputs.model_gib:.1f} GiB at {rate:,.0f} MiB/s, the least of inferctl artifacts from S3 "
            f"({inputs.s3.mib_s:,.0f} MiB/s measured: {inputs.s3.conditions}); node network "
            f"{network:,.0f} MiB/s; node disk ({write_why}) / pods sharing it = {per_pod_disk:,.0f}"
        )
        if inputs.s3.mib_s <= 0:
            notes.append("S3 download rate not measured: the node's network and disk bound it")
    stage = inputs.model_gib * 1024 / rate if rate > 0 and math.isfinite(rate) else 0.0
    phases.append(Phase(f"weights from {'FSx' if inputs.source == 'fsx' else 'S3'}", stage, basis, src))

    read = write  # the engine is read back from the same disk (no page cache assumed)
    phases.append(
        Phase(
            "engine load", inputs.model_gib * 1024 / read, "modelled", f"read back at {read:,.0f} MiB/s ({write_why})"
        )
    )
    phases.append(
        Phase("warm-up", inputs.warmup_s, "modelled", "assumed: engine deserialisation, CUDA graphs, readiness")
    )
    total = sum(p.seconds for p in phases)
    other_pull = pull_full if inputs.lazy_loading else pull_lazy
    return ColdStart(
        inputs=inputs,
        phases=tuple(phases),
        existing_node_s=total - launch,
        new_node_s=total,
        lazy_new_node_s=total - pull + other_pull,
        notes=tuple(notes),
    )


def gp3_iops_for(throughput_mib_s: float) -> int:
    """The least gp3 IOPS that allow ``throughput_mib_s`` (0.25 MiB/s per IOPS), at least the free 3,000."""
    return max(GP3_BASE_IOPS, math.ceil(throughput_mib_s / GP3_MIB_S_PER_IOPS))


def headroom(cold_start_s: float, ramp_per_hour: float) -> float:
    """Fraction of spare capacity a replica needs so the load a ramp adds during one cold start fits:
    the load grows by ``ramp_per_hour`` (fraction of itself per hour) for ``cold_start_s``."""
    return ramp_per_hour * cold_start_s / 3600.0


def max_target_share(cold_start_s: float, ramp_per_hour: float) -> float:
    """The highest share of a replica's batch the autoscaler may target and still absorb the ramp."""
    return 1.0 / (1.0 + headroom(cold_start_s, ramp_per_hour))


def text(cs: ColdStart) -> list[str]:
    """Human lines: the total and each phase with its basis."""
    lines = [
        f"cold start: {cs.new_node_s / 60:.1f} min with a new node, {cs.existing_node_s / 60:.1f} min on a running "
        f"node ({'with' if cs.inputs.lazy_loading else 'without'} lazy image loading; "
        f"{'without' if cs.inputs.lazy_loading else 'with'} it (SOCI, modelled): {cs.lazy_new_node_s / 60:.1f} min)"
    ]
    for p in cs.phases:
        lines.append(f"  {p.name:<16} {p.seconds:7.0f} s  {p.basis:<8}  {p.source}")
    lines += [f"  note: {n}" for n in cs.notes]
    return lines
