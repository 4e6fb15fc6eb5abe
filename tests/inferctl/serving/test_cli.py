"""The serving commands' command lines: registration, refusals with one line and exit 2, settings files."""

from __future__ import annotations

import json

import pytest
import yaml

from inference_platform.errors import CommandError
from inference_platform.inferctl.cli import build_parser, main
from inference_platform.inference_image.settings_source import load_file
from inference_platform.settings import stack_files


def test_every_serving_command_is_registered():
    choices = build_parser()._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    assert {"serve-local", "smoke", "serve", "prepare"} <= set(choices)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["prepare", "--stack", "dev", "--instance-type", "g6.xlarge", "--plan-only"],
            "serving.backend tensorrtllm: nothing to prepare",
        ),
        (
            ["prepare", "--stack", "npu", "--instance-type", "g6.xlarge", "--plan-only"],
            "neuron needs neuron accelerators; g6.xlarge has l4",
        ),
        (["prepare", "--stack", "npu", "--instance-type", "g9.huge", "--plan-only"], "unknown instance type 'g9.huge'"),
        (["serve", "--stack", "dev"], "no model/tokenizer URI"),
        (["smoke", "--url", "http://127.0.0.1:1", "--requests", "0"], "--requests: got 0; expected >= 1"),
    ],
)
def test_refusals_exit_2_with_one_line(capsys, argv, message):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_prepare_plan_only_prints_the_build_arguments(capsys):
    assert main(["prepare", "--stack", "npu", "--instance-type", "inf2.48xlarge", "--plan-only"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["target"]["accelerator"] == "neuron-inferentia2" and plan["neuron_config"]["tp_degree"] == 8


def test_the_mounted_settings_file_is_the_validated_serving_section(tmp_path):
    prod = stack_files.load("prod").serving
    as_json = tmp_path / "serving.json"
    as_json.write_text(json.dumps(prod.model_dump(by_alias=True, mode="json")))
    assert load_file(as_json) == prod
    as_yaml = tmp_path / "serving.yaml"
    as_yaml.write_text(yaml.safe_dump(prod.model_dump(by_alias=True, mode="json")))
    assert load_file(as_yaml) == prod


def test_a_bad_settings_file_lists_every_problem(tmp_path):
    bad = tmp_path / "serving.json"
    bad.write_text(json.dumps({"tensorParallel": 3, "maxInputLen": 9000, "maxSeqLen": 100}))
    with pytest.raises(CommandError) as err:
        load_file(bad)
    assert err.value.exit_code == 2
    assert "serving.tensorParallel: got 3" in str(err.value) and "serving.maxInputLen: got 9000" in str(err.value)
    (tmp_path / "broken.json").write_text("{")
    with pytest.raises(CommandError, match="is not valid json"):
        load_file(tmp_path / "broken.json")
    with pytest.raises(CommandError, match="cannot read settings file"):
        load_file(tmp_path / "missing.yaml")
