"""Latency and throughput of one serving replica under in-flight batching: the planner's building block.

Pure Python, no Pulumi. It refines ``models.decode_step_floor`` (REFERENCE.md §6) into a prediction:

- **Each kernel has its own roofline** (``Efficiency``): the linear layers cost the slower of reading the
  weights (``/TP``) and ``2 x active params`` FLOPs per token at the generation's achievable share of the
  precision's dense peak (Hopper FP8, Blackwell NVFP4 differ); attention costs the slower of reading
  every sequence's KV cache (paged reads run below the streaming rate and read whole 64-token blocks)
  and its 16-bit FLOPs; the two
  add, with a soft (k-norm) turn at the ridge point, plus the all-reduces and a fixed step time.
- **Tensor parallelism communicates**: two all-reduces per layer (attention and MLP outputs, Megatron
  style) of ``tokens x hidden`` 16-bit activations, ring cost ``2 (TP-1)/TP x bytes / link`` plus a
  per-collective latency, over NVLink/NVSwitch inside a node or EFA across nodes (``Interconnect``). The
  volume per token does not shrink with TP, which is why TP8 of a 70B model is communication-bound.
- **KV capacity bounds the batch**: at most ``kv_capacity_tokens / (ISL + OSL/2)`` sequences (in-flight
  batching keeps sequences at every point of their output), and never more than ``MAX_BATCH``.
- **In-flight batching** mixes each new request's prefill (chunked context) into the running decode
  steps: one cycle of ``batch`` requests takes ``OSL / tokens-per-step x step + batch x (prefill work +
  request overhead)``, where the prefill work is its FLOPs and all-reduce bytes (the weight read and the
  collectives' fixed latency are shared with the step it rides in). Output tokens/s is ``batch x OSL /
  cycle``; the mean time per output token (MLPerf's TPOT, what an ITL SLO bounds) is ``cycle / OSL``;
  the time to first token is the request's prefill alone, one step, and the wait for the prefill slot
  (M/D/1 at the prefill's share of the cycle).
- **Features** (``Features``): speculative decoding verifies ``1 + drafts`` tokens per sequence and step
  and emits ``(1 - a^(k+1)) / (1 - a)`` of them; prefix-cache hits skip their share of prefill; measured
  throughput/latency scales from ``PlanningFactors`` multiply the prediction.

The efficiencies were fitted once (``latency_calibration.fit``) to the training split of the dated
``published_throughput.json`` (TensorRT-LLM performance overview and MLPerf Inference v5.0/v5.1 rows,
each with its source); the held-out split is never read by the fit, and a test holds every held-out row
within ±25 % (vendor) or ±35 % (MLPerf). Earlier versions charged 8 us per sequence on every step (16 ms
at batch 2,048, more than the GEMMs) and paid each prefill's collective latencies and weight read
separately: the TP8 collapse of issue 21, removed.
"""

from __future__ import annotations

import contextlib
import functools
import math
from dataclasses import dataclass, field
from typing import Final, Literal, cast

from inference_platform.catalog import instances as catalog
from inference_platform.catalog import models
from inference_platform.catalog.instances import FP4, FP8, InstanceType
from inference_platform.catalog.models import ModelArchitecture, SizingError
from inference_platform.planners.planning_factors import PlanningFactors, speculative_tokens_per_step

Scenario = Literal["offline", "server"]
SCENARIOS: Final = ("offline", "server")

# TensorRT-LLM's largest CUDA-graph batch in NVIDIA's trtllm-bench options (perf overview, 2026): beyond
# it a step runs without graphs and the scheduler, not memory, limits the batch.
MAX_BATCH: Final = 2048
ACTIVATION_BYTES: Final = 2  # all-reduces carry BF16/FP16 activations whatever the weight precision
# Paged KV cache: attention reads whole blocks, so a sequence of c tokens reads about c + block/2
# (TensorRT-LLM's trtllm-build default tokens_per_block is 64). Matters for short contexts only.
KV_BLOCK_TOKENS: Final = 64


