"""Capacity planning: from tokens/day and a latency SLO to replicas, GPUs, nodes, pool sizes and money.

Pure Python, no Pulumi. Builds on ``latency.predict`` (the calibrated per-replica model) and the prices.

Conventions, each stated once here:
- ``tokens_per_day`` counts input + output tokens (how providers report daily volume, e.g. the reference
  design's 150 T/day, REFERENCE §7); the output share is ``osl / (isl + osl)``.
- The day has ``night_hours`` (default 8) of night traffic at ``night_fraction`` of the day's level; the
  daily peak is ``peak_factor`` x the daily average (default 1.23, DeepSeek's fleet peak over its daily
  mean, REFERENCE §7). Replicas follow the load between the night floor and the peak.
- A replica runs at the best batch meeting the SLO (``latency.predict``, server scenario); that rate is
  its capacity, and the autoscaler keeps each replica at ``scaling_target`` of it. Expected utilisation
  is served tokens over the capacity of the replicas running (load against SLO capacity, not SM
  occupancy).
- Money: on-demand from ``prices``; ``spot`` prices every replica at the spot factor; ``reserved``
  reserves the night floor around the clock and buys the rest on demand.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any, Final

from inference_platform.catalog import instances as catalog
from inference_platform.catalog import models, prices
from inference_platform.catalog.instances import CatalogError, InstanceType
from inference_platform.catalog.models import SizingError
from inference_platform.planners import latency
from inference_platform.planners.latency import Prediction, Replica, Slo, Workload
from inference_platform.planners.planning_factors import PlanningFactors

SECONDS_PER_DAY: Final = 86_400
DAYS_PER_MONTH: Final = prices.HOURS_PER_MONTH / 24
DEFAULT_PEAK_FACTOR: Final = 1.23
DEFAULT_NIGHT_FRACTION: Final = 0.5
DEFAULT_NIGHT_HOURS: Final = 8
# EKS quotas: 30 managed node groups per cluster x 450 nodes each; clusters of several thousand nodes
# need control-plane scaling. 1,000 GPU nodes per cluster is a conservative planning default.
DEFAULT_MAX_NODES_PER_CLUSTER: Final = 1000
# Replicas are added when each carries this share of its SLO-meeting rate: a new replica needs minutes
# to load its model (REFERENCE §9), so the running ones must absorb growth meanwhile.
DEFAULT_SCALING_TARGET: Final = 0.8


class PlanningError(SizingError):
    """Bad planning input; ``field`` names the input (the CLI maps it to a flag, settings to a key)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


@dataclass(frozen=True, kw_only=True)
class Demand:
    """What a plan must carry."""

    tokens_per_day: float
    isl: int
    osl: int
    slo: Slo
    peak_factor: float = DEFAULT_PEAK_FACTOR
    night_fraction: float = DEFAULT_NIGHT_FRACTION
    night_hours: float = DEFAULT_NIGHT_HOURS

    def __post_init__(self) -> None:
        checks = [
            ("tokens_per_day", self.tokens_per_day > 0, f"must be > 0, got {self.tokens_per_day:g}"),
            ("isl", self.isl > 0, f"must be > 0, got {self.isl}"),
            ("osl", self.osl > 0, f"must be > 0, got {self.osl}"),
            ("peak_factor", self.peak_factor >= 1, f"must be >= 1, got {self.peak_factor:g}"),
            ("night_fraction", 0 < self.night_fraction <= 1, f"must be in (0, 1], got {self.night_fraction:g}"),
            ("night_hours", 0 <= self.night_hours < 24, f"must be in [0, 24), got {self.night_hours:g}"),
        ]
        for name, ok, message in checks:
            if not ok:
                raise PlanningError(name, message)

    @property
    def workload(self) -> Workload:
        return Workload(isl=self.isl, osl=self.osl)

    @property
    def output_share(self) -> float:
        return self.osl / (self.isl + self.osl)

    @property
    def average_output_tps(self) -> float:
        return self.tokens_per_day * self.output_share / SECONDS_PER_DAY

    @property
    def day_output_tps(self) -> float:
        """Daytime level: the average rescaled so night hours run at ``night_fraction`` of it."""
        day_hours = 24 - self.night_hours
        return self.average_output_tps * 24 / (day_hours + self.night_fraction * self.night_hours)

    @property
    def night_output_tps(self) -> float:
        return self.day_output_tps * self.night_fraction

    @property
    def peak_output_tps(self) -> float:
        return max(self.average_output_tps * self.peak_factor, self.day_output_tps)


