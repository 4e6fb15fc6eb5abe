"""``inference-platform:capacity``: size serving from demand instead of hand-set replica bounds.

A stack may give ``tokensPerDay`` (input + output tokens), the request shape (``isl``/``osl``) and an
SLO (default: ``serving.slo`` medians). The planner (inference_platform.planners.capacity) then prices the
serving layout the stack already chose (``serving`` model, precision, TP, KV dtype and maxBatchSize on
the pool's cheapest instance type)
and derives:

- serving replicas (when ``inference.replicas`` is not set): the day floor;
- the autoscaler's bounds (night floor .. peak) and the pool's node bounds (``plan_for``; for a loaded stack,
  ``inference_platform.settings.derived.derived_bounds``);
- a refusal when the serving pool's ``maxSize`` cannot carry the planned peak (plus one surge replica).

Every bad value is a problem naming its key: ``capacity.tokensPerDay`` <= 0, ``capacity.nightFraction``
outside (0, 1], an SLO no batch meets (with the best achievable), a model that does not fit, a region
the price table lacks.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from pydantic import Field, create_model, field_validator

from inference_platform.catalog import prices
from inference_platform.catalog.models import SizingError
from inference_platform.planners import capacity as planner
from inference_platform.planners import latency
from inference_platform.planners import planning_factors as factors_catalog
from inference_platform.planners.planning_factors import DEFAULT_FACTORS, PlanningFactors
from inference_platform.settings.base import CheckContext, Problem, Section, SectionModel
from inference_platform.settings.node_pools import NodePoolSettings, NodePoolsSettings, cluster_zones
from inference_platform.settings.serving import ServingSettings

DEFAULT_ISL = 1000
DEFAULT_OSL = 1000
# Production serves from at least two replicas at any hour (one zone or node may fail).
PRODUCTION_MIN_REPLICAS = 2
MAX_TOKENS_PER_DAY = 1e18
"""Several thousand times the largest published fleet (REFERENCE §7: 150 trillion a day, ByteDance >120T):
beyond it the planner's replica counts leave every integer field they go to."""


class CapacitySloSettings(Section):
    ttft_ms: float = Field(gt=0)
    """Time to first token the planned batch must meet (ms)."""
    itl_ms: float = Field(gt=0)
    """Mean inter-token latency the planned batch must meet (ms)."""


class _FactorSettings(Section):
    """One planning factor as ``inferctl capacity calibrate`` writes it (Factor in planning_factors.py)."""

    value: float
    source: Literal["modelled", "measured"] = "modelled"
    """Default ``modelled``. ``measured``: written by ``inferctl capacity calibrate`` from a verify report."""
    basis: str = Field(default="", max_length=factors_catalog.BASIS_MAX_CHARS)
    """Default empty. Why the value: the assumption, or the report, stack and date it was measured on."""

    @field_validator("basis")
    @classmethod
    def _one_line(cls, value: str) -> str:
        problem = factors_catalog.basis_problem(value)
        if problem is not None:
            raise ValueError(problem)
        return value


def _factor(name: str) -> type[_FactorSettings]:
    """The settings model of factor ``name``: its value a finite number (not a string) in its range."""
    low, high = factors_catalog.RANGES[name]
    title = "".join(part.title() for part in name.split("_"))
    return create_model(
        f"{title}FactorSettings",
        __base__=_FactorSettings,
        value=(float, Field(strict=True, ge=low, le=high)),
    )


_ThroughputScale = _factor("throughput_scale")
_TtftScale = _factor("ttft_scale")
_ItlScale = _factor("itl_scale")
_SpeculativeAcceptance = _factor("speculative_acceptance")
_PrefixHitRate = _factor("prefix_hit_rate")
_CachedInputPriceFraction = _factor("cached_input_price_fraction")


class PlanningFactorsSettings(Section):
    """``capacity.factors``: one optional key per PlanningFactors field, named as that field (snake_case,
    as ``inferctl capacity calibrate`` writes them); unset ones keep their modelled defaults."""

    throughput_scale: _ThroughputScale | None = Field(default=None, alias="throughput_scale")  # type: ignore[valid-type]  # built by _factor
    ttft_scale: _TtftScale | None = Field(default=None, alias="ttft_scale")  # type: ignore[valid-type]  # built by _factor
    itl_scale: _ItlScale | None = Field(default=None, alias="itl_scale")  # type: ignore[valid-type]  # built by _factor
    speculative_acceptance: _SpeculativeAcceptance | None = Field(  # type: ignore[valid-type]  # built by _factor
        default=None, alias="speculative_acceptance"
    )
    prefix_hit_rate: _PrefixHitRate | None = Field(default=None, alias="prefix_hit_rate")  # type: ignore[valid-type]  # built by _factor
    cached_input_price_fraction: _CachedInputPriceFraction | None = Field(  # type: ignore[valid-type]  # built by _factor
        default=None, alias="cached_input_price_fraction"
    )

    def as_dict(self) -> dict[str, Any]:
        """The factors set, as ``PlanningFactors.from_dict`` reads them."""
        return self.model_dump(exclude_none=True)


