"""Latency and throughput of one serving replica under in-flight batching: the planner's building block.

Pure Python, no Pulumi. It refines ``models.decode_step_floor`` (REFERENCE.md §6) into a prediction:

- **Prefill is compute-bound**: ``2 x active params x ISL`` plus causal attention ``2 x layers x ISL^2 x
  hidden`` FLOPs over the replica's FLOPS at ``prefill_mfu`` (never faster than reading the weights once).
- **Decode is bandwidth-bound with a compute ceiling**: a step reads the weights (``/TP``) and every
  sequence's KV cache at ``bandwidth_efficiency`` of peak, and cannot beat ``2 x active params x batch``
  plus the attention FLOPs at ``decode_mfu``; the slower of the two sets the step.
- **Tensor parallelism communicates**: two all-reduces per layer (attention and MLP outputs, Megatron
  style) of ``tokens x hidden`` 16-bit activations, ring cost ``2 (TP-1)/TP x bytes / link`` plus a
  per-collective latency, over NVLink inside a node or EFA across nodes (``Interconnect``).
- **KV capacity bounds the batch**: at most ``kv_capacity_tokens / (ISL + OSL/2)`` sequences (in-flight
  batching keeps sequences at every point of their output), and never more than ``MAX_BATCH``.
- **In-flight batching** interleaves each new request's prefill with the running batch's decode steps,
  so one generation cycle of ``batch`` requests takes ``OSL x step + batch x prefill``; output tokens/s
  is ``batch x OSL / cycle``, the mean time per output token (MLPerf's TPOT, what an ITL SLO bounds) is
  ``cycle / OSL``, and the time to first token is the prefill, one step, and the wait for the prefill
  slot (M/D/1 at the prefill's share of the cycle).

The efficiency constants below were fitted once to the published measurements in
``latency_calibration.CALIBRATION`` (REFERENCE §6 and §10, each with its source) and are the same for every
chip and model; a test holds every row within ``CALIBRATION_TOLERANCE``. ``latency_calibration.CHECKS`` are
published results that were *not* used to fit them.
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass, field
from typing import Final, Literal

from components.catalog import instances as catalog
from components.catalog import models
from components.catalog.instances import FP4, FP8, InstanceType
from components.catalog.models import ModelArchitecture, SizingError

Scenario = Literal["offline", "server"]
SCENARIOS: Final = ("offline", "server")

# TensorRT-LLM's largest CUDA-graph batch in NVIDIA's trtllm-bench options (perf overview, 2026): beyond
# it a step runs without graphs and the scheduler, not memory, limits the batch.
MAX_BATCH: Final = 2048
ACTIVATION_BYTES: Final = 2  # all-reduces carry BF16/FP16 activations whatever the weight precision


@dataclass(frozen=True, kw_only=True)
class Efficiency:
    """Share of peak a real engine reaches. The defaults were fitted once (a coordinate search minimising
    the largest relative error over ``CALIBRATION``, then rounded); the planner uses them as they are.
    Fitted errors: -23 % to +20 % over the calibration rows; -24 % to +15 % on ``CHECKS``.
    """

    bandwidth: float = 0.70
    """Share of peak HBM/GDDR bandwidth a decode step streams at (weights + KV cache)."""
    prefill_mfu: float = 0.55
    """Share of dense peak FLOPS prefill GEMMs reach."""
    decode_mfu: float = 0.50
    """Share of dense peak FLOPS decode GEMMs reach when a large batch makes them compute-bound."""
    fp4_mfu_factor: float = 0.45
    """NVFP4 GEMMs reach a smaller share of their (doubled) peak than FP8 ones: the FP4 peak is listed
    at 2x FP8, but block-scale handling and the BF16 attention keep the gain well below 2x."""
    step_overhead_s: float = 0.004
    """Fixed scheduler, sampling and launch time of one in-flight-batching iteration."""
    per_sequence_overhead_s: float = 8e-6
    """Per-sequence bookkeeping of one iteration (sampling, detokenization hand-off, KV block tables)."""

    def mfu(self, base: float, precision: str) -> float:
        return base * (self.fp4_mfu_factor if precision == FP4 else 1.0)


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


def _unit_rates(r: Replica, eff: Efficiency) -> tuple[float, float | None, float | None, float]:
    """(bandwidth B/s, decode FLOPS, prefill FLOPS, attention FLOPS) of one TP unit, efficiencies applied."""
    accel = r.node.accelerator
    assert accel is not None
    units = accel.tensor_parallel_units
    bandwidth = accel.memory_bandwidth_gbs * 1e9 / units * eff.bandwidth
    tflops = accel.dense_tflops(r.precision)
    # Attention (QK^T, AV) runs in 16 bits even with FP8/FP4 weights (FP8 KV is dequantized on load).
    attn_tflops = accel.bf16_dense_tflops or tflops
    decode = tflops * 1e12 / units * eff.mfu(eff.decode_mfu, r.precision) if tflops else None
    prefill = tflops * 1e12 / units * eff.mfu(eff.prefill_mfu, r.precision) if tflops else None
    attention = (attn_tflops or 0) * 1e12 / units * eff.prefill_mfu
    return bandwidth, decode, prefill, attention


def _all_reduce_s(r: Replica, tokens: float) -> float:
    """Two all-reduces per layer of ``tokens x hidden`` activations across ``tp`` ranks."""
    if r.tp == 1:
        return 0.0
    link = r.interconnect
    size = tokens * r.model.hidden_size * ACTIVATION_BYTES
    one = link.latency_s + 2 * (r.tp - 1) / r.tp * size / (link.bandwidth_gbs * 1e9)
    return 2 * r.model.layers * one


def prefill_seconds(r: Replica, isl: int, eff: Efficiency = DEFAULT_EFFICIENCY) -> float:
    """One request's prefill: compute-bound (never faster than one read of the weights), plus its all-reduces."""
    bandwidth, _, prefill_flops, attention_flops = _unit_rates(r, eff)
    arch = r.model
    gemm = 2 * arch.active_params * isl / r.tp
    attention = 2 * arch.layers * isl**2 * arch.hidden_size / r.tp
    read = models.weight_bytes_read_per_step(arch, r.precision, isl) / r.tp / bandwidth
    compute = (gemm / prefill_flops if prefill_flops else 0.0) + (attention / attention_flops if attention_flops else 0)
    return max(compute, read) + _all_reduce_s(r, isl)


