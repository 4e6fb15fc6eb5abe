"""Accelerator and EC2 instance catalog: pure data and look-ups, no Pulumi.

One catalog answers every node question the platform asks: which AMI type, label, taint resource and
EFA interfaces a pool gets, whether a precision runs on its accelerators, how many accelerators a pool
can hold and what an hour of it costs. Accelerator figures are per chip; instance figures per node.

Sources
- Chips: REFERENCE.md §5 (NVIDIA datasheets; AWS Inferentia2/Trainium1 pages). Dense figures only.
- Instances (vCPU, RAM, accelerators, EFA): AWS EC2 instance-type docs, as mirrored in eksctl's
  ``pkg/utils/instance/instance_types.go`` (EFA support) and SageMaker HyperPod's instance constants
  (vCPU, RAM, maximum EFA interfaces); REFERENCE.md §5 for the sizes it lists.
- Network: the baseline bandwidth EC2 DescribeInstanceTypes reports, as generated into
  aws/karpenter-provider-aws ``pkg/providers/instancetype/zz_generated.bandwidth.go``. Small sizes
  burst above it ("up to N Gbps"); a plan must not count on the burst.
- Prices: ``PRICE_SOURCE`` below, dated ``PRICE_DATE``; every REFERENCE.md §5 price agrees with it.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final, Literal

Vendor = Literal["nvidia", "neuron", "none"]
VENDOR_NVIDIA: Final = "nvidia"
VENDOR_NEURON: Final = "neuron"
VENDOR_NONE: Final = "none"  # general-purpose nodes (system node group)
VENDORS: Final[tuple[str, ...]] = (VENDOR_NVIDIA, VENDOR_NEURON, VENDOR_NONE)

PRICE_DATE: Final = "2026-07-20"
PRICE_REGION: Final = "us-east-1"
PRICE_SOURCE: Final = (
    "AWS Price List API, us-east-1 on-demand Linux, as generated into aws/karpenter-provider-aws "
    "pkg/providers/pricing/zz_generated.pricing_aws.go at 2026-07-20T13:44:30Z"
)

# Kubernetes extended resources the device plugins advertise (NVIDIA k8s-device-plugin; AWS Neuron
# device plugin, which exposes whole devices and, separately, their NeuronCores; AWS EFA plugin).
RESOURCE_NVIDIA_GPU: Final = "nvidia.com/gpu"
RESOURCE_NEURON_DEVICE: Final = "aws.amazon.com/neuron"
RESOURCE_NEURON_CORE: Final = "aws.amazon.com/neuroncore"
RESOURCE_EFA: Final = "vpc.amazonaws.com/efa"

# EKS managed node group AMI types (EKS API ``amiType``).
AMI_AL2023_NVIDIA: Final = "AL2023_x86_64_NVIDIA"
AMI_BOTTLEROCKET_NVIDIA: Final = "BOTTLEROCKET_x86_64_NVIDIA"
AMI_AL2023_NEURON: Final = "AL2023_x86_64_NEURON"
AMI_AL2023_STANDARD: Final = "AL2023_x86_64_STANDARD"
AMI_BOTTLEROCKET_STANDARD: Final = "BOTTLEROCKET_x86_64"

# Precisions, named as the serving stack names them. Weight-only formats keep 16-bit activations.
FP32: Final = "fp32"
FP16: Final = "fp16"
BF16: Final = "bf16"
FP8: Final = "fp8"  # W8A8 FP8 (e4m3); needs FP8 tensor cores (sm89+)
FP4: Final = "fp4"  # NVFP4; Blackwell only
INT8: Final = "int8"  # W8A8 SmoothQuant
INT8_WEIGHT_ONLY: Final = "int8_weight_only"
INT4_AWQ: Final = "int4_awq"  # W4A16, AWQ block scales
INT4_WEIGHT_ONLY: Final = "int4_weight_only"  # W4A16
PRECISIONS: Final[tuple[str, ...]] = (
    FP32,
    FP16,
    BF16,
    FP8,
    FP4,
    INT8,
    INT8_WEIGHT_ONLY,
    INT4_AWQ,
    INT4_WEIGHT_ONLY,
)

# TensorRT-LLM support matrix: Ampere (sm80/sm86) FP32/FP16/BF16/INT8/INT4; Ada (sm89) and Hopper
# (sm90) add FP8; Blackwell (sm100) adds FP4 (TensorRT Model Optimizer support matrix).
_AMPERE: Final = frozenset({FP32, FP16, BF16, INT8, INT8_WEIGHT_ONLY, INT4_AWQ, INT4_WEIGHT_ONLY})
_ADA_HOPPER: Final = _AMPERE | {FP8}
_BLACKWELL: Final = _ADA_HOPPER | {FP4}
# NeuronCore-v2 (Inferentia2, Trainium1) as the Neuron serving path (NxD Inference) uses it: BF16/FP16
# and int8 weight-only quantization. The silicon also has a configurable FP8 (AWS Inf2/Trn1 pages), but
# NxD Inference documents FP8 serving for Trn2 only, so FP8 is not offered here.
_NEURON_V2: Final = frozenset({FP32, FP16, BF16, INT8_WEIGHT_ONLY})

# Kubernetes label values: at most 63 characters, alphanumeric at both ends.
_LABEL_VALUE = re.compile(r"^(?:[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)$")


class CatalogError(LookupError, ValueError):
    """An instance type, family, vendor or precision the catalog does not know.

    Both a LookupError (it is a failed look-up) and a ValueError (it is bad input from settings).
    """


@dataclass(frozen=True, kw_only=True)
class Accelerator:
    """One accelerator chip. Throughput figures are dense (no structured sparsity); None = unpublished."""

    model: str
    """Short label, usable as the ``accelerator-model`` Kubernetes label value (``h100``, ``l4``...)."""
    vendor: Vendor
    name: str
    architecture: str
    """GPU compute capability (``sm80``, ``sm86``, ``sm89``, ``sm90``, ``sm100``) or ``neuron-v2``."""
    memory_gb: float
    """Device memory as the vendor states it (80 for H100). Sizing reads it as 10^9 bytes, which is at
    or below what the device really offers (nvidia-smi: H100 81,559 MiB, L4 23,034 MiB), so plans err
    on the safe side."""
    memory_bandwidth_gbs: float
    """Peak device-memory bandwidth, 10^9 bytes/s."""
    bf16_dense_tflops: float | None
    fp8_dense_tflops: float | None
    int8_dense_tops: float | None
    fp4_dense_tflops: float | None
    precisions: frozenset[str]
    neuron_cores: int = 0
    """NeuronCores per device (0 for GPUs). Neuron shards tensor parallelism over NeuronCores."""

    @property
    def memory_bytes(self) -> float:
        return self.memory_gb * 1e9

    @property
    def memory_gib(self) -> float:
        return self.memory_bytes / 2**30

    @property
    def tensor_parallel_units(self) -> int:
        """Tensor-parallel ranks one device holds: 1 GPU, or its NeuronCores."""
        return self.neuron_cores or 1

    def dense_tflops(self, precision: str) -> float | None:
        """Peak dense math rate the matrix multiplies of ``precision`` run at (None: unpublished).

        Weight-only formats dequantize to 16 bits, so they run at the BF16 rate. FP32 returns None:
        no plan here serves in FP32, and a missing compute term only loosens a lower bound.
        """
        _check_precision(precision)
        if precision == FP8:
            return self.fp8_dense_tflops
        if precision == FP4:
            return self.fp4_dense_tflops
        if precision == INT8:
            return self.int8_dense_tops
        if precision == FP32:
            return None
        return self.bf16_dense_tflops


# REFERENCE.md §5 unless noted. INT8 dense TOPS: NVIDIA datasheets (sparse figure / 2).
A10G: Final = Accelerator(
    model="a10g",
    vendor=VENDOR_NVIDIA,
    name="NVIDIA A10G",
    architecture="sm86",
    memory_gb=24,
    memory_bandwidth_gbs=600,
    bf16_dense_tflops=None,  # REFERENCE §5: not published for the AWS-only A10G variant
    fp8_dense_tflops=None,
    int8_dense_tops=None,
    fp4_dense_tflops=None,
    precisions=_AMPERE,
)
L4: Final = Accelerator(
    model="l4",
    vendor=VENDOR_NVIDIA,
    name="NVIDIA L4",
    architecture="sm89",
    memory_gb=24,
    memory_bandwidth_gbs=300,
    bf16_dense_tflops=121,
    fp8_dense_tflops=242,
    int8_dense_tops=242,
    fp4_dense_tflops=None,
    precisions=_ADA_HOPPER,
)
L40S: Final = Accelerator(
    model="l40s",
    vendor=VENDOR_NVIDIA,
    name="NVIDIA L40S",
    architecture="sm89",
    memory_gb=48,
    memory_bandwidth_gbs=864,
    bf16_dense_tflops=362,
    fp8_dense_tflops=733,
    int8_dense_tops=733,
    fp4_dense_tflops=None,
    precisions=_ADA_HOPPER,
)
A100_40GB: Final = Accelerator(
    model="a100",
    vendor=VENDOR_NVIDIA,
    name="NVIDIA A100 SXM 40GB",
    architecture="sm80",
    memory_gb=40,
    memory_bandwidth_gbs=1555,
    bf16_dense_tflops=312,
    fp8_dense_tflops=None,
    int8_dense_tops=624,
    fp4_dense_tflops=None,
    precisions=_AMPERE,
)
H100: Final = Accelerator(
    model="h100",
    vendor=VENDOR_NVIDIA,
    name="NVIDIA H100 SXM",
    architecture="sm90",
    memory_gb=80,
    memory_bandwidth_gbs=3350,
    bf16_dense_tflops=989,
    fp8_dense_tflops=1979,
    int8_dense_tops=1979,
    fp4_dense_tflops=None,
    precisions=_ADA_HOPPER,
)
H200: Final = Accelerator(
    model="h200",
    vendor=VENDOR_NVIDIA,
    name="NVIDIA H200 SXM",
    architecture="sm90",
    memory_gb=141,
    memory_bandwidth_gbs=4800,
    bf16_dense_tflops=989,
    fp8_dense_tflops=1979,
    int8_dense_tops=1979,
    fp4_dense_tflops=None,
    precisions=_ADA_HOPPER,
)
B200: Final = Accelerator(
    model="b200",
    vendor=VENDOR_NVIDIA,
    name="NVIDIA B200",
    architecture="sm100",
    memory_gb=180,
    memory_bandwidth_gbs=8000,
    bf16_dense_tflops=2250,
    fp8_dense_tflops=4500,
    int8_dense_tops=4500,
    fp4_dense_tflops=9000,
    precisions=_BLACKWELL,
)
# REFERENCE §5 gives Neuron bandwidth as 820 GiB/s per chip; stored here in 10^9 bytes/s.
_NEURON_BANDWIDTH_GBS: Final = 820 * 2**30 / 1e9
INFERENTIA2: Final = Accelerator(
    model="inferentia2",
    vendor=VENDOR_NEURON,
    name="AWS Inferentia2",
    architecture="neuron-v2",
    memory_gb=32,
    memory_bandwidth_gbs=_NEURON_BANDWIDTH_GBS,
    bf16_dense_tflops=190,
    fp8_dense_tflops=190,
    int8_dense_tops=None,
    fp4_dense_tflops=None,
    precisions=_NEURON_V2,
    neuron_cores=2,  # NeuronCore-v2 x2 per Inferentia2 chip (AWS Neuron architecture docs)
)
TRAINIUM1: Final = Accelerator(
    model="trainium1",
    vendor=VENDOR_NEURON,
    name="AWS Trainium",
    architecture="neuron-v2",
    memory_gb=32,
    memory_bandwidth_gbs=_NEURON_BANDWIDTH_GBS,
    bf16_dense_tflops=190,
    fp8_dense_tflops=190,
    int8_dense_tops=None,
    fp4_dense_tflops=None,
    precisions=_NEURON_V2,
    neuron_cores=2,  # NeuronCore-v2 x2 per Trainium1 chip (AWS Neuron architecture docs)
)
ACCELERATORS: Final[tuple[Accelerator, ...]] = (
    A10G,
    L4,
    L40S,
    A100_40GB,
    H100,
    H200,
    B200,
    INFERENTIA2,
    TRAINIUM1,
)

_AMI_TYPES: Final[dict[str, tuple[str, ...]]] = {
    VENDOR_NVIDIA: (AMI_AL2023_NVIDIA, AMI_BOTTLEROCKET_NVIDIA),
    VENDOR_NEURON: (AMI_AL2023_NEURON,),
    VENDOR_NONE: (AMI_AL2023_STANDARD, AMI_BOTTLEROCKET_STANDARD),
}
_RESOURCE_NAMES: Final[dict[str, str]] = {
    VENDOR_NVIDIA: RESOURCE_NVIDIA_GPU,
    VENDOR_NEURON: RESOURCE_NEURON_DEVICE,
}


@dataclass(frozen=True, kw_only=True)
class InstanceType:
    """One EC2 instance type as a node: its accelerators, host, network and price."""

    name: str
    vendor: Vendor
    accelerator: Accelerator | None
    accelerator_count: int
    vcpu: int
    ram_gib: int
    network_gbps: float
    """Baseline (sustained) network bandwidth; for EFA types the aggregate of all network cards."""
    efa_interfaces: int
    """Most EFA interfaces the type takes (0: no EFA)."""
    efa_by_default: bool
    """Built for multi-node collectives (p4d, p5, p5en, p6-b200, trn1.32xlarge): pools get EFA unless told
    otherwise, and with it a node group and cluster placement group per zone (the first zone unless
    more are listed). g5/g6/g6e from 8xlarge also take EFA, but splitting a small-model pool into zonal
    groups buys nothing it needs, so they get it only when a pool asks."""
    price_per_hour_usd: float
    """us-east-1 on-demand, dated ``PRICE_DATE`` (``PRICE_SOURCE``)."""
    ami_types: tuple[str, ...]
    """EKS AMI types that run this type, the platform's default first."""

    def __post_init__(self) -> None:
        problems = []
        if (self.accelerator is None) != (self.accelerator_count == 0):
            problems.append("an accelerator needs a positive count, and a count needs an accelerator")
        expected_vendor = self.accelerator.vendor if self.accelerator else VENDOR_NONE
        if self.vendor != expected_vendor:
            problems.append(f"vendor {self.vendor!r} does not match the accelerator's {expected_vendor!r}")
        if self.efa_by_default and self.efa_interfaces == 0:
            problems.append("efa_by_default needs efa_interfaces > 0")
        if min(self.vcpu, self.ram_gib) <= 0 or self.network_gbps <= 0 or self.price_per_hour_usd <= 0:
            problems.append("vcpu, ram_gib, network_gbps and price_per_hour_usd must be positive")
        if problems:
            raise ValueError(f"instance type {self.name}: " + "; ".join(problems))

    @property
    def family(self) -> str:
        return self.name.split(".", 1)[0]

    @property
    def size(self) -> str:
        return self.name.split(".", 1)[1]

    @property
    def is_accelerated(self) -> bool:
        return self.accelerator is not None

    @property
    def accelerator_model(self) -> str | None:
        return self.accelerator.model if self.accelerator else None

    @property
    def architecture(self) -> str | None:
        return self.accelerator.architecture if self.accelerator else None

    @property
    def resource_name(self) -> str | None:
        """Extended resource a pod requests for this type's accelerators (None: no accelerator)."""
        return _RESOURCE_NAMES.get(self.vendor)

    @property
    def neuron_cores(self) -> int:
        """NeuronCores on the node (``aws.amazon.com/neuroncore`` capacity); 0 on GPU nodes."""
        return self.accelerator.neuron_cores * self.accelerator_count if self.accelerator else 0

    @property
    def max_tensor_parallel(self) -> int:
        """Largest tensor-parallel degree one node offers: its GPUs, or its NeuronCores."""
        return self.accelerator.tensor_parallel_units * self.accelerator_count if self.accelerator else 0

    @property
    def memory_per_accelerator_gb(self) -> float:
        return self.accelerator.memory_gb if self.accelerator else 0.0

    @property
    def accelerator_memory_gb(self) -> float:
        """All accelerator memory on the node."""
        return self.memory_per_accelerator_gb * self.accelerator_count

    @property
    def precisions(self) -> frozenset[str]:
        return self.accelerator.precisions if self.accelerator else frozenset()

    @property
    def efa_capable(self) -> bool:
        return self.efa_interfaces > 0

    @property
    def price_date(self) -> str:
        return PRICE_DATE

    @property
    def price_per_accelerator_hour_usd(self) -> float | None:
        return self.price_per_hour_usd / self.accelerator_count if self.accelerator_count else None