@dataclass(frozen=True)
class Option:
    """One way to serve: a replica layout, its SLO-meeting rate and its price."""

    replica: Replica
    prediction: Prediction
    node_hour_usd: float
    features: latency.Features | None = None
    """The serving features (speculative decoding, prefix reuse, measured scales) the prediction used."""

    @property
    def point(self) -> latency.Point:
        assert self.prediction.best is not None
        return self.prediction.best

    @property
    def tokens_per_s_per_replica(self) -> float:
        return self.point.tokens_per_s_per_replica

    @property
    def accelerators_per_replica(self) -> float:
        return self.replica.accelerators

    @property
    def replicas_per_node(self) -> int:
        return max(1, math.floor(self.replica.node.max_tensor_parallel / self.replica.tp))

    @property
    def replica_hour_usd(self) -> float:
        return self.node_hour_usd * self.replica.nodes / self.replicas_per_node

    @property
    def usd_per_million_output_tokens(self) -> float:
        """At full SLO-meeting load, on demand."""
        return self.replica_hour_usd / (self.tokens_per_s_per_replica * 3600) * 1e6

    @property
    def label(self) -> str:
        return f"{self.replica.node.name} TP{self.replica.tp}"


def instances_for(accelerator_or_instance: str) -> tuple[InstanceType, ...]:
    """The node types to consider: the named instance type, or every catalogued type with that chip."""
    name = accelerator_or_instance.strip()
    if name in catalog.CATALOG:
        return (catalog.instance(name),)
    chips = {c.model for c in catalog.ACCELERATORS}
    if name.lower() not in chips:
        raise PlanningError(
            "accelerator",
            f"unknown accelerator {name!r}: use a chip ({', '.join(sorted(chips))}) or an instance type "
            f"({', '.join(t for t in catalog.known_instance_types() if catalog.CATALOG[t].is_accelerated)})",
        )
    return tuple(t for t in catalog.CATALOG.values() if t.accelerator_model == name.lower())


@dataclass(frozen=True, kw_only=True)
class Query:
    """What to search the layouts for: a model at a precision on a chip or instance type, serving a
    workload under an SLO."""

    model: str | models.ModelArchitecture
    """Required. A catalogued model name or its architecture."""
    precision: str
    """Required. Weight precision (``fp8``, ``bf16``, ``fp4`` ...)."""
    accelerator: str
    """Required. A chip (``h100``) for every catalogued node type with it, or one instance type."""
    workload: Workload
    """Required. Input and output tokens per request."""
    slo: Slo | None
    """Required. The latency targets; ``None`` in the offline scenario."""
    region: str = prices.BASE_REGION
    """Default us-east-1. The price table's region."""
    kv_dtype: str = catalog.FP8
    """Default ``fp8``. KV-cache dtype."""
    scenario: latency.Scenario = "server"
    """Default ``server``."""
    tp: int | None = None
    """Default any. Only this tensor-parallel degree."""
    batch_limit: int | None = None
    """Default the KV cache's bound. The serving engine's max batch (``serving.maxBatchSize``)."""
    features: latency.Features | None = None
    """Default none. Speculative decoding, prefix-cache reuse and measured scales (``Features.from_factors``)."""


def options(query: Query) -> tuple[list[Option], list[Prediction]]:
    """(options meeting the SLO, predictions that do not) over every node type and TP that fits, cheapest
    per output token first; PlanningError('model') when the model fits no TP at all."""
    met: list[Option] = []
    missed: list[Prediction] = []
    fits = False
    problems: list[str] = []
    for node in instances_for(query.accelerator):
        try:
            layouts = latency.tp_options(query.model, query.precision, node, kv_dtype=query.kv_dtype)
        except (SizingError, CatalogError) as err:
            problems.append(str(err))
            continue
        price = prices.instance_hour(node.name, query.region)
        for r in layouts:
            try:
                p = latency.predict(r, query.workload, scenario=query.scenario, slo=query.slo,
                                    batch_limit=query.batch_limit, features=query.features)  # fmt: skip
            except SizingError as err:
                problems.append(str(err))
                continue
            fits = True
            if query.tp is not None and r.tp != query.tp:
                continue
            if p.met and price is not None:
                met.append(Option(r, p, price, query.features))
            elif not p.met:
                missed.append(p)
    if not fits:
        arch = models.architecture(query.model)
        detail = f" ({problems[0]})" if problems else ""
        raise PlanningError(
            "model",
            f"{arch.name} at {query.precision} does not fit any TP on {query.accelerator} "
            f"with room for one {query.workload.isl}+{query.workload.osl}-token sequence{detail}",
        )
    met.sort(key=lambda o: o.usd_per_million_output_tokens)
    return met, missed


