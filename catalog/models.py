"""Model architectures and first-order sizing: weights, KV cache, tensor parallelism, decode floor.

Pure Python, no Pulumi. The architecture facts and the formulas are REFERENCE.md §6:

- KV bytes per token: GQA ``2 x layers x kv_heads x head_dim x bytes``; MLA ``layers x (kv_lora_rank +
  rope_dim) x bytes``.
- Decode step time >= max(memory term, compute term), where the memory term is the bytes one step must
  read (weights/TP plus ``batch x context`` tokens of KV cache/TP) over memory bandwidth and the compute
  term ``2 x active params x batch / (TP x FLOPS)``.

What this module adds to the REFERENCE formula, each a refinement that keeps it a lower bound:
- A decode step reads the output head but not the input embedding table (a lookup of ``batch`` rows),
  and of an MoE layer only the experts the batch routes to (expected count under uniform routing).
- Quantized checkpoints keep embeddings and the output head in 16 bits (ModelOpt leaves ``lm_head``
  unquantized by default) and carry block scales (INT4 AWQ: one FP16 scale per 128 weights; NVFP4: one
  FP8 scale per 16), which ``weight_bytes`` counts.
- Tensor parallelism splits GQA KV heads over ``min(TP, kv_heads)`` ranks (TensorRT-LLM replicates heads
  past that); MLA's compressed latent is needed whole by every rank, so TP does not split it.
- On Neuron, tensor parallelism runs over NeuronCores (NxD Inference ``tp_degree``), each with its share
  of the chip's memory, bandwidth and FLOPS.

Measured throughput lands well below the ideal (REFERENCE §6: roughly 20-90%); ``CALIBRATION_POINTS``
keep TensorRT-LLM's published figures so tests hold the formulas to them.
"""

from __future__ import annotations

import difflib
import math
from dataclasses import dataclass
from typing import Final, Literal

from inference_platform.catalog import instances as catalog
from inference_platform.catalog.instances import (
    BF16,
    FP4,
    FP8,
    FP16,
    FP32,
    INT4_AWQ,
    INT4_WEIGHT_ONLY,
    INT8,
    INT8_WEIGHT_ONLY,
    CatalogError,
    InstanceType,
)

ATTENTION_GQA: Final = "gqa"
ATTENTION_MLA: Final = "mla"
Attention = Literal["gqa", "mla"]

# Stored bits per quantized weight, and the block-scale bits each weight carries on top of them.
_WEIGHT_BITS: Final[dict[str, float]] = {
    FP32: 32,
    FP16: 16,
    BF16: 16,
    FP8: 8,
    INT8: 8,
    INT8_WEIGHT_ONLY: 8,
    INT4_AWQ: 4,
    INT4_WEIGHT_ONLY: 4,
    FP4: 4,
}
_SCALE_BITS: Final[dict[str, float]] = {
    INT4_AWQ: 16 / 128,  # ModelOpt W4A16 AWQ: FP16 scale per block of 128 weights
    INT4_WEIGHT_ONLY: 16 / 128,  # same block size for the plain W4A16 recipe
    FP4: 8 / 16,  # NVFP4: FP8 scale per block of 16 (plus one FP32 per tensor, negligible)
}
UNQUANTIZED_BYTES: Final = 2  # embeddings and lm_head stay BF16 in quantized checkpoints

KV_DTYPE_BYTES: Final[dict[str, int]] = {FP32: 4, FP16: 2, BF16: 2, FP8: 1, INT8: 1}
DEFAULT_KV_DTYPE: Final = FP16  # TensorRT-LLM keeps the KV cache in the activation dtype unless told

# TensorRT-LLM gives the KV cache kv_cache_free_gpu_mem_fraction (default 0.9, REFERENCE §3) of the
# memory left after weights; the rest holds activations, workspaces and the CUDA context. The same
# split is assumed on Neuron, which has no such knob.
KV_CACHE_FREE_MEMORY_FRACTION: Final = 0.9

