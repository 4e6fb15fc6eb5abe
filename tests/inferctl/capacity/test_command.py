"""`inferctl capacity throughput|plan|fleet`: JSON fields, text, plots, and exit 2 naming the flag."""

from __future__ import annotations

import json

import pytest

from inferctl.cli import main

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
                       "--price-per-m-tokens", "2", "--json")  # fmt: skip
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
    ranked = [line.split()[1] for line in out.splitlines()[1:] if line.strip()[:1].isdigit()]
    assert ranked[:3] == ["b200", "h200", "h100"]


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
                       "--region-quota", "us-east-1=150000", "--region-quota", "us-west-2=150000", "--json")  # fmt: skip
    assert code == 0
    o = json.loads(out)
    assert len(o["clusters"]) >= 2 and {c["region"] for c in o["clusters"]} == {"us-east-1", "us-west-2"}
    assert o["accelerators_provisioned"] > o["accelerators_needed_at_peak"]
    code, _, err = run(capsys, "capacity", "fleet", *DEMAND, "--tokens-per-day", "150T", "--accelerator", "b200",
                       "--region-quota", "us-east-1=100")  # fmt: skip
    assert code == 2 and "--region-quota" in err