def best_option(query: Query) -> Option:
    """The cheapest layout per output token that meets the SLO; PlanningError('slo') with the best
    achievable latency when none does, PlanningError('tp') when ``query.tp`` is no layout that fits."""
    met, missed = options(query)
    if met:
        return met[0]
    if not missed:
        raise PlanningError("tp", f"TP {query.tp} is not a layout that fits on {query.accelerator}")
    slo = query.slo
    assert slo is not None
    nearest = min(missed, key=lambda p: max(p.closest.ttft_ms / slo.ttft_ms, p.closest.itl_ms / slo.itl_ms))
    ttft = min(p.sweep[0].ttft_ms for p in missed)
    itl = min(p.sweep[0].itl_ms for p in missed)
    raise PlanningError(
        "slo",
        f"no batch meets TTFT <= {slo.ttft_ms:g} ms and ITL <= {slo.itl_ms:g} ms on {query.accelerator}: "
        f"the best achievable is TTFT {ttft:.0f} ms and ITL {itl:.1f} ms at batch 1 (closest: "
        f"{nearest.replica.node.name} TP{nearest.replica.tp} batch {nearest.closest.batch}, TTFT "
        f"{nearest.closest.ttft_ms:.0f} ms, ITL {nearest.closest.itl_ms:.1f} ms)",
    )


@dataclass(frozen=True)
class Level:
    """Replicas, accelerators and nodes for one load level."""

    name: str
    output_tps: float
    replicas: int
    accelerators: float
    nodes: int


@dataclass(frozen=True)
class Money:
    on_demand: float
    spot: float
    reserved: float


@dataclass(frozen=True)
class Plan:
    demand: Demand
    option: Option
    region: str
    peak: Level
    day: Level
    night: Level
    hpa_min: int
    hpa_max: int
    pool_min_nodes: int
    pool_max_nodes: int
    expected_utilisation: float
    monthly_usd: Money
    usd_per_million_output: Money
    usd_per_million_total: Money
    price_per_million_output: float | None = None
    price_per_million_input: float | None = None
    spot_factor: float = prices.DEFAULT_SPOT_FACTOR
    reserved_factor: float = prices.DEFAULT_RESERVED_FACTOR
    factors: PlanningFactors | None = None
    """The planning factors the plan used (each modelled or measured), when the caller gave them."""
    node_hours_per_day: float = 0.0
    """Whole nodes (whole multi-node groups) running, summed over the day: what is billed."""
    accelerator_use: float = 1.0
    """Accelerators the replicas occupy over accelerators on the billed nodes (node-hour weighted)."""
    notes: tuple[str, ...] = field(default=())

    @property
    def node_hour_usd(self) -> float:
        return self.option.node_hour_usd

    @property
    def node_monthly_usd(self) -> float:
        """What one node costs a month on demand, around the clock."""
        return self.option.node_hour_usd * prices.HOURS_PER_MONTH

    @property
    def input_share(self) -> float:
        return 1 - self.demand.output_share

    @property
    def revenue_per_million_total(self) -> float | None:
        """Blended selling price of a million tokens (input + output, at the demand's isl:osl), or None
        without prices. A missing side counts as free."""
        if self.price_per_million_input is None and self.price_per_million_output is None:
            return None
        p_in = self.price_per_million_input or 0.0
        p_out = self.price_per_million_output or 0.0
        return self.input_share * p_in * self.input_price_share + self.demand.output_share * p_out

    @property
    def input_price_share(self) -> float:
        """Share of the input price an average input token earns: prefix-cache hits sell at
        ``PlanningFactors.cached_input_price_fraction`` of it (1.0 when reuse is off or not discounted)."""
        f = self.option.features
        if f is None or not f.prefix_hit_rate or self.factors is None:
            return 1.0
        return 1 - f.prefix_hit_rate * (1 - self.factors.cached_input_price_fraction.value)

    @property
    def gross_margin(self) -> Money | None:
        """(revenue - cost) / revenue per million total tokens, for each purchase mix."""
        rev = self.revenue_per_million_total
        if not rev:
            return None
        c = self.usd_per_million_total
        return Money((rev - c.on_demand) / rev, (rev - c.spot) / rev, (rev - c.reserved) / rev)

    @property
    def margin_per_million_total(self) -> Money | None:
        """Revenue minus cost per million total tokens (USD), for each purchase mix."""
        rev = self.revenue_per_million_total
        if rev is None:
            return None
        c = self.usd_per_million_total
        return Money(rev - c.on_demand, rev - c.spot, rev - c.reserved)


