"""The planner: demand shape, option search, replica levels, bounds, money, comparison and fleets, and
every bad input naming its field."""

from __future__ import annotations

import math

import pytest

from inference_platform.catalog import prices
from inference_platform.planners import capacity
from inference_platform.planners.capacity import Demand, PlanningError
from inference_platform.planners.latency import Slo, Workload

SLO = Slo(ttft_ms=400, itl_ms=40)
W = Workload(isl=1000, osl=1000)


def _demand(**kw) -> Demand:
    return Demand(**({"tokens_per_day": 1e12, "isl": 1000, "osl": 1000, "slo": SLO} | kw))


def test_demand_levels_average_back_to_the_daily_volume():
    d = _demand(night_fraction=0.4, night_hours=8)
    daily = d.day_output_tps * 16 * 3600 + d.night_output_tps * 8 * 3600
    assert daily == pytest.approx(1e12 * d.output_share)
    assert d.peak_output_tps >= d.day_output_tps > d.average_output_tps > d.night_output_tps


@pytest.mark.parametrize(
    ("field", "kw"),
    [
        ("tokens_per_day", {"tokens_per_day": 0}),
        ("tokens_per_day", {"tokens_per_day": -5}),
        ("night_fraction", {"night_fraction": 0}),
        ("night_fraction", {"night_fraction": 1.5}),
        ("peak_factor", {"peak_factor": 0.9}),
        ("isl", {"isl": 0}),
    ],
)
def test_bad_demand_names_its_field(field, kw):
    with pytest.raises(PlanningError) as err:
        _demand(**kw)
    assert err.value.field == field


def query(model, accelerator, slo=SLO, **kw):
    return capacity.Query(model=model, precision="fp8", accelerator=accelerator, workload=W, slo=slo, **kw)


def test_best_option_meets_the_slo_and_is_the_cheapest():
    met, _ = capacity.options(query("Llama-3.1-70B", "h100"))
    best = capacity.best_option(query("Llama-3.1-70B", "h100"))
    assert best.point.ttft_ms <= SLO.ttft_ms and best.point.itl_ms <= SLO.itl_ms
    assert best.usd_per_million_output_tokens == min(o.usd_per_million_output_tokens for o in met)
    # $/M from first principles: the replica's share of the node's hour over its tokens in an hour.
    per_hour = 55.04 * best.replica.tp / 8
    assert best.usd_per_million_output_tokens == pytest.approx(per_hour / (best.tokens_per_s_per_replica * 3.6e-3))


def test_unknown_accelerator_unmeetable_slo_and_model_that_does_not_fit():
    with pytest.raises(PlanningError) as err:
        capacity.best_option(query("Llama-3.1-70B", "h300"))
    assert err.value.field == "accelerator" and "h100" in str(err.value)
    with pytest.raises(PlanningError) as err:
        capacity.best_option(query("Llama-3.1-70B", "h100", Slo(ttft_ms=5, itl_ms=2)))
    assert err.value.field == "slo" and "best achievable" in str(err.value)
    with pytest.raises(PlanningError) as err:
        capacity.best_option(query("Llama-3.1-405B", "g6e.xlarge"))
    assert err.value.field == "model"
    with pytest.raises(PlanningError) as err:
        capacity.best_option(query("Llama-3.1-70B", "h100", tp=3))
    assert err.value.field == "tp"


def test_a_query_limited_to_one_tp_searches_only_that_layout():
    met, missed = capacity.options(query("Llama-3.1-70B", "h100", tp=4))
    assert met and {o.replica.tp for o in met} == {4} and all(p.replica.tp == 4 for p in missed)


def test_plan_levels_bounds_utilisation_and_money():
    d = _demand()
    option = capacity.best_option(query("Llama-3.1-70B", "h100"))
    p = capacity.plan(d, option, price_per_million_output=2.0)
    rate = option.tokens_per_s_per_replica * capacity.DEFAULT_SCALING_TARGET
    assert p.peak.replicas == math.ceil(d.peak_output_tps / rate)
    assert p.night.replicas <= p.day.replicas <= p.peak.replicas
    assert (p.hpa_min, p.hpa_max) == (p.night.replicas, p.peak.replicas)
    assert p.pool_min_nodes == p.night.nodes and p.pool_max_nodes >= p.peak.nodes
    assert 0.6 < p.expected_utilisation <= capacity.DEFAULT_SCALING_TARGET + 0.01
    assert p.monthly_usd.spot < p.monthly_usd.reserved < p.monthly_usd.on_demand
    assert p.usd_per_million_total.on_demand == pytest.approx(p.usd_per_million_output.on_demand * d.output_share)
    margin = p.gross_margin
    assert margin is not None and margin.on_demand == pytest.approx((2.0 - p.usd_per_million_output.on_demand) / 2.0)


def test_plan_refuses_a_region_without_prices():
    option = capacity.best_option(query("Llama-3.1-8B", "l4", Slo(ttft_ms=2000, itl_ms=60)))
    with pytest.raises(prices.PriceError, match="eu-west-1"):
        capacity.plan(_demand(tokens_per_day=1e9), option, region="eu-west-1")


