"""Tests of the model catalog and sizing: REFERENCE.md §6 table values, the decode-floor formula, the
calibration points, and properties of the sizing functions over the whole catalog."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inference_platform import catalog
from inference_platform.catalog import models
from inference_platform.catalog.models import ModelArchitecture, SizingError

KIB = 1024
ARCHS = [models.architecture(n) for n in models.known_architectures()]
ACCELERATED = [t for t in catalog.CATALOG.values() if t.is_accelerated]
LLAMA_8B = models.architecture("Llama-3.1-8B")
MIXTRAL = models.architecture("Mixtral-8x7B")


def _custom(**overrides: Any) -> ModelArchitecture:
    """A small valid dense GQA model; overrides make it invalid or MoE."""
    fields: dict[str, Any] = {
        "name": "custom",
        "layers": 4,
        "hidden_size": 512,
        "attention_heads": 8,
        "kv_heads": 4,
        "head_dim": 64,
        "params_total": 50e6,
    }
    return ModelArchitecture(**(fields | overrides))


@st.composite
def placements(draw: st.DrawFn) -> tuple[ModelArchitecture, catalog.InstanceType, str]:
    """A catalogued model, an accelerated type and a precision that type runs."""
    node = draw(st.sampled_from(ACCELERATED))
    precision = draw(st.sampled_from(sorted(node.precisions)))
    return draw(st.sampled_from(ARCHS)), node, precision


# REFERENCE.md §6: KV cache per token at FP16.
@pytest.mark.parametrize(
    ("name", "kib"),
    [
        ("Llama-3.1-8B", 128),
        ("Llama-3.1-70B", 320),
        ("Llama-3.1-405B", 504),
        ("Mixtral-8x7B", 128),
        ("DeepSeek-V3", 68.6),
    ],
)
def test_kv_bytes_per_token_matches_reference(name: str, kib: float) -> None:
    assert models.kv_bytes_per_token(name, "fp16") / KIB == pytest.approx(kib, abs=0.05)


@pytest.mark.parametrize("arch", ARCHS, ids=lambda a: a.name)
def test_kv_dtype_scales_kv_bytes(arch: ModelArchitecture) -> None:
    fp16 = models.kv_bytes_per_token(arch, "fp16")
    assert models.kv_bytes_per_token(arch, "bf16") == fp16
    assert models.kv_bytes_per_token(arch, "fp8") * 2 == fp16
    assert models.kv_bytes_per_token(arch, "fp32") == 2 * fp16
    with pytest.raises(SizingError, match="unknown KV-cache dtype"):
        models.kv_bytes_per_token(arch, "fp6")


def test_weight_bytes_examples() -> None:
    head = 128_256 * 4096  # Llama 3.1 output head; the input embedding is the same size, untied
    assert models.weight_bytes(LLAMA_8B, "bf16") == pytest.approx(8.03e9 * 2)
    assert models.weight_bytes(LLAMA_8B, "fp32") == pytest.approx(8.03e9 * 4)
    # FP8: body at one byte, embeddings and lm_head kept at BF16.
    assert models.weight_bytes(LLAMA_8B, "fp8") == pytest.approx((8.03e9 - 2 * head) + 2 * head * 2)
    # INT4 AWQ: 4 bits + an FP16 scale per 128 weights.
    assert models.weight_bytes(LLAMA_8B, "int4_awq") == pytest.approx((8.03e9 - 2 * head) * 4.125 / 8 + 4 * head)
    with pytest.raises(SizingError, match="unknown precision"):
        models.weight_bytes(LLAMA_8B, "fp12")


@pytest.mark.parametrize("arch", ARCHS, ids=lambda a: a.name)
def test_weight_bytes_shrink_with_precision(arch: ModelArchitecture) -> None:
    size = {p: models.weight_bytes(arch, p) for p in catalog.PRECISIONS}
    assert size["fp32"] > size["bf16"] == size["fp16"] > size["fp8"] == size["int8"] > size["fp4"] > size["int4_awq"]
    assert size["int8_weight_only"] == size["int8"] and size["int4_weight_only"] == size["int4_awq"]
    # Whatever the overheads, a quantized model never exceeds its stated bytes-per-parameter by much.
    assert arch.params_total <= size["fp8"] <= 1.15 * arch.params_total


def test_moe_parameters_are_derived_from_reference_totals() -> None:
    assert MIXTRAL.expert_params == pytest.approx((46.7e9 - 12.9e9) / 6)
    assert MIXTRAL.dense_params + 2 * MIXTRAL.expert_params == pytest.approx(12.9e9)
    deepseek = models.architecture("DeepSeek-V3")
    assert deepseek.dense_params + 8 * deepseek.expert_params == pytest.approx(37e9)
    assert deepseek.dense_params + 256 * deepseek.expert_params == pytest.approx(671e9)


def test_weight_bytes_read_per_step() -> None:
    head = 32_000 * 4096
    # Batch 1 routes to two of eight experts: the active parameters, minus the input embedding.
    assert models.weight_bytes_read_per_step(MIXTRAL, "bf16", 1) == pytest.approx((12.9e9 - 2 * head) * 2 + head * 2)
    # A large batch touches every expert: all weights but the input embedding table.
    everything = models.weight_bytes(MIXTRAL, "bf16") - head * 2
    assert models.weight_bytes_read_per_step(MIXTRAL, "bf16", 10_000) == pytest.approx(everything)
    # Dense models read the same bytes whatever the batch.
    assert models.weight_bytes_read_per_step(LLAMA_8B, "fp8", 1) == models.weight_bytes_read_per_step(
        LLAMA_8B, "fp8", 512
    )


@given(st.sampled_from(ARCHS), st.sampled_from(catalog.PRECISIONS), st.integers(1, 4096), st.integers(0, 4096))
def test_weight_bytes_read_grow_with_batch_and_stay_below_footprint(
    arch: ModelArchitecture, precision: str, batch: int, more: int
) -> None:
    read = models.weight_bytes_read_per_step(arch, precision, batch)
    assert (
        read <= models.weight_bytes_read_per_step(arch, precision, batch + more) <= models.weight_bytes(arch, precision)
    )


def test_architecture_lookup() -> None:
    assert models.architecture("llama-3.1-70b").name == "Llama-3.1-70B"
    assert models.architecture("DeepSeek-R1") is models.architecture("DeepSeek-V3")
    assert models.architecture(LLAMA_8B) is LLAMA_8B


def test_unknown_model_names_close_matches() -> None:
    with pytest.raises(models.UnknownModelError) as err:
        models.architecture("Llama-3.1-7B")
    message = str(err.value)
    assert "unknown model 'Llama-3.1-7B': did you mean Llama-3.1-70B" in message
    assert "known: Llama-3.1-8B, Llama-3.1-70B" in message
    assert isinstance(err.value, LookupError) and isinstance(err.value, ValueError)


def test_custom_architecture_sizes_like_a_catalogued_one() -> None:
    custom = _custom(
        name="my-llama-8b",
        layers=32,
        hidden_size=4096,
        attention_heads=32,
        kv_heads=8,
        head_dim=128,
        params_total=8.03e9,
        vocab_size=128_256,
    )
    assert models.kv_bytes_per_token(custom) == models.kv_bytes_per_token(LLAMA_8B)
    assert models.weight_bytes(custom, "fp8") == models.weight_bytes(LLAMA_8B, "fp8")
    assert models.min_tensor_parallel(custom, "fp8", "g6.xlarge", 0.2, 4096, 4) == 1


@pytest.mark.parametrize(
    ("overrides", "problem"),
    [
        ({"layers": 0}, "layers must be > 0"),
        ({"kv_heads": 0}, "GQA attention needs kv_heads > 0 and head_dim > 0"),
        ({"attention_heads": 6}, "attention_heads must be a multiple of kv_heads"),
        ({"attention": "mla"}, "MLA attention needs kv_lora_rank > 0 and rope_head_dim > 0"),
        ({"attention": "mha"}, "attention must be 'gqa' or 'mla'"),
        ({"params_active": 60e6}, "params_active must be in (0, params_total]"),
        ({"routed_experts": 8, "active_experts": 8, "params_active": 20e6}, "MoE needs 0 < active_experts"),
        ({"routed_experts": 8, "active_experts": 2}, "MoE needs params_active < params_total"),
        ({"vocab_size": 100_000}, "embeddings must be fewer than params_total"),
    ],
)
def test_invalid_custom_architectures_name_the_problem(overrides: dict[str, Any], problem: str) -> None:
    with pytest.raises(ValueError) as err:
        _custom(**overrides)
    assert problem in str(err.value)


def test_invalid_architecture_reports_every_problem_at_once() -> None:
    with pytest.raises(ValueError, match=r"layers must be > 0; hidden_size must be > 0.*params_total must be > 0"):
        _custom(layers=0, hidden_size=0, params_total=0)


@pytest.mark.parametrize(
    ("model", "precision", "node", "headroom", "context", "batch", "expected"),
    [
        ("Llama-3.1-8B", "fp8", "g6.xlarge", 0.2, 4096, 4, 1),  # dev stack: one L4
        ("Llama-3.1-8B", "bf16", "g5.12xlarge", 0.2, 8192, 4, 1),
        ("Llama-3.1-8B", "bf16", "g5.12xlarge", 0.2, 8192, 32, 4),  # 34 GB of FP16 KV cache
        ("Llama-3.1-70B", "fp8", "p5.48xlarge", 0.3, 4096, 16, 2),
        ("Llama-3.1-70B", "fp8", "p5.48xlarge", 0.3, 4096, 64, 4),  # more KV cache wanted: more TP
        ("Llama-3.1-70B", "fp8", "p5en.48xlarge", 0.3, 4096, 16, 1),  # H200's 141 GB
        ("Llama-3.1-70B", "bf16", "inf2.48xlarge", 0.2, 4096, 8, 16),  # TP over NeuronCores
        ("DeepSeek-V3", "fp8", "p5en.48xlarge", 0.1, 4096, 8, 8),
    ],
)
def test_min_tensor_parallel_examples(
    model: str, precision: str, node: str, headroom: float, context: int, batch: int, expected: int
) -> None:
    assert models.min_tensor_parallel(model, precision, node, headroom, context, batch) == expected


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ("Llama-3.1-8B", "fp8", "g5.xlarge", 0.2, 4096, 1),
            r"precision fp8 does not run on g5\.xlarge \(a10g, sm86\)",
        ),
        (("Llama-3.1-8B", "bf16", "m7i.large", 0.2, 4096, 1), r"m7i\.large has no accelerators"),
        (("Llama-3.1-405B", "bf16", "p5.48xlarge", 0.2, 4096, 8), r"does not fit one p5\.48xlarge node: at TP 8"),
        (("DeepSeek-V3", "fp8", "p5.48xlarge", 0.1, 4096, 1), "multi-node parallelism"),
        (("Llama-3.1-8B", "fp8", "p5.48xlarge", 1.0, 4096, 1), r"kv_headroom_fraction must be in \[0, 1\)"),
        (("Llama-3.1-8B", "fp8", "p5.48xlarge", 0.2, 0, 1), "context_tokens must be > 0"),
        (("Llama-3.1-8B", "bf16", "inf2.xlarge", 0.2, 4096, 1, "fp8"), r"KV-cache dtype fp8 does not run on inf2"),
        (("Llama-3.1-8B", "bf16", "g7.xlarge", 0.2, 4096, 1), "unknown instance type"),
    ],
)
def test_min_tensor_parallel_refusals(args: tuple[Any, ...], message: str) -> None:
    with pytest.raises((SizingError, catalog.CatalogError), match=message):
        models.min_tensor_parallel(*args)


def _candidates(arch: ModelArchitecture, node: catalog.InstanceType) -> list[int]:
    powers = [2**i for i in range(8) if 2**i <= node.max_tensor_parallel]
    return [tp for tp in powers if arch.tp_problem(tp) is None]


def _fits_by_hand(
    arch: ModelArchitecture, node: catalog.InstanceType, precision: str, tp: int, headroom: float, tokens: int
) -> bool:
    """The memory rule restated from first principles, independent of ReplicaMemory."""
    assert node.accelerator is not None
    unit = node.accelerator.memory_gb * 1e9 / node.accelerator.tensor_parallel_units
    weights = models.weight_bytes(arch, precision) / tp
    kv = tokens * models.kv_bytes_per_token(arch) / arch.kv_shards(tp)
    return weights + max(headroom * unit, kv) / models.KV_CACHE_FREE_MEMORY_FRACTION <= unit * (1 + 1e-12)


def _min_tp(*args: Any) -> int | None:
    try:
        return models.min_tensor_parallel(*args)
    except SizingError:
        return None


@settings(deadline=None)
@given(placements(), st.integers(1, 256), st.integers(1, 131_072), st.floats(0, 0.6))
def test_min_tensor_parallel_is_the_smallest_fitting_power_of_two(
    placement: tuple[ModelArchitecture, catalog.InstanceType, str], batch: int, context: int, headroom: float
) -> None:
    arch, node, precision = placement
    fitting = [
        tp for tp in _candidates(arch, node) if _fits_by_hand(arch, node, precision, tp, headroom, batch * context)
    ]
    tp = _min_tp(arch, precision, node, headroom, context, batch)
    if tp is None:
        assert fitting == []
    else:
        assert tp == fitting[0]
        assert tp & (tp - 1) == 0 and tp <= node.max_tensor_parallel
        assert arch.tp_problem(tp) is None


@settings(deadline=None)
@given(placements(), st.integers(1, 256), st.integers(1, 65_536), st.integers(0, 256), st.integers(0, 65_536))
def test_min_tensor_parallel_is_monotonic_in_batch_and_context(
    placement: tuple[ModelArchitecture, catalog.InstanceType, str], batch: int, context: int, more_b: int, more_c: int
) -> None:
    arch, node, precision = placement
    small = _min_tp(arch, precision, node, 0.1, context, batch)
    large = _min_tp(arch, precision, node, 0.1, context + more_c, batch + more_b)
    if small is None:
        assert large is None
    elif large is not None:
        assert small <= large


def test_replica_memory_capacity() -> None:
    memory = models.replica_memory("Llama-3.1-70B", "fp8", "p5.48xlarge", 2, "fp8")
    assert memory.weight_bytes_per_unit == pytest.approx(models.weight_bytes("Llama-3.1-70B", "fp8") / 2)
    assert memory.kv_bytes_per_token_per_unit == 320 * KIB / 2 / 2  # FP8 halves it, TP 2 splits heads
    assert memory.kv_capacity_tokens == int((80e9 - memory.weight_bytes_per_unit) * 0.9 / (80 * KIB))
    # MLA latents are replicated, not split, across TP ranks.
    deepseek = models.replica_memory("DeepSeek-V3", "fp8", "p5en.48xlarge", 8)
    assert deepseek.kv_bytes_per_token_per_unit == models.kv_bytes_per_token("DeepSeek-V3")


def test_the_kv_free_fraction_is_the_engines_setting() -> None:
    """TensorRT-LLM's kv_cache_free_gpu_mem_fraction: less of it, less cache, a larger TP."""
    half = models.replica_memory("Llama-3.1-70B", "fp8", "p5.48xlarge", 4, "fp8", kv_free_fraction=0.45)
    full = models.replica_memory("Llama-3.1-70B", "fp8", "p5.48xlarge", 4, "fp8")
    assert half.kv_space_bytes_per_unit == pytest.approx(full.kv_space_bytes_per_unit / 2)
    shape = ("Llama-3.1-70B", "fp8", "p5.48xlarge", 0.0, 16384, 64, "fp8")
    assert models.min_tensor_parallel(*shape) == 4
    assert models.min_tensor_parallel(*shape, kv_free_fraction=0.6) == 8
    with pytest.raises(SizingError, match="kv_free_fraction"):
        models.min_tensor_parallel(*shape, kv_free_fraction=0)