def _level(name: str, tps: float, option: Option, target: float, floor: int = 1) -> Level:
    replicas = max(floor, math.ceil(tps / (option.tokens_per_s_per_replica * target)))
    return Level(
        name=name,
        output_tps=tps,
        replicas=replicas,
        accelerators=replicas * option.accelerators_per_replica,
        nodes=nodes_for(replicas, option),
    )


def nodes_for(replicas: int, option: Option) -> int:
    """Whole nodes ``replicas`` need: whole multi-node groups, or replicas packed per node."""
    if option.replica.nodes > 1:
        return replicas * option.replica.nodes
    return math.ceil(replicas / option.replicas_per_node)


def plan(
    demand: Demand,
    option: Option,
    *,
    region: str = prices.BASE_REGION,
    price_per_million_output: float | None = None,
    price_per_million_input: float | None = None,
    spot_factor: float = prices.DEFAULT_SPOT_FACTOR,
    reserved_factor: float = prices.DEFAULT_RESERVED_FACTOR,
    surge_replicas: int = 1,
    scaling_target: float = DEFAULT_SCALING_TARGET,
    factors: PlanningFactors | None = None,
) -> Plan:
    """Replicas, bounds, utilisation and money for ``demand`` served by ``option``.

    Money counts whole nodes: each level bills ``nodes_for(replicas)`` nodes at the node's hourly price
    (a replica of one GPU on an 8-GPU node bills the node), so small deployments cost what they rent.
    """
    if not 0 < spot_factor <= 1:
        raise PlanningError("spot_factor", f"must be in (0, 1], got {spot_factor:g}")
    if not 0 < reserved_factor <= 1:
        raise PlanningError("reserved_factor", f"must be in (0, 1], got {reserved_factor:g}")
    for name, value in (("price_per_million_output", price_per_million_output),
                        ("price_per_million_input", price_per_million_input)):  # fmt: skip
        if value is not None and value < 0:
            raise PlanningError(name, f"must be >= 0, got {value:g}")
    if not 0 < scaling_target <= 1:
        raise PlanningError("scaling_target", f"must be in (0, 1], got {scaling_target:g}")
    prices.region_pricing(region)
    peak = _level("peak", demand.peak_output_tps, option, scaling_target)
    day = _level("day floor", demand.day_output_tps, option, scaling_target)
    night = _level("night floor", demand.night_output_tps, option, scaling_target)
    hpa_min, hpa_max = night.replicas, peak.replicas
    pool_min = night.nodes
    pool_max = nodes_for(peak.replicas + surge_replicas, option)

    day_hours = 24 - demand.night_hours
    # The peak sits inside the day: replicas above the day floor run for the peak's share of the day.
    peak_hours = day_hours * max(0.0, 1 - 1 / demand.peak_factor) if demand.peak_factor > 1 else 0.0
    replica_hours_per_day = (day.replicas * day_hours + night.replicas * demand.night_hours
                             + (peak.replicas - day.replicas) * peak_hours)  # fmt: skip
    node_hours_per_day = (day.nodes * day_hours + night.nodes * demand.night_hours
                          + (peak.nodes - day.nodes) * peak_hours)  # fmt: skip
    capacity_tokens = replica_hours_per_day * 3600 * option.tokens_per_s_per_replica
    served = demand.average_output_tps * SECONDS_PER_DAY
    utilisation = min(1.0, served / capacity_tokens)
    per_node = option.replica.node.accelerator_count
    accelerator_use = (replica_hours_per_day * option.accelerators_per_replica / (node_hours_per_day * per_node)
                       if per_node else 1.0)  # fmt: skip

    hour = option.node_hour_usd
    on_demand = node_hours_per_day * DAYS_PER_MONTH * hour
    spot = on_demand * spot_factor
    floor_hours = night.nodes * 24 * DAYS_PER_MONTH
    reserved = floor_hours * hour * reserved_factor + (node_hours_per_day * DAYS_PER_MONTH - floor_hours) * hour
    monthly = Money(on_demand, spot, reserved)
    out_m = served * DAYS_PER_MONTH / 1e6
    total_m = demand.tokens_per_day * DAYS_PER_MONTH / 1e6
    notes = []
    if accelerator_use < 0.75:
        notes.append(
            f"whole nodes: {option.replica.node.name} costs ${hour:,.2f}/h (${hour * prices.HOURS_PER_MONTH:,.0f} a "
            f"month) and the replicas use {accelerator_use:.0%} of its {per_node} accelerators"
        )
    return Plan(
        demand=demand,
        option=option,
        region=region,
        peak=peak,
        day=day,
        night=night,
        hpa_min=hpa_min,
        hpa_max=hpa_max,
        pool_min_nodes=pool_min,
        pool_max_nodes=pool_max,
        expected_utilisation=utilisation,
        monthly_usd=monthly,
        usd_per_million_output=Money(on_demand / out_m, spot / out_m, reserved / out_m),
        usd_per_million_total=Money(on_demand / total_m, spot / total_m, reserved / total_m),
        price_per_million_output=price_per_million_output,
        price_per_million_input=price_per_million_input,
        spot_factor=spot_factor,
        reserved_factor=reserved_factor,
        factors=factors,
        node_hours_per_day=node_hours_per_day,
        accelerator_use=accelerator_use,
        notes=tuple(notes),
    )