def test_compare_ranks_by_cost_and_explains_the_rest():
    rows = capacity.compare("Llama-3.1-70B", "fp8", W, SLO)
    priced = [o.usd_per_million_output_tokens for _, o, _ in rows if o]
    assert priced == sorted(priced) and len(priced) >= 3
    assert all(why for _, o, why in rows if o is None)


def test_fleet_keeps_the_slo_when_one_cluster_is_lost():
    d = _demand(tokens_per_day=150e12)
    option = capacity.best_option(query("Llama-3.1-70B", "b200"))
    p = capacity.plan(d, option)
    quotas = {"us-east-1": 120_000, "us-east-2": 120_000, "us-west-2": 120_000}
    f = capacity.fleet(p, quotas, max_nodes_per_cluster=1000)
    assert len(f.clusters) >= 2
    for lost in f.clusters:
        assert sum(c.replicas for c in f.clusters if c is not lost) >= p.peak.replicas
    for region, quota in quotas.items():
        assert sum(c.accelerators for c in f.clusters if c.region == region) <= quota
    assert all(c.nodes <= 1000 for c in f.clusters)
    with pytest.raises(PlanningError) as err:
        capacity.fleet(p, {"us-east-1": 100})
    assert err.value.field == "region_quota"


def test_money_counts_whole_nodes_and_whole_multi_node_groups():
    # A replica spanning two p5 nodes (TP16 over EFA) bills both nodes, every hour it runs.
    from inference_platform.planners import latency

    slo = Slo(ttft_ms=5000, itl_ms=200)
    r = latency.replica("Llama-3.1-405B", "bf16", "p5.48xlarge", 16)
    option = capacity.Option(r, latency.predict(r, W, slo=slo), prices.instance_hour("p5.48xlarge", "us-east-1"))
    assert option.replica.nodes == 2 and option.prediction.met
    p = capacity.plan(_demand(tokens_per_day=1e8, slo=slo), option)
    assert p.peak.nodes == p.peak.replicas * 2
    hours = p.node_hours_per_day * capacity.DAYS_PER_MONTH
    assert p.monthly_usd.on_demand == pytest.approx(hours * prices.instance_hour("p5.48xlarge", "us-east-1"))
    replica_hours = (
        p.day.replicas * 16 + p.night.replicas * 8 + (p.peak.replicas - p.day.replicas) * 16 * (1 - 1 / 1.23)
    )
    assert p.node_hours_per_day == pytest.approx(2 * replica_hours)  # two whole nodes per replica-hour
    assert p.accelerator_use == pytest.approx(1.0)


def test_compare_plans_ranks_by_the_figure_it_names():
    rows = capacity.compare_plans(_demand(tokens_per_day=1e9, slo=Slo(ttft_ms=1000, itl_ms=50)), "Llama-3.1-8B", "fp8")
    ranked = [p.usd_per_million_total.on_demand for _, p, _ in rows if p]
    assert ranked == sorted(ranked) and len(ranked) >= 3
    assert capacity.RANK_BASIS.startswith("$/M total tokens")
    assert all(p is None for _, p, _ in rows[len(ranked) :])


def test_single_pool_limits():
    q = capacity.Query(model="Llama-3.1-70B", precision="fp8", accelerator="h100", workload=W, slo=SLO)
    small = capacity.best_plan(_demand(tokens_per_day=1e9), q)[0]
    assert capacity.single_pool_problem(small) is None
    big = capacity.best_plan(_demand(tokens_per_day=150e12), q)[0]
    assert "5,000 nodes per cluster" in capacity.single_pool_problem(big)


def test_a_fleet_summarises_by_region_with_its_money():
    """Issue 28: 150 T tokens/day printed 89 identical cluster rows with no cost or total."""
    d = _demand(tokens_per_day=150e12)
    option = capacity.best_option(query("Llama-3.1-70B", "b200"))
    p = capacity.plan(d, option)
    f = capacity.fleet(p, {"us-east-1": 120_000, "us-east-2": 120_000, "us-west-2": 120_000})
    s = capacity.fleet_summary(f)
    assert sum(r.clusters for r in s.regions) == len(f.clusters)
    assert sum(r.accelerators for r in s.regions) == f.accelerators_provisioned
    hour = option.node_hour_usd  # these three regions carry us-east-1's prices (factor 1.0)
    nodes = sum(c.nodes for c in f.clusters)
    assert s.monthly_ceiling_usd == pytest.approx(nodes * hour * prices.HOURS_PER_MONTH)
    # Expected: each cluster carries 1/N of the demand by day and night; the fleet then costs about what one plan of
    # the whole demand costs (whole-node rounding per cluster apart), and below the ceiling.
    assert p.monthly_usd.on_demand <= s.monthly_expected_usd <= p.monthly_usd.on_demand * 1.01 < s.monthly_ceiling_usd
    total_m = d.tokens_per_day * capacity.DAYS_PER_MONTH / 1e6
    assert s.usd_per_million_total == pytest.approx(s.monthly_expected_usd / total_m)
    assert s.usd_per_million_output == pytest.approx(s.usd_per_million_total / d.output_share)