# REFERENCE §6: measured offline throughput is roughly 20-90% of the ideal bound.
PUBLISHED_EFFICIENCY_BAND: Final = (0.20, 0.90)
# Planning figure = ideal x this. 0.3 sits at or below every calibration point's implied efficiency
# (0.31 for Llama-3.1-70B FP8 TP2 on H100, where all-reduce costs the ideal ignores; 0.50 and 0.57 for
# 8B on H100 and L40S; tests recompute them), so plans err toward more replicas, not missed capacity.
PLANNING_EFFICIENCY: Final = 0.30
# REFERENCE §6: under latency SLOs throughput drops to roughly 40-75% of the offline maximum.
LATENCY_SLO_FACTOR_RANGE: Final = (0.40, 0.75)


class UnknownModelError(CatalogError):
    """A model name the catalog of architectures does not know."""


class SizingError(ValueError):
    """A model does not fit, or a sizing question was asked with impossible arguments."""


@dataclass(frozen=True, kw_only=True)
class ModelArchitecture:
    """What sizing needs of a transformer. Build one directly to describe a custom architecture.

    GQA models give ``kv_heads`` and ``head_dim``; MLA models ``kv_lora_rank`` and ``rope_head_dim``.
    MoE models give ``routed_experts`` and ``active_experts`` (routed experts per token); shared experts
    count as always-active parameters.
    """

    name: str
    layers: int
    hidden_size: int
    attention_heads: int
    params_total: float
    params_active: float | None = None
    """Parameters one token uses; None: all of them (dense model)."""
    attention: Attention = ATTENTION_GQA
    kv_heads: int = 0
    head_dim: int = 0
    kv_lora_rank: int = 0
    rope_head_dim: int = 0
    routed_experts: int = 0
    active_experts: int = 0
    shared_experts: int = 0
    vocab_size: int = 0
    """0: unknown, every parameter is then treated as quantizable body."""
    tied_embeddings: bool = False
    source: str = ""

    def __post_init__(self) -> None:
        problems = [f"{f} must be > 0" for f in ("layers", "hidden_size", "attention_heads") if getattr(self, f) <= 0]
        if self.params_total <= 0:
            problems.append("params_total must be > 0")
        if self.params_active is not None and not 0 < self.params_active <= self.params_total:
            problems.append("params_active must be in (0, params_total]")
        if self.attention == ATTENTION_GQA:
            if self.kv_heads <= 0 or self.head_dim <= 0:
                problems.append("GQA attention needs kv_heads > 0 and head_dim > 0")
            elif self.attention_heads % self.kv_heads:
                problems.append("attention_heads must be a multiple of kv_heads")
        elif self.attention == ATTENTION_MLA:
            if self.kv_lora_rank <= 0 or self.rope_head_dim <= 0:
                problems.append("MLA attention needs kv_lora_rank > 0 and rope_head_dim > 0")
        else:
            problems.append(f"attention must be {ATTENTION_GQA!r} or {ATTENTION_MLA!r}, got {self.attention!r}")
        if self.routed_experts or self.active_experts:
            if not 0 < self.active_experts < self.routed_experts:
                problems.append("MoE needs 0 < active_experts < routed_experts")
            elif self.params_active is None or self.params_active >= self.params_total:
                problems.append("MoE needs params_active < params_total")
            elif self.dense_params < self.embedding_params:
                problems.append("params_total/params_active leave too few non-expert parameters")
        if self.vocab_size < 0 or self.embedding_params >= self.params_total:
            problems.append("vocab_size x hidden_size embeddings must be fewer than params_total")
        if problems:
            raise ValueError(f"model architecture {self.name!r}: " + "; ".join(problems))

    @property
    def is_moe(self) -> bool:
        return self.routed_experts > 0

    @property
    def active_params(self) -> float:
        return self.params_active if self.params_active is not None else self.params_total

    @property
    def expert_params(self) -> float:
        """Parameters of one routed expert (all layers), from total/active and the expert counts."""
        if not self.is_moe:
            return 0.0
        return (self.params_total - self.active_params) / (self.routed_experts - self.active_experts)

    @property
    def dense_params(self) -> float:
        """Parameters every token uses: attention, norms, shared experts, embeddings."""
        return self.params_total - self.routed_experts * self.expert_params

    @property
    def embedding_params(self) -> float:
        """Input embedding plus output head (one matrix when tied)."""
        return self.vocab_size * self.hidden_size * (1 if self.tied_embeddings else 2)

    def kv_shards(self, tp: int) -> int:
        """Ranks the KV cache of one token is split over at tensor parallelism ``tp``."""
        return min(tp, self.kv_heads) if self.attention == ATTENTION_GQA else 1

    def tp_problem(self, tp: int) -> str | None:
        """Why ``tp`` cannot shard this model's attention, or None when it can."""
        if self.attention_heads % tp:
            return f"{self.attention_heads} attention heads do not divide by TP {tp}"
        if self.attention == ATTENTION_GQA and self.kv_heads % tp and tp % self.kv_heads:
            return f"{self.kv_heads} KV heads and TP {tp}: neither divides the other"
        return None