def best_plan(demand: Demand, query: Query, **plan_kwargs: Any) -> tuple[Plan, list[Plan]]:
    """(the cheapest whole-node plan for ``demand`` over every layout and node size that meets the SLO,
    the other plans cheapest first). Small loads pick the smallest node that carries them; large ones
    the cheapest per token. PlanningError as ``best_option``."""
    best_option(query)  # raises the SLO / fit / TP errors
    met, _ = options(query)
    plans = [plan(demand, o, region=query.region, **plan_kwargs) for o in met]
    plans.sort(key=lambda p: (p.monthly_usd.on_demand, p.option.usd_per_million_output_tokens))
    return plans[0], plans[1:]


def smaller_nodes(demand: Demand, query: Query, chosen: Plan, **plan_kwargs: Any) -> list[Plan]:
    """Plans on smaller instance types of the chosen accelerator that also carry the load, cheapest first
    (every catalogued size of the chip, even when ``query`` named one instance type)."""
    node = chosen.option.replica.node
    assert node.accelerator_model is not None
    sized = dataclasses.replace(query, accelerator=node.accelerator_model)
    try:
        met, _ = options(sized)
    except PlanningError:
        return []
    out = [plan(demand, o, region=query.region, **plan_kwargs) for o in met
           if o.replica.node.accelerator_count < node.accelerator_count]  # fmt: skip
    best: dict[str, Plan] = {}
    for p in sorted(out, key=lambda p: p.monthly_usd.on_demand):
        best.setdefault(p.option.replica.node.name, p)
    return list(best.values())[:3]


# The limits one cluster and one pool run into (Kubernetes "Considerations for large clusters": at most
# 5,000 nodes per cluster; EKS service quotas: 450 nodes per managed node group, 30 groups per cluster).
K8S_MAX_NODES_PER_CLUSTER: Final = 5000
EKS_MAX_NODES_PER_MANAGED_NODE_GROUP: Final = 450


def single_pool_problem(p: Plan) -> str | None:
    """Why ``p`` cannot be one pool of one cluster (None when it can)."""
    nodes = p.pool_max_nodes
    if nodes > K8S_MAX_NODES_PER_CLUSTER:
        return (f"the peak needs {nodes:,} nodes of {p.option.replica.node.name}: beyond Kubernetes' "
                f"{K8S_MAX_NODES_PER_CLUSTER:,} nodes per cluster (and EKS's {EKS_MAX_NODES_PER_MANAGED_NODE_GROUP} "
                "per managed node group)")  # fmt: skip
    if nodes > EKS_MAX_NODES_PER_MANAGED_NODE_GROUP:
        return (f"the peak needs {nodes:,} nodes of {p.option.replica.node.name}: beyond EKS's "
                f"{EKS_MAX_NODES_PER_MANAGED_NODE_GROUP} nodes per managed node group")  # fmt: skip
    return None


