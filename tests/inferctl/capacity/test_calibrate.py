"""``inferctl capacity calibrate``: a real verify.json from the local stack (tests/data/calibrate, made by
tests/data/calibrate/make_fixture.py: inferctl verify against the CPU Triton stand-in) round-trips into the
dev stack's planning factors, marked measured, read back by the settings and by ``capacity plan --factors``."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from inference_platform.inferctl.cli import main
from inference_platform.planners.planning_factors import DEFAULT_FACTORS, PlanningFactors
from inference_platform.settings import stack_files

REPO = Path(__file__).resolve().parents[3]
REPORT = REPO / "tests" / "data" / "calibrate" / "verify-dev-local.json"


def test_a_real_verify_report_becomes_measured_factors_in_the_stack(tmp_path, capsys):
    stack = tmp_path / "Pulumi.dev.yaml"
    shutil.copy(REPO / "stacks" / "Pulumi.dev.yaml", stack)
    out = tmp_path / "dev-factors.json"
    code = main(["capacity", "calibrate", "--from", str(REPORT), "--stack-file", str(stack), "--out", str(out)])
    printed = capsys.readouterr().out
    assert code == 0, printed
    factors = PlanningFactors.from_json(out.read_text())
    assert set(factors.measured_fields()) == {"throughput_scale", "ttft_scale", "itl_scale"}
    assert factors != DEFAULT_FACTORS and factors.throughput_scale.value != 1.0
    assert "verify-dev-local.json" in factors.throughput_scale.basis and "stack dev" in factors.throughput_scale.basis
    assert factors.speculative_acceptance == DEFAULT_FACTORS.speculative_acceptance  # not measured by verify
    # The stack file now carries them (comments kept) and the settings read them back.
    text = stack.read_text()
    assert "# Development: one region" in text and "factors:" in text
    settings = stack_files.load("dev", stack_file=stack)
    assert settings.capacity.planning_factors() == factors
    # And the planner uses them: the measured scales change the predicted tokens/s per replica.
    from inference_platform.planners import capacity, latency

    def best(features):
        query = capacity.Query(model="Llama-3.1-8B", precision="fp8", accelerator="g6.xlarge",
                               workload=latency.Workload(isl=1000, osl=200), slo=latency.Slo(ttft_ms=2000, itl_ms=100),
                               features=features)  # fmt: skip
        return capacity.best_option(query).tokens_per_s_per_replica

    assert best(latency.Features.from_factors(factors)) != best(None)


def test_calibrating_again_replaces_the_factors_and_keeps_the_file_loadable(tmp_path, capsys):
    stack = tmp_path / "Pulumi.dev.yaml"
    shutil.copy(REPO / "stacks" / "Pulumi.dev.yaml", stack)
    argv = ["capacity", "calibrate", "--from", str(REPORT), "--stack-file", str(stack), "--out",
            str(tmp_path / "f.json")]  # fmt: skip
    assert main(argv) == 0 and main(argv) == 0
    assert stack.read_text().count("factors:") == 1
    stack_files.load("dev", stack_file=stack)


@pytest.mark.parametrize(
    ("change", "named"),
    [
        (lambda r: r.update(stack="prod"), "--stack"),
        (lambda r: r["verdict"].update(passed=False), "--from"),
        (lambda r: r["load"].update(at_planned_concurrency=None), "--from"),
    ],
)
def test_unusable_reports_exit_2_naming_the_flag(tmp_path, capsys, change, named):
    report = json.loads(REPORT.read_text())
    change(report)
    path = tmp_path / "verify.json"
    path.write_text(json.dumps(report))
    code = main(["capacity", "calibrate", "--from", str(path), "--stack", "dev", "--no-write-stack",
                 "--out", str(tmp_path / "f.json")])  # fmt: skip
    assert code == 2 and named in capsys.readouterr().err


def test_a_bad_factor_in_the_stack_is_a_settings_problem_naming_the_key():
    from inference_platform.settings import SettingsError
    from tests.settings.test_inference import load

    with pytest.raises(SettingsError) as err:
        load({"capacity": {"factors": {"throughput_scale": {"value": -1, "source": "measured"}}}}, "dev")
    assert [p.path for p in err.value.problems] == ["capacity.factors.throughput_scale.value"]


def test_calibrate_predicts_on_the_instance_type_the_plan_picks(tmp_path, capsys):
    # The pool lists the dearer g6.2xlarge first; the plan prices the cheapest (g6.xlarge): so does calibrate.
    stack = tmp_path / "Pulumi.dev.yaml"
    text = (REPO / "stacks" / "Pulumi.dev.yaml").read_text()
    assert "instanceTypes: [g6.xlarge, g6.2xlarge]" in text
    stack.write_text(text.replace("instanceTypes: [g6.xlarge, g6.2xlarge]", "instanceTypes: [g6.2xlarge, g6.xlarge]"))
    out = tmp_path / "f.json"
    argv = ["capacity", "calibrate", "--from", str(REPORT), "--stack-file", str(stack), "--out", str(out),
            "--no-write-stack"]  # fmt: skip
    assert main(argv) == 0, capsys.readouterr().out
    from inference_platform.settings.capacity import planned_instance

    settings = stack_files.load("dev", stack_file=stack)
    pool = settings.node_pools.root[settings.serving.node_pool]
    assert planned_instance(pool.instance_types, settings.region.name) == "g6.xlarge"
    assert "on g6.xlarge TP" in PlanningFactors.from_json(out.read_text()).throughput_scale.basis


def test_calibrate_warns_when_the_stack_plans_nothing_the_factors_change(tmp_path, capsys):
    argv = ["capacity", "calibrate", "--from", str(REPORT), "--stack", "dev", "--out", str(tmp_path / "f.json"),
            "--no-write-stack"]  # fmt: skip
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "warning:" in printed and "capacity.tokensPerDay" in printed and "change nothing" in printed
    assert main([*argv, "--json"]) == 0
    assert "capacity.tokensPerDay" in json.loads(capsys.readouterr().out)["warnings"][0]