_LLAMA31_SOURCE: Final = "REFERENCE.md §6; vocab from the Hugging Face config (128,256, untied)"
ARCHITECTURES: Final[dict[str, ModelArchitecture]] = {
    m.name: m
    for m in (
        ModelArchitecture(
            name="Llama-3.1-8B",
            layers=32,
            hidden_size=4096,
            attention_heads=32,
            kv_heads=8,
            head_dim=128,
            params_total=8.03e9,
            vocab_size=128_256,
            source=_LLAMA31_SOURCE,
        ),
        ModelArchitecture(
            name="Llama-3.1-70B",
            layers=80,
            hidden_size=8192,
            attention_heads=64,
            kv_heads=8,
            head_dim=128,
            params_total=70.6e9,
            vocab_size=128_256,
            source=_LLAMA31_SOURCE,
        ),
        ModelArchitecture(
            name="Llama-3.1-405B",
            layers=126,
            hidden_size=16384,
            attention_heads=128,
            kv_heads=8,
            head_dim=128,
            params_total=405.9e9,
            vocab_size=128_256,
            source=_LLAMA31_SOURCE,
        ),
        ModelArchitecture(
            name="Mixtral-8x7B",
            layers=32,
            hidden_size=4096,
            attention_heads=32,
            kv_heads=8,
            head_dim=128,
            params_total=46.7e9,
            params_active=12.9e9,
            routed_experts=8,
            active_experts=2,
            vocab_size=32_000,
            source="REFERENCE.md §6; vocab from the Hugging Face config (32,000, untied)",
        ),
        ModelArchitecture(
            name="DeepSeek-V3",
            layers=61,
            hidden_size=7168,
            attention_heads=128,
            attention=ATTENTION_MLA,
            kv_lora_rank=512,
            rope_head_dim=64,
            params_total=671e9,
            params_active=37e9,
            routed_experts=256,
            active_experts=8,
            shared_experts=1,
            vocab_size=129_280,
            source="REFERENCE.md §6; vocab from the Hugging Face config (129,280, untied)",
        ),
    )
}
# Same architecture, other weights (REFERENCE §6 lists them together).
_ALIASES: Final[dict[str, str]] = {"deepseek-r1": "DeepSeek-V3"}


def known_architectures() -> tuple[str, ...]:
    return tuple(ARCHITECTURES)


def architecture(name: str | ModelArchitecture) -> ModelArchitecture:
    """The catalogued architecture called ``name`` (case-insensitive); an architecture passes through."""
    if isinstance(name, ModelArchitecture):
        return name
    by_key = {k.lower(): v for k, v in ARCHITECTURES.items()}
    key = _ALIASES.get(name.strip().lower(), name).strip().lower()
    if key in by_key:
        return by_key[key]
    known = known_architectures()
    close = difflib.get_close_matches(name.strip(), known, n=3, cutoff=0.5)
    hint = f"did you mean {', '.join(close)}? " if close else ""
    raise UnknownModelError(
        f"unknown model {name!r}: {hint}known: {', '.join(known)}; describe any other model with its architecture"
    )