RANK_BASIS: Final = "$/M total tokens (input + output), on demand, whole nodes, at this demand"


def compare(
    model: str | models.ModelArchitecture,
    precision: str,
    workload: Workload,
    slo: Slo,
    *,
    region: str = prices.BASE_REGION,
    kv_dtype: str = catalog.FP8,
) -> list[tuple[str, Option | None, str]]:
    """Every accelerator's cheapest layout per output token at full load: (chip, option or None, why not),
    ranked by ``Option.usd_per_million_output_tokens``. For a given demand use ``compare_plans``."""
    rows: list[tuple[str, Option | None, str]] = []
    for chip in catalog.ACCELERATORS:
        if precision not in chip.precisions or kv_dtype not in chip.precisions:
            rows.append((chip.model, None, f"{precision} weights / {kv_dtype} KV cache do not run on {chip.model}"))
            continue
        try:
            query = Query(model=model, precision=precision, accelerator=chip.model, workload=workload, slo=slo,
                          region=region, kv_dtype=kv_dtype)  # fmt: skip
            rows.append((chip.model, best_option(query), ""))
        except PlanningError as err:
            rows.append((chip.model, None, str(err)))
    rows.sort(key=lambda r: (r[1] is None, r[1].usd_per_million_output_tokens if r[1] else 0.0))
    return rows


def compare_plans(
    demand: Demand,
    model: str | models.ModelArchitecture,
    precision: str,
    *,
    region: str = prices.BASE_REGION,
    kv_dtype: str = catalog.FP8,
    features: latency.Features | None = None,
    **plan_kwargs: Any,
) -> list[tuple[str, Plan | None, str]]:
    """Every accelerator's cheapest whole-node plan for ``demand``: (chip, plan or None, why not), ranked by
    the figure ``RANK_BASIS`` names (``Plan.usd_per_million_total.on_demand``), unavailable chips last."""
    rows: list[tuple[str, Plan | None, str]] = []
    for chip in catalog.ACCELERATORS:
        if precision not in chip.precisions or kv_dtype not in chip.precisions:
            rows.append((chip.model, None, f"{precision} weights / {kv_dtype} KV cache do not run on {chip.model}"))
            continue
        try:
            query = Query(model=model, precision=precision, accelerator=chip.model, workload=demand.workload,
                          slo=demand.slo, region=region, kv_dtype=kv_dtype, features=features)  # fmt: skip
            rows.append((chip.model, best_plan(demand, query, **plan_kwargs)[0], ""))
        except PlanningError as err:
            rows.append((chip.model, None, str(err)))
    rows.sort(key=lambda r: (r[1] is None, r[1].usd_per_million_total.on_demand if r[1] else 0.0))
    return rows


# --- Fleet ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ClusterStack:
    name: str
    region: str
    nodes: int
    accelerators: int
    replicas: int


@dataclass(frozen=True)
class Fleet:
    plan: Plan
    clusters: tuple[ClusterStack, ...]
    accelerators_needed: int
    """At the peak, without failure headroom."""
    accelerators_provisioned: int
    """With every cluster sized so the others carry the peak when one is lost."""