def _family(
    family: str,
    accelerator: Accelerator | None,
    rows: Iterable[tuple[str, int, int, int, float, int, float]],
    *,
    efa_by_default: bool = False,
    ami_types: tuple[str, ...] | None = None,
) -> list[InstanceType]:
    """Instance types of one family from rows of (size, accelerators, vCPU, RAM GiB, Gbps, EFA, $/h)."""
    vendor = accelerator.vendor if accelerator else VENDOR_NONE
    return [
        InstanceType(
            name=f"{family}.{size}",
            vendor=vendor,
            accelerator=accelerator,
            accelerator_count=count,
            vcpu=vcpu,
            ram_gib=ram,
            network_gbps=gbps,
            efa_interfaces=efa,
            efa_by_default=efa_by_default,
            price_per_hour_usd=price,
            ami_types=ami_types or _AMI_TYPES[vendor],
        )
        for size, count, vcpu, ram, gbps, efa, price in rows
    ]


# Columns: size, accelerators, vCPU, RAM GiB, baseline Gbps, max EFA interfaces, $/h (see module doc).
_INSTANCE_TYPES: Final[tuple[InstanceType, ...]] = (
    *_family(
        "g5",
        A10G,
        [
            ("xlarge", 1, 4, 16, 2.5, 0, 1.006),
            ("2xlarge", 1, 8, 32, 5, 0, 1.212),
            ("4xlarge", 1, 16, 64, 10, 0, 1.624),
            ("8xlarge", 1, 32, 128, 25, 1, 2.448),
            ("12xlarge", 4, 48, 192, 40, 1, 5.672),
            ("16xlarge", 1, 64, 256, 25, 1, 4.096),
            ("24xlarge", 4, 96, 384, 50, 1, 8.144),
            ("48xlarge", 8, 192, 768, 100, 1, 16.288),
        ],
    ),
    *_family(
        "g6",
        L4,
        [
            ("xlarge", 1, 4, 16, 2.5, 0, 0.8048),
            ("2xlarge", 1, 8, 32, 5, 0, 0.9776),
            ("4xlarge", 1, 16, 64, 10, 0, 1.3232),
            ("8xlarge", 1, 32, 128, 25, 1, 2.0144),
            ("12xlarge", 4, 48, 192, 40, 1, 4.6016),
            ("16xlarge", 1, 64, 256, 25, 1, 3.3968),
            ("24xlarge", 4, 96, 384, 50, 1, 6.6752),
            ("48xlarge", 8, 192, 768, 100, 1, 13.3504),
        ],
    ),
    *_family(
        "g6e",
        L40S,
        [
            ("xlarge", 1, 4, 32, 2.5, 0, 1.861),
            ("2xlarge", 1, 8, 64, 5, 0, 2.24208),
            ("4xlarge", 1, 16, 128, 20, 0, 3.00424),
            ("8xlarge", 1, 32, 256, 25, 1, 4.52856),
            ("12xlarge", 4, 48, 384, 100, 1, 10.49264),
            ("16xlarge", 1, 64, 512, 35, 1, 7.57719),
            ("24xlarge", 4, 96, 768, 200, 2, 15.06559),
            ("48xlarge", 8, 192, 1536, 400, 4, 30.13118),
        ],
    ),
    *_family("p4d", A100_40GB, [("24xlarge", 8, 96, 1152, 400, 4, 21.957642)], efa_by_default=True),
    *_family("p5", H100, [("48xlarge", 8, 192, 2048, 3200, 32, 55.04)], efa_by_default=True),
    *_family("p5en", H200, [("48xlarge", 8, 192, 2048, 3200, 16, 63.296)], efa_by_default=True),
    # Only AL2023 here: Bottlerocket's NVIDIA variants are not confirmed for B200 in our sources.
    *_family(
        "p6-b200",
        B200,
        [("48xlarge", 8, 192, 2048, 3200, 8, 113.9328)],
        efa_by_default=True,
        ami_types=(AMI_AL2023_NVIDIA,),
    ),
    *_family(
        "inf2",
        INFERENTIA2,
        [
            ("xlarge", 1, 4, 16, 2.083, 0, 0.7582),
            ("8xlarge", 1, 32, 128, 16.667, 0, 1.96786),
            ("24xlarge", 6, 96, 384, 50, 0, 6.49063),
            ("48xlarge", 12, 192, 768, 100, 0, 12.98127),
        ],
    ),
    *_family("trn1", TRAINIUM1, [("2xlarge", 1, 8, 32, 3.125, 0, 1.34375)]),
    *_family("trn1", TRAINIUM1, [("32xlarge", 16, 128, 512, 800, 8, 21.50)], efa_by_default=True),
    # General purpose, for the system node group.
    *_family(
        "m7i",
        None,
        [
            ("large", 0, 2, 8, 0.781, 0, 0.1008),
            ("xlarge", 0, 4, 16, 1.562, 0, 0.2016),
            ("2xlarge", 0, 8, 32, 3.125, 0, 0.4032),
        ],
    ),
    *_family(
        "m6i",
        None,
        [
            ("large", 0, 2, 8, 0.781, 0, 0.096),
            ("xlarge", 0, 4, 16, 1.562, 0, 0.192),
            ("2xlarge", 0, 8, 32, 3.125, 0, 0.384),
        ],
    ),
)
CATALOG: Final[dict[str, InstanceType]] = {t.name: t for t in _INSTANCE_TYPES}