@dataclass(frozen=True, kw_only=True)
class Efficiency:
    """Share of each peak a real engine reaches, per accelerator generation and precision.

    Physically, a step is a sequence of kernels, each bound by its own roofline, not one max over the
    whole step: the linear layers (GEMMs) read the weights once and do ``2 x active params`` FLOPs per
    token, attention reads every sequence's KV cache and does ``4 x layers x context x hidden`` FLOPs
    per token in 16 bits, and the TP all-reduces run between them. So

        step = max(weights / BW, GEMM FLOPs / (peak[precision] x gemm))
             + max(KV bytes / BW, attention FLOPs / (peak[bf16] x attention))
             + all-reduces + step_overhead

    ``gemm`` is per generation and precision because the achievable share of the tensor-core peak is:
    Hopper FP8 GEMMs and Blackwell NVFP4 GEMMs (block scales, FP4 listed at 2 x FP8) reach different
    shares. ``bandwidth`` is per memory kind (HBM3/HBM3e vs GDDR6). The defaults were fitted once to
    the training rows of ``published_throughput.json`` (``latency_calibration.fit``; held-out rows are
    never read by the fit); a test reports the held-out error.
    """

    gemm: tuple[tuple[str, str, float], ...] = (
        ("sm90", FP8, 0.70),
        ("sm100", FP4, 0.38),
        ("sm89", FP8, 0.70),
    )
    """(architecture, precision, share of dense peak) for large-M GEMMs. Pairs not listed use
    ``gemm_default`` (Ada's other precisions use its FP8 share)."""
    gemm_default: float = 0.55
    bandwidth: tuple[tuple[str, float], ...] = (("hbm", 0.90), ("gddr", 0.90))
    """Share of peak device-memory bandwidth a step streams weights and KV cache at."""
    kv_bandwidth: float = 0.75
    """Share of the weight-streaming bandwidth paged-attention KV reads reach (scattered KV blocks,
    FP8 dequantisation on load): long contexts run below the streaming rate."""
    attention: float = 0.60
    """Share of the BF16 dense peak attention math (QK^T, softmax, AV; FP8 KV dequantised) reaches."""
    step_overhead_s: float = 0.003
    """Fixed time of one in-flight-batching iteration (scheduling, launch, sampling), CUDA graphs on."""
    roofline_sharpness: float = 1.25
    """How sharply a kernel turns from memory- to compute-bound: its time is the ``k``-norm
    ``(memory^k + compute^k)^(1/k)`` of the two bounds (``k`` = inf is the ideal roofline's max; finite
    ``k`` is what measured kernels show near the ridge point, where loads and math do not fully overlap)."""
    request_overhead_s: float = 0.0
    """Host time per request, serialised with the engine loop: admission, tokenisation hand-off,
    retirement and detokenisation (it dominates only for short requests at high request rates)."""
    collective: float = 0.45
    p99_over_mean_ttft: float = 1.0
    """99th-percentile over mean time to first token under in-flight batching (queueing behind other
    prefills): used where an SLO is a p99, as MLPerf's are; the stacks' serving.slo are medians."""
    p99_over_mean_itl: float = 1.1
    """99th-percentile over mean time per output token (steps that carry other requests' prefill chunks)."""
    """Share of the link's bandwidth an all-reduce reaches (NCCL bus bandwidth over the link's)."""

    def gemm_share(self, architecture: str, precision: str) -> float:
        for a, p, share in self.gemm:
            if a == architecture and p == precision:
                return share
        if architecture == "sm89" and precision != FP8:
            return self.gemm_share("sm89", FP8)
        return self.gemm_default

    def bandwidth_share(self, architecture: str) -> float:
        kind = "hbm" if architecture in _HBM_ARCHITECTURES else "gddr"
        return dict(self.bandwidth)[kind]


# HBM parts: A100, H100/H200, B200, and the Neuron chips' HBM; the rest (A10G, L4, L40S) are GDDR6.
_HBM_ARCHITECTURES: Final = frozenset({"sm80", "sm90", "sm100", "neuron-v2"})