def weight_bytes(model: str | ModelArchitecture, precision: str) -> float:
    """Bytes the weights occupy in accelerator memory at ``precision`` (all experts, scales included)."""
    arch = architecture(model)
    body_bytes, head_bytes = _bytes_per_param(precision)
    body = arch.params_total - arch.embedding_params
    return body * body_bytes + arch.embedding_params * head_bytes


def weight_bytes_read_per_step(model: str | ModelArchitecture, precision: str, batch: int) -> float:
    """Weight bytes one decode step of ``batch`` sequences reads: everything but the input embedding
    table, and of the routed experts the expected share a batch touches under uniform routing."""
    arch = architecture(model)
    _check_positive(batch=batch)
    body_bytes, head_bytes = _bytes_per_param(precision)
    head = arch.vocab_size * arch.hidden_size
    dense_body = arch.dense_params - arch.embedding_params
    touched = 1 - (1 - arch.active_experts / arch.routed_experts) ** batch if arch.is_moe else 0.0
    experts = arch.routed_experts * arch.expert_params * touched
    return (dense_body + experts) * body_bytes + head * head_bytes


def kv_bytes_per_token(model: str | ModelArchitecture, kv_dtype: str = DEFAULT_KV_DTYPE) -> int:
    """KV-cache bytes one token occupies across the whole model (REFERENCE §6 formulas)."""
    arch = architecture(model)
    size = _kv_dtype_bytes(kv_dtype)
    if arch.attention == ATTENTION_MLA:
        return arch.layers * (arch.kv_lora_rank + arch.rope_head_dim) * size
    return 2 * arch.layers * arch.kv_heads * arch.head_dim * size


@dataclass(frozen=True)
class ReplicaMemory:
    """How one replica's weights and KV cache sit on each tensor-parallel unit (GPU or NeuronCore)."""

    tp: int
    unit_memory_bytes: float
    weight_bytes_per_unit: float
    kv_space_bytes_per_unit: float
    """What the KV cache may use; negative when the weights alone do not fit."""
    kv_bytes_per_token_per_unit: float

    @property
    def kv_capacity_tokens(self) -> int:
        """Tokens of KV cache the replica holds (0 when the weights do not fit)."""
        return max(0, math.floor(self.kv_space_bytes_per_unit / self.kv_bytes_per_token_per_unit))

    def fits(self, kv_headroom_fraction: float, tokens: float) -> bool:
        """Room for ``tokens`` of KV cache and at least ``kv_headroom_fraction`` of memory for KV."""
        return self.kv_space_bytes_per_unit >= max(
            kv_headroom_fraction * self.unit_memory_bytes, tokens * self.kv_bytes_per_token_per_unit
        )


def replica_memory(
    model: str | ModelArchitecture,
    precision: str,
    instance: str | InstanceType,
    tp: int,
    kv_dtype: str = DEFAULT_KV_DTYPE,
    kv_free_fraction: float = KV_CACHE_FREE_MEMORY_FRACTION,
) -> ReplicaMemory:
    """Memory layout of one replica at tensor parallelism ``tp`` on one node of ``instance``;
    ``kv_free_fraction`` is the share of memory left after weights the KV cache takes (TensorRT-LLM's
    ``kv_cache_free_gpu_mem_fraction``)."""
    arch, node = _check_placement(model, precision, instance, tp, kv_dtype)
    accel = node.accelerator
    assert accel is not None  # _check_placement refuses nodes without accelerators
    unit_memory = accel.memory_bytes / accel.tensor_parallel_units
    weights = weight_bytes(arch, precision) / tp
    return ReplicaMemory(
        tp=tp,
        unit_memory_bytes=unit_memory,
        weight_bytes_per_unit=weights,
        kv_space_bytes_per_unit=(unit_memory - weights) * kv_free_fraction,
        kv_bytes_per_token_per_unit=kv_bytes_per_token(arch, kv_dtype) / arch.kv_shards(tp),
    )