def known_instance_types() -> tuple[str, ...]:
    """Every instance type the catalog knows, sorted."""
    return tuple(sorted(CATALOG))


def known_families() -> tuple[str, ...]:
    """Every instance family of the catalog (``p5``, ``g6e``, ``inf2`` ...), sorted."""
    return tuple(sorted({t.family for t in CATALOG.values()}))


def instance(name: str | InstanceType) -> InstanceType:
    """The catalog entry for ``name``; an InstanceType passes through unchanged.

    Exact match only: EC2 takes lowercase names, so ``P5.48xlarge`` is refused with the right spelling.
    """
    if isinstance(name, InstanceType):
        return name
    found = CATALOG.get(name) if isinstance(name, str) else None
    if found is None:
        raise CatalogError(_unknown("instance type", str(name), known_instance_types()))
    return found


def family(name: str) -> tuple[InstanceType, ...]:
    """Every catalogued type of a family (``g6e``), smallest first."""
    members = [t for t in CATALOG.values() if t.family == name]
    if not members:
        raise CatalogError(_unknown("instance family", name, known_families()))
    return tuple(sorted(members, key=lambda t: (t.accelerator_count, t.vcpu, t.ram_gib)))


def instances_by_vendor(vendor: str) -> tuple[InstanceType, ...]:
    """Every catalogued type of ``nvidia``, ``neuron`` or ``none`` (general purpose), by name."""
    if vendor not in VENDORS:
        raise CatalogError(_unknown("accelerator vendor", vendor, VENDORS))
    return tuple(CATALOG[n] for n in known_instance_types() if CATALOG[n].vendor == vendor)