class CapacitySettings(Section):
    key: ClassVar[str] = "capacity"

    tokens_per_day: float | None = Field(default=None, le=MAX_TOKENS_PER_DAY)
    """Default unset: no planning (replicas and pool sizes as written). Input + output tokens a day; must
    be > 0 and at most 1e18."""
    isl: int = Field(default=DEFAULT_ISL, gt=0)
    """Default 1000. Mean input tokens per request."""
    osl: int = Field(default=DEFAULT_OSL, gt=0)
    """Default 1000. Mean output tokens per request."""
    slo: CapacitySloSettings | None = None
    """Default: ``serving.slo`` ttftP50Ms and itlP50Ms."""
    peak_factor: float = Field(default=planner.DEFAULT_PEAK_FACTOR, ge=1)
    """Default 1.23 (REFERENCE §7). Daily peak over the daily average."""
    night_fraction: float = planner.DEFAULT_NIGHT_FRACTION
    """Default 0.5, in (0, 1]. Night load as a share of the day's."""
    night_hours: float = Field(default=planner.DEFAULT_NIGHT_HOURS, ge=0, lt=24)
    """Default 8. Hours a day at the night level."""
    factors: PlanningFactorsSettings | None = None
    """Default unset: the planner's modelled factors (planners/planning_factors.py). Written by
    ``inferctl capacity calibrate``: ``{<PlanningFactors field, e.g. throughput_scale>: {value, source:
    measured|modelled, basis}}``, each measured one naming the verify report, stack and date it came from."""

    def planning_factors(self) -> PlanningFactors:
        return PlanningFactors.from_dict(self.factors.as_dict()) if self.factors else PlanningFactors()

    def _factor_problems(self) -> list[Problem]:
        try:
            self.planning_factors()
        except ValueError as err:
            return [Problem("capacity.factors", str(err))]
        return []

    @property
    def enabled(self) -> bool:
        return self.tokens_per_day is not None

    def problems(self, ctx: CheckContext) -> list[Problem]:
        factors = self._factor_problems()
        if factors or not self.enabled:
            return factors
        shape = self._shape_problems(ctx)
        if shape:
            return shape  # a request the server refuses plans nothing (one problem, not the planner's too)
        region = ctx.region.name if ctx.region else None
        result = plan_for(self, ctx.sections, region, cluster_zones(ctx), production=ctx.production)
        return list(result.problems)

    def _shape_problems(self, ctx: CheckContext) -> list[Problem]:
        """The planned request must be one the server takes: isl within serving.maxInputLen, isl + osl
        within serving.maxSeqLen."""
        serving = ctx.sections.get("serving")
        if not isinstance(serving, ServingSettings):
            return []  # serving reports its own problems
        out = []
        max_input, max_seq = serving.max_input_len, serving.max_seq_len
        if self.isl > max_input:
            out.append(
                Problem("capacity.isl", f"got {self.isl}; beyond serving.maxInputLen ({max_input}): the server "
                        "refuses such prompts")
            )  # fmt: skip
        elif self.isl + self.osl > max_seq:
            out.append(
                Problem("capacity.osl", f"got {self.osl}; isl {self.isl} + osl {self.osl} = {self.isl + self.osl} "
                        f"tokens is beyond serving.maxSeqLen ({max_seq})")
            )  # fmt: skip
        return out


@dataclass(frozen=True)
class CapacityBounds:
    """What the plan derives for the stack (for the rollout, the autoscaler and the pool)."""

    replicas: int
    hpa_min_replicas: int
    hpa_max_replicas: int
    pool_min_nodes: int
    pool_max_nodes: int
    plan: planner.Plan


@dataclass(frozen=True)
class PlanResult:
    bounds: CapacityBounds | None
    problems: tuple[Problem, ...]