def test_decode_floor_is_the_reference_formula_for_a_plain_dense_model() -> None:
    plain = _custom(params_total=7e9, layers=32, hidden_size=4096, attention_heads=32, kv_heads=8, head_dim=128)
    h100 = catalog.accelerator("h100")
    for tp, batch, context in ((1, 1, 1000), (2, 64, 3000), (8, 512, 1500)):
        floor = models.decode_step_floor(plain, "bf16", "p5.48xlarge", tp, batch, context)
        memory = (7e9 * 2 / tp + batch * context * 128 * KIB / tp) / (h100.memory_bandwidth_gbs * 1e9)
        compute = 2 * 7e9 * batch / (tp * 989e12)
        assert floor.memory_seconds == pytest.approx(memory)
        assert floor.compute_seconds == pytest.approx(compute)
        assert models.decode_step_floor_seconds(plain, "bf16", "p5.48xlarge", tp, batch, context) == max(
            memory, compute
        )


def test_decode_floor_bound_and_unpublished_rates() -> None:
    small = models.decode_step_floor("Llama-3.1-8B", "fp8", "p5.48xlarge", 1, 1, 100)
    assert small.bound == "memory"
    a10g = models.decode_step_floor("Llama-3.1-8B", "bf16", "g5.xlarge", 1, 8, 1000)
    assert a10g.compute_seconds is None and a10g.seconds == a10g.memory_seconds
    # A weightless toy at a huge batch on a slow chip is compute bound.
    toy = models.decode_step_floor(_custom(), "bf16", "g6.xlarge", 1, 4096, 1)
    assert toy.bound == "compute" and toy.seconds == toy.compute_seconds