def decode_step(
    r: Replica, batch: int, context: float, eff: Efficiency = DEFAULT_EFFICIENCY
) -> tuple[float, str, float]:
    """(seconds, bound, communication seconds) of one decode iteration of ``batch`` sequences."""
    bandwidth, decode_flops, _, attention_flops = _unit_rates(r, eff)
    arch = r.model
    kv_per_unit = models.kv_bytes_per_token(arch, r.kv_dtype) / arch.kv_shards(r.tp)
    read = models.weight_bytes_read_per_step(arch, r.precision, batch) / r.tp + batch * context * kv_per_unit
    memory = read / bandwidth
    gemm = 2 * arch.active_params * batch / r.tp
    attention = 4 * arch.layers * context * arch.hidden_size * batch / r.tp
    compute = (gemm / decode_flops if decode_flops else 0.0) + (attention / attention_flops if attention_flops else 0)
    comm = _all_reduce_s(r, batch)
    overhead = eff.step_overhead_s + eff.per_sequence_overhead_s * batch
    bound = "compute" if compute > memory else "memory"
    return max(memory, compute) + comm + overhead, bound, comm


def point(r: Replica, workload: Workload, batch: int, eff: Efficiency = DEFAULT_EFFICIENCY) -> Point:
    """The steady state of in-flight batching at ``batch`` concurrent sequences (see module doc)."""
    step, bound, comm = decode_step(r, batch, workload.mean_context, eff)
    prefill = prefill_seconds(r, workload.isl, eff)
    prefills = batch * prefill
    cycle = workload.osl * step + prefills
    per_replica = batch * workload.osl / cycle
    # M/D/1 wait for the prefill slot: the prefill engine is busy ``prefills / cycle`` of the time.
    busy = min(prefills / cycle, 0.999)
    wait = busy * prefill / (2 * (1 - busy))
    return Point(
        batch=batch,
        step_s=step,
        decode_bound=bound,  # type: ignore[arg-type]
        prefill_s=prefill,
        communication_s=comm,
        cycle_s=cycle,
        tokens_per_s_per_replica=per_replica,
        tokens_per_s_per_accelerator=per_replica / r.accelerators,
        ttft_ms=(prefill + step + wait) * 1e3,
        itl_ms=cycle / workload.osl * 1e3,
    )


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
) -> Prediction:
    """The batch that gives the most output tokens/s: offline ignores latency, server keeps ``slo``.
    ``batch_limit`` caps the batch (an engine built with a smaller ``max_batch_size``)."""
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
    sweep = tuple(point(r, workload, b, efficiency) for b in batch_sizes(limit))
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