def fleet(
    plan_: Plan,
    quotas: dict[str, int],
    *,
    max_nodes_per_cluster: int = DEFAULT_MAX_NODES_PER_CLUSTER,
    name_prefix: str = "serve",
) -> Fleet:
    """Split the peak over clusters in regions with GPU ``quotas`` so losing any one cluster keeps the
    SLO: N clusters each carry ``peak / (N - 1)``. The smallest N that fits the node limit and quotas."""
    if not quotas:
        raise PlanningError("region_quota", "give at least one region with its accelerator quota")
    for region, quota in quotas.items():
        prices.region_pricing(region)
        if quota <= 0:
            raise PlanningError("region_quota", f"{region}: quota must be > 0, got {quota}")
    if max_nodes_per_cluster <= 0:
        raise PlanningError("max_nodes_per_cluster", f"must be > 0, got {max_nodes_per_cluster}")
    option = plan_.option
    per_node = option.replica.node.accelerator_count
    peak_replicas = plan_.peak.replicas
    needed = math.ceil(peak_replicas * option.accelerators_per_replica)
    replicas_per_cluster_cap = max_nodes_per_cluster * option.replicas_per_node // max(option.replica.nodes, 1)
    if replicas_per_cluster_cap < 1:
        raise PlanningError("max_nodes_per_cluster", f"one replica needs {option.replica.nodes} nodes")
    total_quota = sum(quotas.values())
    for n in range(2, 100_000):
        per_cluster = math.ceil(peak_replicas / (n - 1))
        if per_cluster > replicas_per_cluster_cap:
            continue
        cluster_gpus = nodes_for(per_cluster, option) * per_node
        if n * cluster_gpus > total_quota:
            break
        placed = _place(n, cluster_gpus, quotas)
        if placed is None:
            continue
        clusters = []
        for region, count in placed.items():
            for i in range(count):
                clusters.append(ClusterStack(name=f"{name_prefix}-{region}-{i + 1}", region=region,
                                             nodes=nodes_for(per_cluster, option), accelerators=cluster_gpus,
                                             replicas=per_cluster))  # fmt: skip
        return Fleet(plan_, tuple(clusters), needed, sum(c.accelerators for c in clusters))
    raise PlanningError(
        "region_quota",
        f"quotas of {total_quota} accelerators cannot hold {needed} at the peak plus one cluster of headroom "
        f"(at most {max_nodes_per_cluster} nodes per cluster); raise quotas or add regions",
    )


@dataclass(frozen=True)
class RegionCells:
    """The fleet's clusters in one region (they are sized alike: ``fleet`` gives every cluster the same share)."""

    region: str
    clusters: int
    nodes_per_cluster: int
    accelerators: int
    replicas_per_cluster: int
    monthly_expected_usd: float
    """On demand: each cluster carries 1/N of the demand and scales with it by day and night, priced as ``plan``
    prices one cluster (whole nodes), at the region's price."""
    monthly_ceiling_usd: float
    """On demand: every provisioned node around the clock (a lost cluster's share carried by the others)."""


@dataclass(frozen=True)
class FleetSummary:
    regions: tuple[RegionCells, ...]
    monthly_expected_usd: float
    monthly_ceiling_usd: float
    usd_per_million_total: float
    """Expected month over the month's input + output tokens."""
    usd_per_million_output: float


def fleet_summary(f: Fleet) -> FleetSummary:
    """The fleet by region with its money: what a summary of 89 identical clusters says in a few rows."""
    demand, option = f.plan.demand, f.plan.option
    share = dataclasses.replace(demand, tokens_per_day=demand.tokens_per_day / len(f.clusters))
    rows = []
    for region in dict.fromkeys(c.region for c in f.clusters):
        cells = [c for c in f.clusters if c.region == region]
        hour = prices.instance_hour(option.replica.node.name, region)
        if hour is None:
            raise PlanningError("region_quota", f"{region}: no price for {option.replica.node.name}")
        one = plan(share, dataclasses.replace(option, node_hour_usd=hour), region=region)
        rows.append(
            RegionCells(
                region=region,
                clusters=len(cells),
                nodes_per_cluster=cells[0].nodes,
                accelerators=sum(c.accelerators for c in cells),
                replicas_per_cluster=cells[0].replicas,
                monthly_expected_usd=one.monthly_usd.on_demand * len(cells),
                monthly_ceiling_usd=sum(c.nodes for c in cells) * hour * prices.HOURS_PER_MONTH,
            )
        )
    expected = sum(r.monthly_expected_usd for r in rows)
    total_m = demand.tokens_per_day * DAYS_PER_MONTH / 1e6
    return FleetSummary(
        regions=tuple(rows),
        monthly_expected_usd=expected,
        monthly_ceiling_usd=sum(r.monthly_ceiling_usd for r in rows),
        usd_per_million_total=expected / total_m,
        usd_per_million_output=expected / (total_m * demand.output_share),
    )


def _place(n: int, cluster_gpus: int, quotas: dict[str, int]) -> dict[str, int] | None:
    """Spread ``n`` clusters over regions within quota, round-robin by remaining quota."""
    left = dict(quotas)
    placed = dict.fromkeys(quotas, 0)
    for _ in range(n):
        region = max(left, key=lambda r: (left[r], -placed[r]))
        if left[region] < cluster_gpus:
            return None
        left[region] -= cluster_gpus
        placed[region] += 1
    return {r: c for r, c in placed.items() if c}