def test_decode_floor_on_neuron_uses_a_core_share_of_the_chip() -> None:
    one_core = models.decode_step_floor("Llama-3.1-8B", "bf16", "inf2.xlarge", 1, 1, 1000)
    read = models.weight_bytes_read_per_step("Llama-3.1-8B", "bf16", 1) + 1000 * 128 * KIB
    assert one_core.memory_seconds == pytest.approx(read / (catalog.INFERENTIA2.memory_bandwidth_gbs * 1e9 / 2))


@settings(deadline=None)
@given(placements(), st.integers(1, 512), st.integers(1, 100_000), st.integers(0, 512), st.integers(0, 100_000))
def test_decode_floor_is_monotonic_in_batch_and_context(
    placement: tuple[ModelArchitecture, catalog.InstanceType, str], batch: int, context: int, more_b: int, more_c: int
) -> None:
    arch, node, precision = placement
    tp = _candidates(arch, node)[-1]
    floor = models.decode_step_floor_seconds(arch, precision, node, tp, batch, context)
    assert floor > 0
    assert floor <= models.decode_step_floor_seconds(arch, precision, node, tp, batch + more_b, context)
    assert floor <= models.decode_step_floor_seconds(arch, precision, node, tp, batch, context + more_c)
    # More tensor parallelism never makes the floor longer.
    assert floor <= models.decode_step_floor_seconds(arch, precision, node, _candidates(arch, node)[0], batch, context)