DEFAULT_EFFICIENCY: Final = Efficiency()


@dataclass(frozen=True, kw_only=True)
class Interconnect:
    """The link tensor-parallel all-reduces use, per accelerator and direction."""

    name: str
    bandwidth_gbs: float
    """Unidirectional GB/s one accelerator can send (NVLink: half the bidirectional figure)."""
    latency_s: float
    """Fixed cost of one small all-reduce (launch + synchronisation)."""


# Per-GPU NVLink: H100/H200 NVLink 4 900 GB/s bidirectional, B200 NVLink 5 1.8 TB/s, A100 NVLink 3
# 600 GB/s (NVIDIA datasheets). L4/L40S/A10G have no NVLink: PCIe Gen4 x16, ~32 GB/s each way.
# NeuronLink-v2 between Inferentia2/Trainium1 chips (AWS Neuron architecture docs: 192 GB/s per chip
# on inf2; NeuronCores of one chip share its memory, so a TP split inside a chip costs on-chip time only).
# Latencies: NCCL small-message all-reduce inside one NVLink node ~8-10 us, over PCIe ~20 us, over EFA
# between nodes ~30-50 us (NCCL tests as reported in AWS's EFA and NVIDIA's NCCL documentation).
INTERCONNECTS: Final[dict[str, Interconnect]] = {
    "h100": Interconnect(name="NVLink 4", bandwidth_gbs=450, latency_s=8e-6),
    "h200": Interconnect(name="NVLink 4", bandwidth_gbs=450, latency_s=8e-6),
    "b200": Interconnect(name="NVLink 5", bandwidth_gbs=900, latency_s=8e-6),
    "a100": Interconnect(name="NVLink 3", bandwidth_gbs=300, latency_s=10e-6),
    "l40s": Interconnect(name="PCIe Gen4", bandwidth_gbs=32, latency_s=20e-6),
    "l4": Interconnect(name="PCIe Gen4", bandwidth_gbs=32, latency_s=20e-6),
    "a10g": Interconnect(name="PCIe Gen4", bandwidth_gbs=32, latency_s=20e-6),
    "inferentia2": Interconnect(name="NeuronLink-v2", bandwidth_gbs=96, latency_s=15e-6),
    "trainium1": Interconnect(name="NeuronLink-v2", bandwidth_gbs=96, latency_s=15e-6),
}


def efa_interconnect(node: InstanceType) -> Interconnect:
    """EFA between nodes: the node's aggregate network bandwidth shared by its accelerators."""
    per_accelerator = node.network_gbps / 8 / max(node.accelerator_count, 1)
    return Interconnect(name="EFA", bandwidth_gbs=per_accelerator, latency_s=40e-6)


@dataclass(frozen=True, kw_only=True)
class Workload:
    """Requests of ``isl`` input and ``osl`` output tokens."""

    isl: int
    osl: int

    def __post_init__(self) -> None:
        if self.isl <= 0 or self.osl <= 0:
            raise SizingError(f"input and output tokens must be > 0, got isl={self.isl}, osl={self.osl}")

    @property
    def mean_context(self) -> float:
        return self.isl + (self.osl + 1) / 2


@dataclass(frozen=True, kw_only=True)
class Slo:
    """Latency targets: time to first token and mean inter-token latency, in milliseconds."""

    ttft_ms: float
    itl_ms: float

    def __post_init__(self) -> None:
        if self.ttft_ms <= 0 or self.itl_ms <= 0:
            raise SizingError(f"SLO targets must be > 0 ms, got ttft={self.ttft_ms}, itl={self.itl_ms}")