def min_tensor_parallel(
    model: str | ModelArchitecture,
    precision: str,
    instance: str | InstanceType,
    kv_headroom_fraction: float,
    context_tokens: int,
    batch: int,
    kv_dtype: str = DEFAULT_KV_DTYPE,
    kv_free_fraction: float = KV_CACHE_FREE_MEMORY_FRACTION,
) -> int:
    """Smallest power-of-two TP on one node that holds the weights, ``batch x context_tokens`` of KV
    cache and leaves at least ``kv_headroom_fraction`` of each unit's memory for KV cache, with the KV
    cache taking ``kv_free_fraction`` of what the weights leave.

    Raises SizingError naming the shortfall when no TP up to the node's GPUs/NeuronCores fits.
    """
    if not 0 <= kv_headroom_fraction < 1:
        raise SizingError(f"kv_headroom_fraction must be in [0, 1), got {kv_headroom_fraction}")
    if not 0 < kv_free_fraction <= 1:
        raise SizingError(f"kv_free_fraction must be in (0, 1], got {kv_free_fraction}")
    _check_positive(context_tokens=context_tokens, batch=batch)
    arch, node = _check_placement(model, precision, instance, 1, kv_dtype)
    tokens = batch * context_tokens
    candidates = [tp for tp in _powers_of_two(node.max_tensor_parallel) if arch.tp_problem(tp) is None]
    for tp in candidates:
        if replica_memory(arch, precision, node, tp, kv_dtype, kv_free_fraction).fits(kv_headroom_fraction, tokens):
            return tp
    largest = replica_memory(arch, precision, node, candidates[-1], kv_dtype, kv_free_fraction)
    need = (
        largest.weight_bytes_per_unit
        + max(
            kv_headroom_fraction * largest.unit_memory_bytes,
            tokens * largest.kv_bytes_per_token_per_unit,
        )
        / kv_free_fraction
    )
    raise SizingError(
        f"{arch.name} at {precision} does not fit one {node.name} node: at TP {largest.tp} each unit needs "
        f"{need / 1e9:.1f} GB ({largest.weight_bytes_per_unit / 1e9:.1f} GB weights, {tokens} tokens of "
        f"{kv_dtype} KV cache, {kv_headroom_fraction:.0%} KV headroom) but has "
        f"{largest.unit_memory_bytes / 1e9:.1f} GB; use a lower precision, a larger node or multi-node "
        "parallelism"
    )


@dataclass(frozen=True)
class DecodeStepFloor:
    """Lower bound on one decode step's time, and which resource sets it."""

    memory_seconds: float
    compute_seconds: float | None
    """None when the accelerator's rate for the precision is unpublished (A10G): the floor then rests on
    the memory term alone, which is still a valid lower bound."""

    @property
    def seconds(self) -> float:
        return max(self.memory_seconds, self.compute_seconds or 0.0)

    @property
    def bound(self) -> Literal["memory", "compute"]:
        return "compute" if (self.compute_seconds or 0.0) > self.memory_seconds else "memory"


def decode_step_floor(
    model: str | ModelArchitecture,
    precision: str,
    instance: str | InstanceType,
    tp: int,
    batch: int,
    context_tokens: float,
    kv_dtype: str = DEFAULT_KV_DTYPE,
) -> DecodeStepFloor:
    """REFERENCE §6 decode floor for ``batch`` sequences of ``context_tokens`` each at TP ``tp``.

    Does not check that the KV cache fits: ask ``replica_memory`` for that.
    """
    arch, node = _check_placement(model, precision, instance, tp, kv_dtype)
    _check_positive(batch=batch, context_tokens=context_tokens)
    accel = node.accelerator
    assert accel is not None  # _check_placement refuses nodes without accelerators
    units = accel.tensor_parallel_units
    bandwidth = accel.memory_bandwidth_gbs * 1e9 / units
    kv_per_unit = kv_bytes_per_token(arch, kv_dtype) / arch.kv_shards(tp)
    read = weight_bytes_read_per_step(arch, precision, batch) / tp + batch * context_tokens * kv_per_unit
    tflops = accel.dense_tflops(precision)
    compute = 2 * arch.active_params * batch / (tp * tflops * 1e12 / units) if tflops else None
    return DecodeStepFloor(memory_seconds=read / bandwidth, compute_seconds=compute)