@pytest.mark.parametrize("point", models.CALIBRATION_POINTS, ids=lambda p: f"{p.model}-{p.instance_type}-tp{p.tp}")
def test_ideal_bound_sits_above_published_measurements(point: models.CalibrationPoint) -> None:
    ideal = models.throughput_estimate(
        point.model,
        point.precision,
        point.instance_type,
        point.tp,
        point.input_tokens,
        point.output_tokens,
        point.kv_dtype,
    )
    assert point.measured_tokens_per_second_per_accelerator < ideal.ideal_tokens_per_second_per_accelerator
    efficiency = models.implied_efficiency(point)
    low, high = models.PUBLISHED_EFFICIENCY_BAND
    assert low <= efficiency <= high
    # The planning factor is no more optimistic than any measurement.
    assert efficiency >= models.PLANNING_EFFICIENCY


def test_calibration_needs_the_fp8_kv_cache_the_runs_used() -> None:
    # With a 16-bit KV cache the memory-capped bound for 8B would fall below what NVIDIA measured:
    # the KV dtype is part of the formula, not a detail.
    for point in models.CALIBRATION_POINTS[:2]:
        fp16 = models.throughput_estimate(
            point.model, point.precision, point.instance_type, point.tp, 1000, 1000, kv_dtype="fp16"
        )
        assert fp16.ideal_tokens_per_second_per_accelerator < point.measured_tokens_per_second_per_accelerator