def plan_for(
    cap: CapacitySettings,
    sections: Mapping[str, SectionModel],
    region: str | None,
    zones: list[str] | None,
    *,
    production: bool = False,
) -> PlanResult:
    """Plan the serving pool for ``cap``; problems name the key they come from."""
    serving = sections.get("serving")
    pools = sections.get("nodePools")
    out: list[Problem] = []
    # The capacity section's own values first: they do not depend on the other sections.
    if cap.tokens_per_day is None or cap.tokens_per_day <= 0:
        out.append(Problem("capacity.tokensPerDay", f"got {cap.tokens_per_day!r}; expected a number > 0"))
    if not 0 < cap.night_fraction <= 1:
        out.append(Problem("capacity.nightFraction", f"got {cap.night_fraction}; expected a value in (0, 1]"))
    if region is not None and region not in prices.REGIONS:
        out.append(Problem("capacity", f"the price table has no region {region!r} (aws:region); priced regions: "
                                       f"{', '.join(sorted(prices.REGIONS))}"))  # fmt: skip
    if not isinstance(serving, ServingSettings) or not isinstance(pools, NodePoolsSettings) or region is None:
        return PlanResult(None, tuple(out))  # those sections report their own problems
    pool: NodePoolSettings | None = pools.root.get(serving.node_pool)
    if pool is None:
        return PlanResult(None, tuple(out))  # serving names the missing pool
    if out:
        return PlanResult(None, tuple(out))
    assert cap.tokens_per_day is not None
    slo = cap.slo or CapacitySloSettings(ttft_ms=serving.slo.ttft_p50_ms, itl_ms=serving.slo.itl_p50_ms)
    slo_key = "capacity.slo" if cap.slo else "capacity (SLO from serving.slo ttftP50Ms/itlP50Ms)"
    demand = planner.Demand(tokens_per_day=cap.tokens_per_day, isl=cap.isl, osl=cap.osl,
                            slo=latency.Slo(ttft_ms=slo.ttft_ms, itl_ms=slo.itl_ms), peak_factor=cap.peak_factor,
                            night_fraction=cap.night_fraction, night_hours=cap.night_hours)  # fmt: skip
    kv_dtype = serving.kv_cache.resolved_dtype()
    try:
        arch = serving.resolved_architecture()
        instance = planned_instance(pool.instance_types, region)
        option = planner.best_option(planner.Query(
            model=arch, precision=serving.precision, accelerator=instance, workload=demand.workload, slo=demand.slo,
            region=region, kv_dtype=kv_dtype, tp=serving.tensor_parallel, batch_limit=serving.max_batch_size,
            features=serving_features(serving, cap.planning_factors())))  # fmt: skip
    except planner.PlanningError as err:
        key = slo_key if err.field == "slo" else "capacity"
        return PlanResult(None, (Problem(key, f"{err} (serving: {serving.model} {serving.precision} TP "
                                               f"{serving.tensor_parallel} on {serving.node_pool})"),))  # fmt: skip
    except (SizingError, LookupError) as err:
        return PlanResult(None, (Problem("capacity", str(err)),))
    p = planner.plan(demand, option, region=region)
    floor = PRODUCTION_MIN_REPLICAS if production else 1
    hpa_min = max(floor, p.hpa_min)
    bounds = CapacityBounds(
        replicas=max(floor, p.day.replicas),
        hpa_min_replicas=hpa_min,
        # A measured throughput_scale can make the peak one replica while production keeps two: the ceiling
        # is never below the floor (an HPA with minReplicas > maxReplicas is refused by the API server).
        hpa_max_replicas=max(hpa_min, p.hpa_max),
        pool_min_nodes=p.pool_min_nodes,
        pool_max_nodes=max(p.pool_max_nodes, planner.nodes_for(max(hpa_min, p.hpa_max) + 1, option)),
        plan=p,
    )
    max_nodes = pool.max_nodes(zones or [])
    if max_nodes < bounds.pool_max_nodes:
        out.append(
            Problem(
                f"nodePools.{serving.node_pool}.maxSize",
                f"the pool holds at most {max_nodes} nodes but the planned peak needs {bounds.pool_max_nodes} "
                f"({p.peak.replicas} replicas of {option.label} at {p.peak.output_tps:,.0f} output tokens/s, plus "
                "one surge replica); raise maxSize or lower capacity.tokensPerDay",
            )
        )
    return PlanResult(bounds, tuple(out))


def planned_instance(instance_types: list[str], region: str) -> str:
    """The instance type the plan prices the serving layout on: the pool's cheapest on demand in ``region``
    (the first of equals). ``inferctl capacity calibrate`` predicts on the same one."""
    return min(instance_types, key=lambda t: prices.instance_hour(t, region) or float("inf"))


def serving_features(serving: ServingSettings, factors: PlanningFactors = DEFAULT_FACTORS) -> latency.Features:
    """What the stack's serving turns on, sized by ``factors`` (modelled defaults unless measured):
    speculative decoding (``serving.speculative``: maxDraftLen tokens drafted as one chain and verified per
    step, so the chain's depth is its length) and prefix-cache reuse (``serving.kvCache.enableReuse``)."""
    spec = serving.speculative
    drafts = (spec.max_draft_len or 0) if spec.method != "none" else 0
    depth = drafts or None
    return latency.Features.from_factors(factors, draft_tokens=drafts, draft_depth=depth,
                                         prefix_reuse=bool(serving.kv_cache.enable_reuse))  # fmt: skip