def decode_step_floor_seconds(
    model: str | ModelArchitecture,
    precision: str,
    instance: str | InstanceType,
    tp: int,
    batch: int,
    context_tokens: float,
    kv_dtype: str = DEFAULT_KV_DTYPE,
) -> float:
    """``decode_step_floor(...).seconds``."""
    return decode_step_floor(model, precision, instance, tp, batch, context_tokens, kv_dtype).seconds


@dataclass(frozen=True)
class ThroughputEstimate:
    """Output tokens/s of one replica: an ideal upper bound and a planning figure."""

    tp: int
    batch: int
    mean_context_tokens: float
    step: DecodeStepFloor
    accelerators: float
    """Accelerators (GPUs or Neuron devices) one replica occupies."""
    efficiency: float
    ideal_tokens_per_second: float
    """Decode-only bound: prefill, scheduling and communication only lower it."""

    @property
    def ideal_tokens_per_second_per_accelerator(self) -> float:
        return self.ideal_tokens_per_second / self.accelerators

    @property
    def planning_tokens_per_second(self) -> float:
        return self.ideal_tokens_per_second * self.efficiency

    @property
    def planning_tokens_per_second_per_accelerator(self) -> float:
        return self.planning_tokens_per_second / self.accelerators


def throughput_estimate(
    model: str | ModelArchitecture,
    precision: str,
    instance: str | InstanceType,
    tp: int,
    input_tokens: int,
    output_tokens: int,
    kv_dtype: str = DEFAULT_KV_DTYPE,
    batch: int | None = None,
    efficiency: float = PLANNING_EFFICIENCY,
) -> ThroughputEstimate:
    """Offline output throughput of one replica serving ``input_tokens``/``output_tokens`` requests.

    In-flight batching keeps sequences at every point of their output, so the mean context is
    ``input + (output + 1) / 2``. ``batch`` None: the largest batch whose KV cache fits (offline maximum).
    Under latency SLOs scale the planning figure further by ``LATENCY_SLO_FACTOR_RANGE``.
    """
    if not 0 < efficiency <= 1:
        raise SizingError(f"efficiency must be in (0, 1], got {efficiency}")
    _check_positive(input_tokens=input_tokens, output_tokens=output_tokens)
    arch = architecture(model)
    node = catalog.instance(instance)
    memory = replica_memory(arch, precision, node, tp, kv_dtype)
    mean_context = input_tokens + (output_tokens + 1) / 2
    max_batch = math.floor(memory.kv_capacity_tokens / mean_context)
    chosen = max_batch if batch is None else batch
    if chosen < 1 or chosen > max_batch:
        raise SizingError(
            f"{arch.name} at {precision}, TP {tp} on {node.name}: KV cache holds {memory.kv_capacity_tokens} "
            f"tokens, room for {max_batch} sequences of {mean_context:.0f} tokens, not {chosen}"
        )
    step = decode_step_floor(arch, precision, node, tp, chosen, mean_context, kv_dtype)
    assert node.accelerator is not None  # replica_memory refuses nodes without accelerators
    return ThroughputEstimate(
        tp=tp,
        batch=chosen,
        mean_context_tokens=mean_context,
        step=step,
        accelerators=tp / node.accelerator.tensor_parallel_units,
        efficiency=efficiency,
        ideal_tokens_per_second=chosen / step.seconds,
    )


@dataclass(frozen=True, kw_only=True)
class CalibrationPoint:
    """A published measurement the ideal bound must stay above, within the published efficiency band."""

    model: str
    precision: str
    instance_type: str
    tp: int
    input_tokens: int
    output_tokens: int
    kv_dtype: str
    measured_tokens_per_second_per_accelerator: float
    source: str