def test_throughput_estimate_fields() -> None:
    est = models.throughput_estimate("Llama-3.1-70B", "fp8", "p5.48xlarge", 2, 1000, 1000, "fp8", efficiency=0.5)
    assert est.mean_context_tokens == 1500.5
    assert est.accelerators == 2
    assert est.ideal_tokens_per_second == pytest.approx(est.batch / est.step.seconds)
    assert est.planning_tokens_per_second == pytest.approx(0.5 * est.ideal_tokens_per_second)
    assert est.planning_tokens_per_second_per_accelerator == pytest.approx(est.planning_tokens_per_second / 2)
    neuron = models.throughput_estimate("Llama-3.1-8B", "bf16", "inf2.xlarge", 2, 500, 500)
    assert neuron.accelerators == 1  # two NeuronCores are one Inferentia2 device


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"batch": 100_000}, "room for"),
        ({"efficiency": 0}, r"efficiency must be in \(0, 1\]"),
        ({"efficiency": 1.5}, r"efficiency must be in \(0, 1\]"),
    ],
)
def test_throughput_estimate_refusals(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(SizingError, match=message):
        models.throughput_estimate("Llama-3.1-8B", "fp8", "g6.xlarge", 1, 1000, 1000, **kwargs)


def test_throughput_estimate_refuses_weights_that_do_not_fit() -> None:
    with pytest.raises(SizingError, match="KV cache holds 0 tokens"):
        models.throughput_estimate("Llama-3.1-70B", "bf16", "g6.xlarge", 1, 1000, 1000)


@settings(deadline=None)
@given(st.integers(1, 300), st.integers(0, 300))
def test_ideal_throughput_never_falls_with_batch(batch: int, more: int) -> None:
    def ideal(b: int) -> float:
        return models.throughput_estimate(
            "Llama-3.1-8B", "fp8", "p5.48xlarge", 1, 1000, 1000, "fp8", batch=b
        ).ideal_tokens_per_second

    assert ideal(batch) <= ideal(batch + more)
