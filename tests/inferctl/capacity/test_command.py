"""`inferctl capacity throughput|plan|fleet`: JSON fields, text, plots, and exit 2 naming the flag."""

from __future__ import annotations

import json

import pytest

from inference_platform.inferctl.cli import main

THROUGHPUT = ["capacity", "throughput", "--model", "Llama-3.1-70B", "--precision", "fp8", "--isl", "1000",
              "--osl", "1000"]  # fmt: skip
DEMAND = ["--model", "Llama-3.1-70B", "--isl", "1000", "--osl", "1000", "--slo-ttft-ms", "400", "--slo-itl-ms", "40"]


def run(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_throughput_json_has_the_promised_fields(capsys):
    code, out, _ = run(capsys, *THROUGHPUT, "--accelerator", "h100", "--tp", "4", "--ttft-ms", "400",
                       "--itl-ms", "40", "--json")  # fmt: skip
    assert code == 0
    o = json.loads(out)
    for key in ("tokens_per_s_per_accelerator", "tokens_per_s_per_replica", "batch", "ttft_ms", "itl_ms"):
        assert o[key] > 0
    assert o["ttft_ms"] <= 400 and o["itl_ms"] <= 40 and o["instance_type"] == "p5.48xlarge"
    assert o["tokens_per_s_per_replica"] == pytest.approx(4 * o["tokens_per_s_per_accelerator"], rel=1e-3)


def test_throughput_offline_takes_an_instance_type_and_draws(capsys, tmp_path):
    png = tmp_path / "t.png"
    code, out, _ = run(capsys, *THROUGHPUT, "--accelerator", "p5en.48xlarge", "--tp", "2", "--scenario", "offline",
                       "--plot", str(png))  # fmt: skip
    assert code == 0 and "output tokens/s per accelerator" in out
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize(
    ("argv", "flag"),
    [
        (["--accelerator", "h300", "--tp", "2"], "--accelerator"),
        (["--accelerator", "h100", "--tp", "2", "--ttft-ms", "5", "--itl-ms", "1"], "--ttft-ms/--itl-ms"),
        (["--accelerator", "l4", "--tp", "1"], "--model"),
    ],
)
def test_throughput_bad_input_exits_2_naming_the_flag(capsys, argv, flag):
    code, _, err = run(capsys, *THROUGHPUT, *argv)
    assert code == 2 and flag in err


@pytest.mark.parametrize(
    ("argv", "flags"),
    [
        (["--tp", "0", "--isl", "1000", "--osl", "1000"], ["--tp: got 0"]),
        (["--tp", "3", "--isl", "1000", "--osl", "1000"], ["--tp: Llama-3.1-70B: 64 attention heads"]),
        (["--tp", "2", "--isl", "-5", "--osl", "1000"], ["--isl: got -5"]),
        (
            ["--tp", "0", "--isl", "0", "--osl", "-1", "--ttft-ms", "-1", "--itl-ms", "0"],
            ["--tp: got 0", "--isl: got 0", "--osl: got -1", "--ttft-ms: got -1", "--itl-ms: got 0"],
        ),
    ],
)
def test_throughput_names_each_bad_flag_in_one_error(capsys, argv, flags):
    code, _, err = run(capsys, "capacity", "throughput", "--model", "Llama-3.1-70B", "--accelerator", "h100", *argv)
    assert code == 2 and all(f in err for f in flags), err
    assert "--model" not in err and err.count("inferctl") == 1


def test_plan_names_each_bad_demand_flag_in_one_error(capsys):
    argv = ["--model", "Llama-3.1-70B", "--isl", "0", "--osl", "1000", "--slo-ttft-ms", "0", "--slo-itl-ms", "40",
            "--tokens-per-day", "0", "--night-fraction", "2", "--accelerator", "h100"]  # fmt: skip
    code, _, err = run(capsys, "capacity", "plan", *argv)
    for flag in ("--tokens-per-day: got 0", "--isl: got 0", "--slo-ttft-ms: got 0", "--night-fraction: got 2"):
        assert flag in err, err
    assert code == 2


def test_unmeetable_slo_says_the_best_achievable(capsys):
    code, _, err = run(capsys, *THROUGHPUT, "--accelerator", "h100", "--tp", "2", "--ttft-ms", "5", "--itl-ms", "1")
    assert code == 2 and "best achievable is TTFT" in err


def test_plan_json_levels_bounds_money_and_margin(capsys):
    code, out, _ = run(capsys, "capacity", "plan", *DEMAND, "--tokens-per-day", "1T", "--accelerator", "b200",
                       "--price-per-m-input", "1", "--price-per-m-output", "2", "--json")  # fmt: skip
    assert code == 0
    o = json.loads(out)
    assert (
        o["levels"]["peak"]["replicas"]
        >= o["levels"]["day_floor"]["replicas"]
        >= o["levels"]["night_floor"]["replicas"]
    )
    assert o["hpa"]["maxReplicas"] == o["levels"]["peak"]["replicas"]
    assert o["pool"]["maxSize"] >= o["levels"]["peak"]["nodes"]
    assert set(o["monthly_usd"]) == {"on_demand", "spot", "reserved"}
    assert o["gross_margin"]["on_demand"] < o["gross_margin"]["spot"]
    assert o["demand"]["tokens_counted"] == "input + output"


def test_plan_compare_ranks_and_plots(capsys, tmp_path):
    png = tmp_path / "c.png"
    code, out, _ = run(capsys, "capacity", "plan", *DEMAND, "--tokens-per-day", "1e12", "--compare", "--plot", str(png))
    assert code == 0 and png.stat().st_size > 10_000
    assert out.splitlines()[0].startswith("ranked by $/M total tokens")
    rows = [line.split() for line in out.splitlines()[2:] if line.strip()[:1].isdigit()]
    assert [r[1] for r in rows][:3] == ["b200", "h200", "h100"]
    # The ranked column is the one printed: ascending down the table.
    ranked = [float(r[4]) for r in rows]
    assert ranked == sorted(ranked)


def test_plan_compare_json_ranks_by_the_printed_figure(capsys):
    # Small volume: whole nodes dominate, and the cheapest plan (not the cheapest GPU-hour at full load) is first.
    code, out, _ = run(capsys, "capacity", "plan", "--model", "Llama-3.1-8B", "--isl", "1000", "--osl", "1000",
                       "--slo-ttft-ms", "1000", "--slo-itl-ms", "50", "--tokens-per-day", "1e9", "--compare",
                       "--json")  # fmt: skip
    assert code == 0
    o = json.loads(out)
    assert o["ranked_by"].startswith("$/M total tokens")
    assert all("single_pool_problem" in r for r in o["ranking"] if "plan" in r)
    figures = [r["plan"]["usd_per_million_total_tokens"]["on_demand"] for r in o["ranking"] if "plan" in r]
    assert figures == sorted(figures) and len(figures) >= 3


def test_small_deployment_on_an_8_gpu_node_is_billed_the_whole_node(capsys):
    code, out, _ = run(capsys, "capacity", "plan", "--model", "Llama-3.1-8B", "--precision", "fp4", "--isl", "1000",
                       "--osl", "1000", "--slo-ttft-ms", "1000", "--slo-itl-ms", "50", "--tokens-per-day", "1e9",
                       "--accelerator", "b200", "--json")  # fmt: skip
    assert code == 0
    o = json.loads(out)
    assert o["levels"]["peak"]["nodes"] == 1 and o["levels"]["peak"]["accelerators"] == 1
    node_month = 113.93 * 730
    assert o["nodes"]["node_monthly_usd"] == pytest.approx(node_month, rel=1e-3)
    assert o["monthly_usd"]["on_demand"] == pytest.approx(node_month, rel=1e-3)  # one whole node, not 1/8
    assert o["nodes"]["accelerator_use"] == pytest.approx(1 / 8)
    argv = ["capacity", "plan", "--model", "Llama-3.1-8B", "--precision", "fp4", "--isl", "1000", "--osl", "1000",
            "--slo-ttft-ms", "1000", "--slo-itl-ms", "50", "--tokens-per-day", "1e9", "--accelerator", "b200"]  # fmt: skip
    assert main(argv) == 0 and "use 12% of the billed accelerators" in capsys.readouterr().out


def test_a_smaller_instance_of_the_same_accelerator_is_offered(capsys):
    code, out, _ = run(capsys, "capacity", "plan", "--model", "Llama-3.1-8B", "--isl", "1000", "--osl", "1000",
                       "--slo-ttft-ms", "1000", "--slo-itl-ms", "50", "--tokens-per-day", "1e9",
                       "--accelerator", "g6e.48xlarge", "--json")  # fmt: skip
    assert code == 0
    o = json.loads(out)
    smaller = o["smaller_instances"]
    assert smaller and all(s["instance_type"].startswith("g6e.") for s in smaller)
    assert min(s["monthly_usd_on_demand"] for s in smaller) < o["monthly_usd"]["on_demand"]


def test_margin_counts_input_and_output_prices(capsys):
    # Together's public price for Llama-3.1-70B: $0.88 per million input and output tokens.
    code, out, _ = run(capsys, "capacity", "plan", *DEMAND, "--tokens-per-day", "1e11", "--accelerator", "h200",
                       "--price-per-m-input", "0.88", "--price-per-m-output", "0.88", "--json")  # fmt: skip
    assert code == 0
    o = json.loads(out)
    cost = o["usd_per_million_total_tokens"]["on_demand"]
    assert o["revenue_per_million_total_tokens"] == pytest.approx(0.88)
    assert o["margin_per_million_total_tokens"]["on_demand"] == pytest.approx(0.88 - cost, abs=1e-3)
    assert o["gross_margin"]["on_demand"] == pytest.approx((0.88 - cost) / 0.88, abs=1e-3)
    assert o["gross_margin"]["on_demand"] > 0


def test_the_old_output_only_price_flag_is_refused_clearly(capsys):
    code, _, err = run(capsys, "capacity", "plan", *DEMAND, "--tokens-per-day", "1T", "--accelerator", "h200",
                       "--price-per-m-tokens", "0.88")  # fmt: skip
    assert code == 2 and "--price-per-m-input" in err and "output tokens only" in err


def test_plan_beyond_one_cluster_is_refused_and_handed_to_fleet(capsys):
    code, _, err = run(capsys, "capacity", "plan", *DEMAND, "--tokens-per-day", "150T", "--accelerator", "h100")
    assert code == 3, err
    assert "5,000 nodes per cluster" in err and "capacity fleet" in err
    # Beyond one managed node group but inside one cluster: refused as a single pool too.
    code, _, err = run(capsys, "capacity", "plan", *DEMAND, "--tokens-per-day", "5T", "--accelerator", "h100")
    assert code == 3 and "450 nodes per managed node group" in err and "capacity fleet" in err


@pytest.mark.parametrize(
    ("argv", "flag"),
    [
        (["--tokens-per-day", "0", "--accelerator", "h100"], "--tokens-per-day"),
        (["--tokens-per-day", "1T", "--accelerator", "h100", "--night-fraction", "0"], "--night-fraction"),
        (["--tokens-per-day", "1T", "--accelerator", "h100", "--night-fraction", "1.2"], "--night-fraction"),
        (["--tokens-per-day", "1T", "--accelerator", "tpu"], "--accelerator"),
        (["--tokens-per-day", "1T", "--accelerator", "h100", "--region", "eu-west-3"], "--region"),
    ],
)
def test_plan_bad_input_exits_2_naming_the_flag(capsys, argv, flag):
    code, _, err = run(capsys, "capacity", "plan", *DEMAND, *argv)
    assert code == 2 and flag in err, err


def test_fleet_prints_the_stacks(capsys):
    code, out, _ = run(capsys, "capacity", "fleet", *DEMAND, "--tokens-per-day", "150T", "--accelerator", "b200",
                       "--region-quota", "us-east-1=250000", "--region-quota", "us-west-2=250000", "--json")  # fmt: skip
    assert code == 0
    o = json.loads(out)
    assert len(o["clusters"]) >= 2 and {c["region"] for c in o["clusters"]} == {"us-east-1", "us-west-2"}
    assert o["accelerators_provisioned"] > o["accelerators_needed_at_peak"]
    summary = o["summary"]
    assert summary["clusters"] == len(o["clusters"]) and [r["region"] for r in summary["regions"]]
    assert summary["monthly_usd"]["expected"] < summary["monthly_usd"]["ceiling"]
    assert summary["usd_per_million_total_tokens"] > 0
    code, _, err = run(capsys, "capacity", "fleet", *DEMAND, "--tokens-per-day", "150T", "--accelerator", "b200",
                       "--region-quota", "us-east-1=100")  # fmt: skip
    assert code == 2 and "--region-quota" in err


def test_plan_shows_the_cold_start_with_each_figure_and_its_source(capsys):
    """Issue 21/31: the plan's cold start, both paths phase by phase at published rates, and the headroom a ramp
    needs."""
    code, out, _ = run(capsys, "capacity", "plan", *DEMAND, "--tokens-per-day", "1.5e9", "--accelerator", "h100",
                       "--model-source", "fsx", "--fsx-mb-s", "1200", "--ramp-percent-per-hour", "50", "--json")  # fmt: skip
    assert code == 0
    cold = json.loads(out)["cold_start"]
    assert [p["name"] for p in cold["newPhases"]][:3] == ["node launch", "image pull", "weights from FSx"]
    assert all(p["basis"] in ("published", "second-hand", "assumption", "derived") and p["source"]
               for p in cold["newPhases"])  # fmt: skip
    assert cold["newNodeSeconds"] > cold["runningNodeSeconds"] > 0 and 0 < cold["maxTargetShare"] < 1
    code, out, _ = run(capsys, "capacity", "plan", *DEMAND, "--tokens-per-day", "1.5e9", "--accelerator", "h100",
                       "--image-pull", "parallel", "--download-concurrency", "16")  # fmt: skip
    assert code == 0 and "cold start from the scale-up decision:" in out and "weights from S3" in out
    assert (
        "16 ranged GETs x 85 MB/s" in out and "FastImagePull" in out and "ThreadedMotoServer" not in out
    )  # the emulator is no rate


@pytest.mark.parametrize(("flag", "value"), [("--ramp-percent-per-hour", "nan"), ("--ramp-percent-per-hour", "-1"),
                                             ("--download-concurrency", "0"), ("--fsx-mb-s", "inf")])  # fmt: skip
def test_plan_refuses_bad_cold_start_flags_naming_them(capsys, flag, value):
    extra = ["--model-source", "fsx"] if flag == "--fsx-mb-s" else []
    code, _, err = run(capsys, "capacity", "plan", *DEMAND, "--tokens-per-day", "1.5e9", "--accelerator", "h100",
                       *extra, flag, value)  # fmt: skip
    assert code == 2 and flag in err


def test_cold_start_of_a_stack_prints_both_paths_the_options_and_the_derived_thresholds(capsys):
    code, out, _ = run(capsys, "capacity", "cold-start", "--stack", "prod")
    assert code == 0
    assert "2.1 min on a running node" in out and "image pull cached, weights from S3 at concurrency 32" in out
    assert "standbyReplicas 3" in out and "lazy image loading (SOCI index v2)" in out
    assert "streaming weight loader" in out and "HfWeightLoader" in out
    assert "fast snapshot restore in 2 zone(s) ~$1,095/month" in out
    # The targets, judged: both met with the image cache; parallel pulls alone missed launch + 3.
    assert "target <= 3 min on a running node: met (2.1 min)" in out
    assert "target <= launch + 3 min on a new node: met (launch + 2.1 min)" in out
    assert (
        "imagePull parallel                           running node   2.1 min, new node  11.0 min (launch + 5.0)" in out
    )
    assert "Autoscaling thresholds (derived): 55 requests in flight per replica" in out
    code, out, _ = run(capsys, "capacity", "cold-start", "--stack", "prod", "--json")
    data = json.loads(out)
    assert data["scaleUpPath"] == "new node" and data["thresholds"]["hold"] == 64
    assert data["alternatives"]["imagePull full"]["newNodeSeconds"] > data["newNodeSeconds"]
    assert data["alternatives"]["imagePull parallel"]["afterLaunchSeconds"] > 180 >= data["afterLaunchSeconds"]
    assert [o["name"] for o in data["notOffered"]] == ["lazy image loading (SOCI index v2)", "streaming weight loader"]
    assert data["targets"][0].endswith("met (2.1 min)")
    code, _, err = run(capsys, "capacity", "cold-start", "--stack", "nope")
    assert code == 2 and "nope" in err


def test_plan_fsx_source_needs_its_throughput(capsys):
    code, _, err = run(capsys, "capacity", "plan", *DEMAND, "--tokens-per-day", "1.5e9", "--accelerator", "h100",
                       "--model-source", "fsx")  # fmt: skip
    assert code == 2 and "--fsx-mb-s" in err


def test_speculative_decoding_and_prefix_reuse_are_modelled_with_stated_factors(capsys, tmp_path):
    # A tight ITL keeps batches small (memory-bound steps), where verifying drafts is nearly free.
    base = ["capacity", "plan", "--model", "Llama-3.1-70B", "--isl", "1000", "--osl", "1000", "--slo-ttft-ms", "400",
            "--slo-itl-ms", "20", "--tokens-per-day", "1e11", "--accelerator", "h200", "--json"]  # fmt: skip
    code, out, _ = run(capsys, *base)
    plain = json.loads(out)
    assert code == 0 and plain["features"]["tokens_per_step"] == 1.0
    code, out, _ = run(capsys, *base, "--speculative-draft-tokens", "3", "--speculative-acceptance", "0.7",
                       "--prefix-hit-rate", "0.5")  # fmt: skip
    o = json.loads(out)
    assert code == 0
    assert o["features"]["tokens_per_step"] == pytest.approx((1 - 0.7**4) / 0.3, rel=1e-3)
    assert o["features"]["prefix_hit_rate"] == 0.5
    assert o["planning_factors"]["speculative_acceptance"] == {"value": 0.7, "source": "modelled",
                                                               "basis": "--speculative-acceptance"}  # fmt: skip
    assert o["replica"]["tokens_per_s_per_accelerator"] > 1.3 * plain["replica"]["tokens_per_s_per_accelerator"]
    # A measured factors file (what capacity calibrate writes) replaces the modelled figures and says so.
    from inference_platform.planners.planning_factors import DEFAULT_FACTORS

    measured = DEFAULT_FACTORS.with_measured("build/verify/dev/verify.json", throughput_scale=0.5)
    factors = tmp_path / "factors.json"
    factors.write_text(measured.to_json())
    code, out, _ = run(capsys, *base, "--factors", str(factors))
    o = json.loads(out)
    assert code == 0 and o["planning_factors"]["throughput_scale"]["source"] == "measured"
    assert o["replica"]["tokens_per_s_per_accelerator"] < 0.6 * plain["replica"]["tokens_per_s_per_accelerator"]
    factors.write_text('{"throughput_scale": {"value": -1}}')
    code, _, err = run(capsys, *base, "--factors", str(factors))
    assert code == 2 and "--factors" in err and "throughput_scale" in err


def test_cached_input_tokens_sell_at_the_cached_price_share(capsys, tmp_path):
    from inference_platform.planners.planning_factors import DEFAULT_FACTORS, Factor

    factors = tmp_path / "factors.json"
    cheap = DEFAULT_FACTORS.to_dict()
    cheap["cached_input_price_fraction"] = {"value": 0.25, "source": "modelled", "basis": "provider's cached price"}
    factors.write_text(json.dumps(cheap))
    argv = ["capacity", "plan", *DEMAND, "--tokens-per-day", "1e11", "--accelerator", "h200", "--json",
            "--price-per-m-input", "1", "--price-per-m-output", "1", "--factors", str(factors)]  # fmt: skip
    code, out, _ = run(capsys, *argv)
    assert code == 0 and json.loads(out)["revenue_per_million_total_tokens"] == pytest.approx(1.0)  # reuse off
    code, out, _ = run(capsys, *argv, "--prefix-hit-rate", "0.4")
    # Half the tokens are input; 40 % of them sell at a quarter of the price: 0.5 x (1 - 0.4 x 0.75) + 0.5.
    assert code == 0 and json.loads(out)["revenue_per_million_total_tokens"] == pytest.approx(0.85)
    assert Factor(value=0.25).source == "modelled"


def test_fleet_text_is_a_summary_not_a_row_per_cluster(capsys):
    """Issue 28: 150 T tokens/day printed 89 identical rows with no cost or total. One row per region, a total
    row, $/month and $/M tokens; --json keeps every cluster."""
    argv = ["capacity", "fleet", *DEMAND, "--tokens-per-day", "150T", "--accelerator", "h100", "--region-quota",
            "us-east-1=300000", "--region-quota", "us-west-2=300000", "--region-quota", "us-east-2=300000"]  # fmt: skip
    code, out, _ = run(capsys, *argv)
    assert code == 0
    lines = out.splitlines()
    assert len(lines) <= 10, out
    clusters = int(lines[0].split(" provisioned in ")[1].split()[0])
    assert clusters > 50
    rows = [line.split() for line in lines if line.strip().startswith(("us-", "total"))]
    assert [r[0] for r in rows] == ["us-east-1", "us-west-2", "us-east-2", "total"]
    assert sum(int(r[1].replace(",", "")) for r in rows[:-1]) == int(rows[-1][1].replace(",", "")) == clusters
    assert all(r[-2].startswith("$") and r[-1].startswith("$") for r in rows)
    assert "per M total tokens" in out and "per M output tokens" in out and "stacks: serve-us-east-1-1 .. " in out
    code, out, _ = run(capsys, *argv, "--json")
    assert code == 0 and len(json.loads(out)["clusters"]) == clusters


def test_plan_shows_each_clients_budget_beside_the_plan_and_warns_when_sold_beyond_it():
    from inference_platform.inferctl.capacity.budgets import DAYS_PER_MONTH, budgets_json, budgets_text

    per_day = 1e9
    month = per_day * DAYS_PER_MONTH  # about 30.4e9 tokens
    within = budgets_json({"alpha": 10_000_000_000, "beta": 5_000_000_000}, per_day)
    assert [(r["client"], round(r["share_of_plan"], 4)) for r in within["clients"]] == [
        ("alpha", round(1e10 / month, 4)),
        ("beta", round(5e9 / month, 4)),
    ]
    assert within["clients"][0]["tokens_per_day"] == pytest.approx(1e10 / DAYS_PER_MONTH)
    assert within["warnings"] == [] and "WARNING" not in budgets_text(within)
    over = budgets_json({"alpha": 20_000_000_000, "beta": 15_000_000_000}, per_day, weighted=True)
    (warning,) = over["warnings"]
    assert "35,000,000,000" in warning and f"{35e9 / month:.0%}" in warning
    text = budgets_text(over)
    assert text.splitlines()[-1] == f"WARNING: {warning}" and "weighted tokens" in text
    assert "alpha" in text and f"{2e10 / month:.1%}" in text


def test_plan_with_a_stack_shows_its_budgets(capsys):
    # prod sells no monthly budget: the plan says so, and its JSON carries the (empty) comparison.
    code, out, _ = run(capsys, "capacity", "plan", *DEMAND, "--precision", "fp8", "--accelerator", "h100",
                       "--tokens-per-day", "2e9", "--stack", "prod", "--json")  # fmt: skip
    assert code == 0
    budgets = json.loads(out)["budgets"]
    assert budgets["clients"] == [] and budgets["planned_tokens_per_month"] == pytest.approx(2e9 * 365 / 12)
    code, out, _ = run(capsys, "capacity", "plan", *DEMAND, "--precision", "fp8", "--accelerator", "h100",
                       "--tokens-per-day", "2e9", "--stack", "prod")  # fmt: skip
    assert code == 0 and "no client of the stack has a monthly token budget" in out