@dataclass(frozen=True, kw_only=True)
class Replica:
    """Where one replica runs: model, precision, node type, TP degree, KV dtype, nodes spanned."""

    model: ModelArchitecture
    precision: str
    node: InstanceType
    tp: int
    kv_dtype: str = FP8
    kv_free_fraction: float = models.KV_CACHE_FREE_MEMORY_FRACTION

    @property
    def nodes(self) -> int:
        """Nodes one replica spans (TP beyond one node's units runs over EFA)."""
        return max(1, math.ceil(self.tp / self.node.max_tensor_parallel))

    @property
    def accelerators(self) -> float:
        assert self.node.accelerator is not None
        return self.tp / self.node.accelerator.tensor_parallel_units

    @property
    def interconnect(self) -> Interconnect:
        assert self.node.accelerator is not None
        if self.nodes > 1:
            return efa_interconnect(self.node)
        return INTERCONNECTS[self.node.accelerator.model]

    @property
    def per_node_tp(self) -> int:
        return min(self.tp, self.node.max_tensor_parallel)


@dataclass(frozen=True)
class Point:
    """The prediction at one batch size."""

    batch: int
    step_s: float
    decode_bound: Literal["memory", "compute"]
    prefill_s: float
    communication_s: float
    """All-reduce time inside one decode step."""
    cycle_s: float
    tokens_per_s_per_replica: float
    tokens_per_s_per_accelerator: float
    ttft_ms: float
    itl_ms: float

    def meets(self, slo: Slo | None) -> bool:
        return slo is None or (self.ttft_ms <= slo.ttft_ms and self.itl_ms <= slo.itl_ms)


@dataclass(frozen=True)
class Prediction:
    """The best batch for a scenario (and SLO), with the whole batch sweep for plots and explanations."""

    replica: Replica
    workload: Workload
    scenario: Scenario
    slo: Slo | None
    max_batch: int
    kv_capacity_tokens: int
    best: Point | None
    """None when no batch meets the SLO."""
    closest: Point
    """The point nearest the SLO (the best achievable when ``best`` is None)."""
    sweep: tuple[Point, ...] = field(repr=False)

    @property
    def met(self) -> bool:
        return self.best is not None


def replica(
    model: str | ModelArchitecture,
    precision: str,
    instance: str | InstanceType,
    tp: int,
    kv_dtype: str = FP8,
    kv_free_fraction: float = models.KV_CACHE_FREE_MEMORY_FRACTION,
) -> Replica:
    """A checked placement: the node runs the precision and KV dtype, ``tp`` shards the model (TP past
    one node spans whole nodes over EFA) and the weights fit."""
    arch = models.architecture(model)
    node = catalog.instance(instance)
    if node.accelerator is None:
        raise SizingError(f"{node.name} has no accelerators to serve {arch.name}")
    per_node = node.max_tensor_parallel
    if tp > per_node and tp % per_node:
        raise SizingError(f"TP {tp} spans nodes of {per_node} units: it must be a multiple of {per_node}")
    # models checks precision, dtype and the head split on one node's worth of TP.
    models.replica_memory(arch, precision, node, min(tp, per_node), kv_dtype, kv_free_fraction)
    problem = arch.tp_problem(tp)
    if problem:
        raise SizingError(f"{arch.name}: {problem}")
    placed = Replica(model=arch, precision=precision, node=node, tp=tp, kv_dtype=kv_dtype,
                     kv_free_fraction=kv_free_fraction)  # fmt: skip
    if kv_capacity_tokens(placed) <= 0:
        raise SizingError(f"{arch.name} at {precision} does not fit TP {tp} on {node.name}: no room for KV cache")
    return placed


def kv_capacity_tokens(r: Replica) -> int:
    """Tokens of KV cache the replica holds across all its units."""
    assert r.node.accelerator is not None
    unit_memory = r.node.accelerator.memory_bytes / r.node.accelerator.tensor_parallel_units
    weights = models.weight_bytes(r.model, r.precision) / r.tp
    space = (unit_memory - weights) * r.kv_free_fraction
    per_token = models.kv_bytes_per_token(r.model, r.kv_dtype) / r.model.kv_shards(r.tp)
    return max(0, math.floor(space / per_token))


def max_batch(r: Replica, workload: Workload) -> int:
    return min(MAX_BATCH, math.floor(kv_capacity_tokens(r) / workload.mean_context))