def accelerator(model: str) -> Accelerator:
    """The chip behind an ``accelerator-model`` label value (``h100``)."""
    for chip in ACCELERATORS:
        if chip.model == model:
            return chip
    raise CatalogError(_unknown("accelerator model", model, tuple(c.model for c in ACCELERATORS)))


def is_efa_capable(name: str | InstanceType) -> bool:
    """Whether the instance type has an EFA interface (raises CatalogError for a type the catalog does not know)."""
    return instance(name).efa_capable


def supports_precision(name: str | InstanceType, precision: str) -> bool:
    """True when the type's accelerators run ``precision``; an unknown precision is an error, not False."""
    _check_precision(precision)
    return precision in instance(name).precisions


def max_efa_interfaces(names: str | InstanceType | Iterable[str | InstanceType]) -> int:
    """EFA interfaces a launch template can attach on every listed type: the smallest maximum (0: some
    type has no EFA). One launch template serves the whole pool, so the weakest type decides."""
    types = _as_instances(names)
    if not types:
        raise CatalogError("max_efa_interfaces needs at least one instance type")
    return min(t.efa_interfaces for t in types)


def pool_vendor(names: str | InstanceType | Iterable[str | InstanceType]) -> Vendor:
    """The one vendor of a pool's types; mixing vendors is an error (one AMI, taint and plugin per pool)."""
    types = _as_instances(names)
    vendors = sorted({t.vendor for t in types})
    if len(vendors) != 1:
        detail = ", ".join(f"{t.name}={t.vendor}" for t in types) or "no instance types"
        raise CatalogError(f"a pool needs instance types of exactly one vendor, got {detail}")
    return types[0].vendor


def total_accelerators(name: str | InstanceType, max_nodes: int) -> int:
    """Accelerators a pool holds at its maximum size (what accelerator budgets limit)."""
    if max_nodes < 0:
        raise ValueError(f"max_nodes must be >= 0, got {max_nodes}")
    return instance(name).accelerator_count * max_nodes


def is_label_value(value: str) -> bool:
    """True when ``value`` is a valid Kubernetes label value (what accelerator model labels must be)."""
    return bool(_LABEL_VALUE.match(value))


def _as_instances(names: str | InstanceType | Iterable[str | InstanceType]) -> list[InstanceType]:
    if isinstance(names, str | InstanceType):
        return [instance(names)]
    return [instance(n) for n in names]


def _check_precision(precision: str) -> None:
    if precision not in PRECISIONS:
        raise CatalogError(_unknown("precision", precision, PRECISIONS))


def _unknown(kind: str, name: str, known: Iterable[str]) -> str:
    known = tuple(known)
    close = difflib.get_close_matches(name.strip().lower(), known, n=3, cutoff=0.6)
    hint = f"did you mean {', '.join(close)}? " if close else ""
    return f"unknown {kind} {name!r}: {hint}known: {', '.join(known)}"
