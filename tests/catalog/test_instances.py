"""Tests of the accelerator/instance catalog: every entry self-consistent, REFERENCE.md §5 figures kept,
look-ups and their error messages."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from inference_platform import catalog
from inference_platform.catalog import CatalogError, InstanceType

ALL_TYPES = [catalog.CATALOG[n] for n in catalog.known_instance_types()]
ACCELERATED = [t for t in ALL_TYPES if t.is_accelerated]

# What the brief and issue 3 ask the catalog to hold.
REQUIRED = [
    *(f"{fam}.{size}" for fam in ("g5", "g6", "g6e") for size in ("xlarge", "2xlarge", "4xlarge", "8xlarge")),
    *(f"{fam}.{size}" for fam in ("g5", "g6", "g6e") for size in ("12xlarge", "16xlarge", "24xlarge", "48xlarge")),
    "p4d.24xlarge",
    "p5.48xlarge",
    "p5en.48xlarge",
    "p6-b200.48xlarge",
    "inf2.xlarge",
    "inf2.8xlarge",
    "inf2.24xlarge",
    "inf2.48xlarge",
    "trn1.2xlarge",
    "trn1.32xlarge",
    *(f"{fam}.{size}" for fam in ("m7i", "m6i") for size in ("large", "xlarge", "2xlarge")),
]

# REFERENCE.md §5 instance table: name, accelerators, vCPU, RAM GiB, Gbps, $/h (rounded there).
REFERENCE_INSTANCES = [
    ("p5.48xlarge", 8, 192, 2048, 3200, 55.04),
    ("p5en.48xlarge", 8, 192, 2048, 3200, 63.296),
    ("p6-b200.48xlarge", 8, 192, 2048, 3200, 113.93),
    ("p4d.24xlarge", 8, 96, 1152, 400, 21.96),
    ("g5.xlarge", 1, 4, 16, 2.5, 1.006),
    ("g5.12xlarge", 4, 48, 192, 40, 5.672),
    ("g5.48xlarge", 8, 192, 768, 100, 16.288),
    ("g6.xlarge", 1, 4, 16, 2.5, 0.805),
    ("g6.12xlarge", 4, 48, 192, 40, 4.602),
    ("g6.48xlarge", 8, 192, 768, 100, 13.350),
    ("g6e.xlarge", 1, 4, 32, 2.5, 1.861),
    ("g6e.12xlarge", 4, 48, 384, 100, 10.493),
    ("g6e.48xlarge", 8, 192, 1536, 400, 30.131),
    ("inf2.xlarge", 1, 4, 16, None, 0.758),
    ("inf2.8xlarge", 1, 32, 128, None, 1.968),
    ("inf2.24xlarge", 6, 96, 384, None, 6.491),
    ("inf2.48xlarge", 12, 192, 768, 100, 12.981),
    ("trn1.32xlarge", 16, 128, 512, 800, 21.50),
]

# REFERENCE.md §5 chip table: label, memory, bandwidth GB/s, dense BF16, dense FP8.
REFERENCE_CHIPS = [
    ("h100", 80, 3350, 989, 1979),
    ("h200", 141, 4800, 989, 1979),
    ("b200", 180, 8000, 2250, 4500),
    ("a100", 40, 1555, 312, None),
    ("l40s", 48, 864, 362, 733),
    ("l4", 24, 300, 121, 242),
    ("a10g", 24, 600, None, None),
    ("inferentia2", 32, 820 * 2**30 / 1e9, 190, 190),
    ("trainium1", 32, 820 * 2**30 / 1e9, 190, 190),
]

EFA_BY_DEFAULT = {
    "p4d.24xlarge": 4,
    "p5.48xlarge": 32,
    "p5en.48xlarge": 16,
    "p6-b200.48xlarge": 8,
    "trn1.32xlarge": 8,
}
FP8_ARCHITECTURES = {"sm89", "sm90", "sm100"}


def test_every_required_type_is_catalogued() -> None:
    missing = sorted(set(REQUIRED) - set(catalog.known_instance_types()))
    assert missing == []


@pytest.mark.parametrize("t", ALL_TYPES, ids=lambda t: t.name)
def test_entry_is_self_consistent(t: InstanceType) -> None:
    assert t.price_per_hour_usd > 0 and t.vcpu > 0 and t.ram_gib > 0 and t.network_gbps > 0
    assert t.price_date == catalog.PRICE_DATE == "2026-07-20"
    assert t.name == f"{t.family}.{t.size}"
    assert t.ami_types and len(set(t.ami_types)) == len(t.ami_types)
    assert (t.efa_interfaces > 0) == t.efa_capable == catalog.is_efa_capable(t.name)


@pytest.mark.parametrize("t", [t for t in ALL_TYPES if t.vendor == "nvidia"], ids=lambda t: t.name)
def test_nvidia_entries(t: InstanceType) -> None:
    assert t.resource_name == catalog.RESOURCE_NVIDIA_GPU == "nvidia.com/gpu"
    assert t.ami_types[0] == catalog.AMI_AL2023_NVIDIA
    assert all(a.endswith("_NVIDIA") for a in t.ami_types)
    assert t.architecture in {"sm80", "sm86", "sm89", "sm90", "sm100"}
    assert t.neuron_cores == 0
    assert t.max_tensor_parallel == t.accelerator_count


@pytest.mark.parametrize("t", catalog.instances_by_vendor("neuron"), ids=lambda t: t.name)
def test_neuron_entries(t: InstanceType) -> None:
    assert t.resource_name == catalog.RESOURCE_NEURON_DEVICE == "aws.amazon.com/neuron"
    assert t.ami_types == (catalog.AMI_AL2023_NEURON,)
    assert t.architecture == "neuron-v2"
    # inf2 and trn1 chips each carry two NeuronCore-v2; TP shards over cores.
    assert t.neuron_cores == 2 * t.accelerator_count == t.max_tensor_parallel


@pytest.mark.parametrize("t", catalog.instances_by_vendor("none"), ids=lambda t: t.name)
def test_general_purpose_entries(t: InstanceType) -> None:
    assert t.accelerator is None and t.accelerator_count == 0 and t.accelerator_model is None
    assert t.resource_name is None and t.precisions == frozenset()
    assert t.ami_types[0] == catalog.AMI_AL2023_STANDARD
    assert t.price_per_accelerator_hour_usd is None
    assert not t.efa_capable


@pytest.mark.parametrize("t", ACCELERATED, ids=lambda t: t.name)
def test_accelerator_facts_per_type(t: InstanceType) -> None:
    assert t.accelerator is not None
    assert catalog.is_label_value(t.accelerator.model)
    assert t.accelerator_memory_gb == t.accelerator.memory_gb * t.accelerator_count
    assert t.price_per_accelerator_hour_usd == pytest.approx(t.price_per_hour_usd / t.accelerator_count)
    # FP8 needs Ada, Hopper or Blackwell tensor cores; FP4 needs Blackwell.
    assert (catalog.FP8 in t.precisions) == (t.architecture in FP8_ARCHITECTURES)
    assert (catalog.FP4 in t.precisions) == (t.architecture == "sm100")
    assert {catalog.BF16, catalog.FP16} <= t.precisions


@pytest.mark.parametrize(("name", "count", "vcpu", "ram", "gbps", "price"), REFERENCE_INSTANCES)
def test_reference_instance_figures(
    name: str, count: int, vcpu: int, ram: int, gbps: float | None, price: float
) -> None:
    t = catalog.instance(name)
    assert (t.accelerator_count, t.vcpu, t.ram_gib) == (count, vcpu, ram)
    assert t.price_per_hour_usd == pytest.approx(price, abs=0.0051)
    if gbps is not None:
        assert t.network_gbps == gbps


@pytest.mark.parametrize(("label", "memory", "bandwidth", "bf16", "fp8"), REFERENCE_CHIPS)
def test_reference_chip_figures(
    label: str, memory: float, bandwidth: float, bf16: float | None, fp8: float | None
) -> None:
    chip = catalog.accelerator(label)
    assert chip.memory_gb == memory
    assert chip.memory_bandwidth_gbs == pytest.approx(bandwidth)
    assert (chip.bf16_dense_tflops, chip.fp8_dense_tflops) == (bf16, fp8)


def test_efa_by_default_types_are_exactly_the_multi_node_types() -> None:
    assert {t.name: t.efa_interfaces for t in ALL_TYPES if t.efa_by_default} == EFA_BY_DEFAULT


def test_efa_capable_types_are_the_multi_node_types_and_large_g_sizes() -> None:
    # AWS: g5/g6/g6e from 8xlarge take EFA (eksctl's EFASupported, HyperPod's efa counts).
    large_g = {
        f"{fam}.{size}"
        for fam in ("g5", "g6", "g6e")
        for size in ("8xlarge", "12xlarge", "16xlarge", "24xlarge", "48xlarge")
    }
    assert {t.name for t in ALL_TYPES if t.efa_capable} == set(EFA_BY_DEFAULT) | large_g


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("g6.xlrge", "g6.xlarge"),
        ("p5.48xl", "p5.48xlarge"),
        ("inf2.48xlarg", "inf2.48xlarge"),
        ("p6-b200", "p6-b200.48xlarge"),
    ],
)
def test_unknown_instance_names_close_matches_and_lists_known(name: str, expected: str) -> None:
    with pytest.raises(CatalogError) as err:
        catalog.instance(name)
    message = str(err.value)
    assert f"unknown instance type {name!r}" in message
    assert f"did you mean {expected}" in message
    assert "known: " in message and "trn1.32xlarge" in message


def test_unknown_name_without_close_match_still_lists_known() -> None:
    with pytest.raises(CatalogError, match=r"unknown instance type 'zzz': known: g5\.12xlarge"):
        catalog.instance("zzz")


def test_catalog_error_is_both_lookup_and_value_error() -> None:
    for kind in (LookupError, ValueError):
        with pytest.raises(kind):
            catalog.instance("x1.nope")


def test_instance_is_exact_and_passes_instances_through() -> None:
    # EC2 refuses anything but the lowercase name, so the catalog does too, naming the right one.
    with pytest.raises(CatalogError, match=r"did you mean p5\.48xlarge"):
        catalog.instance(" P5.48XLARGE ")
    t = catalog.instance("p5.48xlarge")
    assert catalog.instance(t) is t


def test_family_lists_members_smallest_first() -> None:
    members = catalog.family("g6e")
    assert all(t.family == "g6e" for t in members)
    assert [t.size for t in members] == [
        "xlarge",
        "2xlarge",
        "4xlarge",
        "8xlarge",
        "16xlarge",
        "12xlarge",
        "24xlarge",
        "48xlarge",
    ]
    assert {t.name for t in catalog.family("trn1")} == {"trn1.2xlarge", "trn1.32xlarge"}


def test_unknown_family_names_close_match() -> None:
    with pytest.raises(CatalogError, match=r"unknown instance family 'g6f': did you mean g6, g6e\?"):
        catalog.family("g6f")


def test_instances_by_vendor_partitions_the_catalog() -> None:
    parts = [catalog.instances_by_vendor(v) for v in catalog.VENDORS]
    names = [t.name for part in parts for t in part]
    assert sorted(names) == list(catalog.known_instance_types())
    assert {t.accelerator_model for t in catalog.instances_by_vendor("neuron")} == {"inferentia2", "trainium1"}
    with pytest.raises(CatalogError, match="did you mean nvidia"):
        catalog.instances_by_vendor("nvidai")


@pytest.mark.parametrize(
    ("name", "precision", "expected"),
    [
        ("g5.xlarge", "fp8", False),  # A10G (sm86): no FP8 tensor cores
        ("p4d.24xlarge", "fp8", False),  # A100 (sm80)
        ("g6.xlarge", "fp8", True),  # L4 (sm89)
        ("g6e.xlarge", "fp8", True),  # L40S (sm89)
        ("p5.48xlarge", "fp8", True),
        ("p5.48xlarge", "fp4", False),
        ("p6-b200.48xlarge", "fp4", True),
        ("g5.xlarge", "int4_awq", True),
        ("inf2.xlarge", "bf16", True),
        ("inf2.xlarge", "int8_weight_only", True),
        ("inf2.xlarge", "fp8", False),
        ("trn1.32xlarge", "int4_awq", False),
        ("m7i.large", "bf16", False),
    ],
)
def test_supports_precision(name: str, precision: str, expected: bool) -> None:
    assert catalog.supports_precision(name, precision) is expected


def test_unknown_precision_is_an_error_not_false() -> None:
    with pytest.raises(CatalogError, match="did you mean fp8"):
        catalog.supports_precision("p5.48xlarge", "fp88")


def test_dense_tflops_picks_the_rate_the_precision_runs_at() -> None:
    h100 = catalog.accelerator("h100")
    assert h100.dense_tflops("fp8") == 1979
    assert h100.dense_tflops("int8") == 1979
    assert h100.dense_tflops("int4_awq") == h100.dense_tflops("bf16") == 989  # weight-only: 16-bit math
    assert catalog.accelerator("b200").dense_tflops("fp4") == 9000
    assert catalog.accelerator("a10g").dense_tflops("bf16") is None


def test_unknown_accelerator_label() -> None:
    with pytest.raises(CatalogError, match="did you mean h100"):
        catalog.accelerator("h10")


@pytest.mark.parametrize(
    ("names", "expected"),
    [
        ("p5.48xlarge", 32),
        (["p5.48xlarge", "p5en.48xlarge"], 16),
        (["p5en.48xlarge", "p6-b200.48xlarge"], 8),
        (["g6e.48xlarge", "g6e.24xlarge"], 2),
        (["p5.48xlarge", "g6e.xlarge"], 0),
        ("inf2.48xlarge", 0),
    ],
)
def test_max_efa_interfaces_is_what_every_type_takes(names: str | list[str], expected: int) -> None:
    assert catalog.max_efa_interfaces(names) == expected


def test_max_efa_interfaces_needs_a_type() -> None:
    with pytest.raises(CatalogError):
        catalog.max_efa_interfaces([])


def test_pool_vendor() -> None:
    assert catalog.pool_vendor(["g6.xlarge", "g6.2xlarge", "g5.xlarge"]) == "nvidia"
    assert catalog.pool_vendor("trn1.32xlarge") == "neuron"
    with pytest.raises(CatalogError, match=r"g6\.xlarge=nvidia, inf2\.xlarge=neuron"):
        catalog.pool_vendor(["g6.xlarge", "inf2.xlarge"])
    with pytest.raises(CatalogError, match="unknown instance type"):
        catalog.pool_vendor(["g6.xlarge", "g7.xlarge"])


def test_total_accelerators_examples() -> None:
    assert catalog.total_accelerators("p5.48xlarge", 3) == 24
    assert catalog.total_accelerators("inf2.48xlarge", 2) == 24
    assert catalog.total_accelerators("m7i.large", 5) == 0
    with pytest.raises(ValueError, match="max_nodes"):
        catalog.total_accelerators("p5.48xlarge", -1)


@given(st.sampled_from(ALL_TYPES), st.integers(min_value=0, max_value=10_000))
def test_total_accelerators_is_nodes_times_count(t: InstanceType, nodes: int) -> None:
    total = catalog.total_accelerators(t.name, nodes)
    assert total == nodes * t.accelerator_count
    assert catalog.total_accelerators(t.name, nodes + 1) >= total


@pytest.mark.parametrize(("value", "ok"), [("h100", True), ("neuron-v2", True), ("-x", False), ("a" * 64, False)])
def test_is_label_value(value: str, ok: bool) -> None:
    assert catalog.is_label_value(value) is ok


def test_inconsistent_entries_are_refused() -> None:
    with pytest.raises(ValueError, match="vendor 'neuron' does not match"):
        InstanceType(
            name="g9.xlarge",
            vendor="neuron",
            accelerator=catalog.L4,
            accelerator_count=1,
            vcpu=4,
            ram_gib=16,
            network_gbps=10,
            efa_interfaces=0,
            efa_by_default=True,
            price_per_hour_usd=1.0,
            ami_types=(catalog.AMI_AL2023_NVIDIA,),
        )