def _unit_rates(r: Replica, eff: Efficiency) -> tuple[float, float | None, float | None]:
    """(bandwidth B/s, GEMM FLOPS, attention FLOPS) of one TP unit, efficiencies applied."""
    accel = r.node.accelerator
    assert accel is not None
    units = accel.tensor_parallel_units
    bandwidth = accel.memory_bandwidth_gbs * 1e9 / units * eff.bandwidth_share(accel.architecture)
    tflops = accel.dense_tflops(r.precision)
    gemm = tflops * 1e12 / units * eff.gemm_share(accel.architecture, r.precision) if tflops else None
    # Attention (QK^T, AV) runs in 16 bits even with FP8/FP4 weights (FP8 KV is dequantized on load).
    attn_tflops = accel.bf16_dense_tflops or tflops
    attention = attn_tflops * 1e12 / units * eff.attention if attn_tflops else None
    return bandwidth, gemm, attention


def _all_reduce_s(r: Replica, tokens: float, eff: Efficiency, *, latency: bool = True) -> float:
    """Two all-reduces per layer of ``tokens x hidden`` activations across ``tp`` ranks (ring cost);
    ``latency=False`` leaves out the fixed per-collective time (prefill chunks share it with decode)."""
    if r.tp == 1:
        return 0.0
    link = r.interconnect
    size = tokens * r.model.hidden_size * ACTIVATION_BYTES
    one = (link.latency_s if latency else 0.0) + 2 * (r.tp - 1) / r.tp * size / (
        link.bandwidth_gbs * 1e9 * eff.collective
    )
    return 2 * r.model.layers * one


def _attention_flops(r: Replica, tokens: float, context: float) -> float:
    """Per TP unit: QK^T and AV over ``context`` keys for ``tokens`` queries (causal prefill: mean context)."""
    return 4 * r.model.layers * context * r.model.hidden_size * tokens / r.tp


def prefill_seconds(r: Replica, isl: int, eff: Efficiency = DEFAULT_EFFICIENCY) -> float:
    """One request's prefill alone (its TTFT share): compute-bound GEMMs and causal attention, never
    faster than one read of the weights, plus its all-reduces."""
    bandwidth, gemm_flops, attention_flops = _unit_rates(r, eff)
    arch = r.model
    gemm = 2 * arch.active_params * isl / r.tp / gemm_flops if gemm_flops else 0.0
    attention = _attention_flops(r, isl, isl / 2) / attention_flops if attention_flops else 0.0
    read = models.weight_bytes_read_per_step(arch, r.precision, isl) / r.tp / bandwidth
    return max(gemm, read) + attention + _all_reduce_s(r, isl, eff)


def prefill_work_seconds(r: Replica, isl: int, eff: Efficiency = DEFAULT_EFFICIENCY) -> float:
    """Engine time one request's prefill adds when in-flight batching mixes it into the running steps
    (chunked context): its GEMM and attention FLOPs and all-reduce bytes; the weight read and the
    collectives' fixed latency are shared with the decode step it rides in."""
    _, gemm_flops, attention_flops = _unit_rates(r, eff)
    arch = r.model
    gemm = 2 * arch.active_params * isl / r.tp / gemm_flops if gemm_flops else 0.0
    attention = _attention_flops(r, isl, isl / 2) / attention_flops if attention_flops else 0.0
    return gemm + attention + _all_reduce_s(r, isl, eff, latency=False)