# REFERENCE §6, from TensorRT-LLM's performance overview (offline trtllm-bench, ISL/OSL 1000/1000,
# output tokens/s per GPU). The runs use NVIDIA's ModelOpt FP8 checkpoints, which also quantize the KV
# cache to FP8. H100 SXM is the p5.48xlarge chip, L40S the g6e chip.
_TRTLLM_PERF: Final = "TensorRT-LLM performance overview (trtllm-bench), via REFERENCE.md §6"
CALIBRATION_POINTS: Final[tuple[CalibrationPoint, ...]] = (
    CalibrationPoint(
        model="Llama-3.1-8B",
        precision=FP8,
        instance_type="p5.48xlarge",
        tp=1,
        input_tokens=1000,
        output_tokens=1000,
        kv_dtype=FP8,
        measured_tokens_per_second_per_accelerator=15_220,
        source=_TRTLLM_PERF,
    ),
    CalibrationPoint(
        model="Llama-3.1-8B",
        precision=FP8,
        instance_type="g6e.xlarge",
        tp=1,
        input_tokens=1000,
        output_tokens=1000,
        kv_dtype=FP8,
        measured_tokens_per_second_per_accelerator=4_055,
        source=_TRTLLM_PERF,
    ),
    CalibrationPoint(
        model="Llama-3.1-70B",
        precision=FP8,
        instance_type="p5.48xlarge",
        tp=2,
        input_tokens=1000,
        output_tokens=1000,
        kv_dtype=FP8,
        measured_tokens_per_second_per_accelerator=2_195,
        source=_TRTLLM_PERF,
    ),
)


def implied_efficiency(point: CalibrationPoint) -> float:
    """Measured over ideal throughput per accelerator for a calibration point."""
    ideal = throughput_estimate(
        point.model,
        point.precision,
        point.instance_type,
        point.tp,
        point.input_tokens,
        point.output_tokens,
        kv_dtype=point.kv_dtype,
    )
    return point.measured_tokens_per_second_per_accelerator / ideal.ideal_tokens_per_second_per_accelerator


def _bytes_per_param(precision: str) -> tuple[float, float]:
    """(bytes per quantizable body parameter, bytes per embedding/output-head parameter)."""
    if precision not in _WEIGHT_BITS:
        raise SizingError(f"unknown precision {precision!r}: known {', '.join(_WEIGHT_BITS)}")
    bits = _WEIGHT_BITS[precision]
    body = (bits + _SCALE_BITS.get(precision, 0.0)) / 8
    return body, (UNQUANTIZED_BYTES if bits < 16 else bits / 8)


def _kv_dtype_bytes(kv_dtype: str) -> int:
    if kv_dtype not in KV_DTYPE_BYTES:
        raise SizingError(f"unknown KV-cache dtype {kv_dtype!r}: known {', '.join(KV_DTYPE_BYTES)}")
    return KV_DTYPE_BYTES[kv_dtype]


def _check_placement(
    model: str | ModelArchitecture,
    precision: str,
    instance: str | InstanceType,
    tp: int,
    kv_dtype: str,
) -> tuple[ModelArchitecture, InstanceType]:
    """The architecture and node, once the node can run the precision, KV dtype and TP."""
    arch = architecture(model)
    node = catalog.instance(instance)
    _kv_dtype_bytes(kv_dtype)
    _bytes_per_param(precision)
    if node.accelerator is None:
        raise SizingError(f"{node.name} has no accelerators to serve {arch.name}")
    for what, dtype in (("precision", precision), ("KV-cache dtype", kv_dtype)):
        if not catalog.supports_precision(node, dtype):
            raise SizingError(
                f"{what} {dtype} does not run on {node.name} ({node.accelerator_model}, "
                f"{node.architecture}); it runs {', '.join(sorted(node.precisions))}"
            )
    if not 1 <= tp <= node.max_tensor_parallel:
        raise SizingError(f"TP {tp} is outside 1..{node.max_tensor_parallel} on one {node.name}")
    problem = arch.tp_problem(tp)
    if problem:
        raise SizingError(f"{arch.name}: {problem}")
    return arch, node


def _check_positive(**values: float) -> None:
    bad = [f"{k} must be > 0, got {v}" for k, v in values.items() if not v > 0]
    if bad:
        raise SizingError("; ".join(bad))


def _powers_of_two(limit: int) -> list[int]:
    return [2**i for i in range(limit.bit_length()) if 2**i <= limit]