def decode_step(
    r: Replica, batch: int, context: float, eff: Efficiency = DEFAULT_EFFICIENCY, *, query_tokens: int = 1
) -> tuple[float, Literal["memory", "compute"], float]:
    """(seconds, bound of the GEMMs, communication seconds) of one decode iteration of ``batch``
    sequences, each verifying ``query_tokens`` tokens (1, or 1 + drafts with speculative decoding)."""
    bandwidth, gemm_flops, attention_flops = _unit_rates(r, eff)
    arch = r.model
    tokens = batch * query_tokens
    weights = models.weight_bytes_read_per_step(arch, r.precision, tokens) / r.tp / bandwidth
    gemm = 2 * arch.active_params * tokens / r.tp / gemm_flops if gemm_flops else 0.0
    kv_per_unit = models.kv_bytes_per_token(arch, r.kv_dtype) / arch.kv_shards(r.tp)
    paged = context + KV_BLOCK_TOKENS / 2
    kv = batch * paged * kv_per_unit / (bandwidth * eff.kv_bandwidth)
    attention = _attention_flops(r, tokens, paged) / attention_flops if attention_flops else 0.0
    comm = _all_reduce_s(r, tokens, eff)
    bound: Literal["memory", "compute"] = "compute" if gemm > weights else "memory"
    k = eff.roofline_sharpness
    linear = _soft_max(weights, gemm, k)
    return linear + _soft_max(kv, attention, k) + comm + eff.step_overhead_s, bound, comm


def _soft_max(a: float, b: float, k: float) -> float:
    """``(a^k + b^k)^(1/k)``: between max(a, b) (k large) and a + b (k = 1)."""
    hi = max(a, b)
    if hi <= 0:
        return 0.0
    # typeshed types float ** float as Any (a negative base would give a complex); a and b are times, >= 0.
    return cast(float, hi * ((a / hi) ** k + (b / hi) ** k) ** (1 / k))


def point(
    r: Replica,
    workload: Workload,
    batch: int,
    eff: Efficiency = DEFAULT_EFFICIENCY,
    features: Features | None = None,
) -> Point:
    """The steady state of in-flight batching at ``batch`` concurrent sequences (see module doc)."""
    f = features or NO_FEATURES
    step, bound, comm = decode_step(r, batch, workload.mean_context, eff, query_tokens=1 + f.draft_tokens)
    tokens_per_step = f.tokens_per_step
    # Input tokens found in the KV cache (prefix reuse) skip prefill.
    fresh_isl = max(1, round(workload.isl * (1 - f.prefix_hit_rate)))
    prefill = prefill_seconds(r, fresh_isl, eff)
    prefills = batch * (prefill_work_seconds(r, fresh_isl, eff) + eff.request_overhead_s)
    steps = workload.osl / tokens_per_step
    cycle = steps * step + prefills
    per_replica = batch * workload.osl / cycle * f.throughput_scale
    # M/D/1 wait for the prefill slot: the engine spends ``prefills / cycle`` of its time on prefill.
    busy = min(prefills / cycle, 0.999)
    wait = busy * prefill / (2 * (1 - busy))
    return Point(
        batch=batch,
        step_s=step,
        decode_bound=bound,
        prefill_s=prefill,
        communication_s=comm,
        cycle_s=cycle,
        tokens_per_s_per_replica=per_replica,
        tokens_per_s_per_accelerator=per_replica / r.accelerators,
        ttft_ms=(prefill + step + wait) * 1e3 * f.ttft_scale,
        itl_ms=cycle / workload.osl * 1e3 * f.itl_scale,
    )


@dataclass(frozen=True, kw_only=True)
class Features:
    """Serving features the stack turns on, with the planning factors that size their effect."""

    draft_tokens: int = 0
    """Speculative decoding: draft tokens verified per step (serving.speculative.draftLength; 0 = off)."""
    draft_depth: int | None = None
    """Longest chain of drafts one step can accept (a Medusa/EAGLE tree's depth; default ``draft_tokens``,
    a single chain)."""
    speculative_acceptance: float = 0.0
    """Per-draft acceptance probability (PlanningFactors.speculative_acceptance)."""
    prefix_hit_rate: float = 0.0
    """Share of input tokens found in the KV cache (serving.kvCache.enableReuse x PlanningFactors)."""
    throughput_scale: float = 1.0
    ttft_scale: float = 1.0
    itl_scale: float = 1.0

    @property
    def tokens_per_step(self) -> float:
        depth = self.draft_tokens if self.draft_depth is None else min(self.draft_depth, self.draft_tokens)
        return speculative_tokens_per_step(depth, self.speculative_acceptance)

    @classmethod
    def from_factors(
        cls,
        factors: PlanningFactors,
        *,
        draft_tokens: int = 0,
        draft_depth: int | None = None,
        prefix_reuse: bool = False,
    ) -> Features:
        return cls(
            draft_tokens=draft_tokens,
            draft_depth=draft_depth,
            speculative_acceptance=factors.speculative_acceptance.value if draft_tokens else 0.0,
            prefix_hit_rate=factors.prefix_hit_rate.value if prefix_reuse else 0.0,
            throughput_scale=factors.throughput_scale.value,
            ttft_scale=factors.ttft_scale.value,
            itl_scale=factors.itl_scale.value,
        )


NO_FEATURES: Final = Features()


def batch_sizes(limit: int) -> list[int]:
    """Batch sizes worth trying up to ``limit``: every size to 16, then about 6 % apart, and ``limit``."""
    sizes = set(range(1, min(limit, 16) + 1))
    b = 16.0
    while b < limit:
        b *= 1.06
        sizes.add(min(limit, int(b)))
    sizes.add(limit)
    return sorted(s for s in sizes if s >= 1)


def predict(
    r: Replica,
    workload: Workload,
    *,
    scenario: Scenario = "server",
    slo: Slo | None = None,
    efficiency: Efficiency = DEFAULT_EFFICIENCY,
    batch_limit: int | None = None,
    features: Features | None = None,
) -> Prediction:
    """The batch that gives the most output tokens/s: offline ignores latency, server keeps ``slo``.
    ``batch_limit`` caps the batch (an engine built with a smaller ``max_batch_size``)."""
    return _predict(r, workload, scenario, slo, efficiency, batch_limit, features)


@functools.lru_cache(maxsize=1024)
def _predict(
    r: Replica,
    workload: Workload,
    scenario: Scenario,
    slo: Slo | None,
    efficiency: Efficiency,
    batch_limit: int | None,
    features: Features | None,
) -> Prediction:
    # Pure in its (frozen, hashable) arguments, and asked the same question again and again: one plan of prod asks
    # 47 times for 5 distinct predictions (sizing, the checks of several settings sections, the report), and every
    # settings load runs the checks. The Prediction is frozen, so sharing it is safe.
    if scenario not in SCENARIOS:
        raise SizingError(f"scenario must be one of {', '.join(SCENARIOS)}, got {scenario!r}")
    limit = max_batch(r, workload)
    if batch_limit is not None:
        limit = min(limit, batch_limit)
    if limit < 1:
        raise SizingError(
            f"{r.model.name} TP {r.tp} on {r.node.name}: the KV cache ({kv_capacity_tokens(r)} tokens) cannot hold "
            f"one sequence of {workload.mean_context:.0f} tokens"
        )
    sweep = tuple(point(r, workload, b, efficiency, features) for b in batch_sizes(limit))
    target = slo if scenario == "server" else None
    meeting = [p for p in sweep if p.meets(target)]
    best = max(meeting, key=lambda p: p.tokens_per_s_per_replica) if meeting else None
    if best is not None:
        closest = best
    else:
        assert target is not None

        def excess(p: Point) -> float:
            return max(p.ttft_ms / target.ttft_ms, p.itl_ms / target.itl_ms)

        closest = min(sweep, key=excess)
    return Prediction(
        replica=r,
        workload=workload,
        scenario=scenario,
        slo=target,
        max_batch=limit,
        kv_capacity_tokens=kv_capacity_tokens(r),
        best=best,
        closest=closest,
        sweep=sweep,
    )


def tp_options(model: str | ModelArchitecture, precision: str, instance: str | InstanceType,
               kv_dtype: str = FP8) -> list[Replica]:  # fmt: skip
    """Every power-of-two TP on one node that holds the model with room for KV cache (smallest first)."""
    node = catalog.instance(instance)
    out = []
    tp = 1
    while tp <= node.max_tensor_parallel:
        # A TP that does not hold the model (or split its heads) is simply not an option.
        with contextlib.suppress(SizingError):
            out.append(replica(model, precision, node, tp, kv_dtype))
        tp *= 2
    return out
