"""`inferctl plan --stack A --stack B` (issue 9 §9): several stacks in one process, each planned and
written as alone; one stack's files cannot be applied to several; the collector is paused only
while a plan runs."""

from __future__ import annotations

import gc
import json

import pytest

from inference_platform.inferctl.cli import main
from inference_platform.offline_plan.collector import collector_paused


def test_two_stacks_in_one_process_match_their_single_plans(repo, tmp_path, capsys):
    together, alone = tmp_path / "together", tmp_path / "alone"
    assert (
        main(["plan", "--program", str(repo), "--out", str(together), "--quiet", "--stack", "dev", "--stack", "npu"])
        == 0
    )
    summaries = [line.split(":")[0] for line in capsys.readouterr().out.splitlines() if " resources; " in line]
    assert summaries == ["dev", "npu"]
    assert main(["plan", "--program", str(repo), "--out", str(alone), "--quiet", "--stack", "npu"]) == 0
    both = json.loads((together / "npu.json").read_text())
    single = json.loads((alone / "npu.json").read_text())
    assert [r["urn"] for r in both["resources"]] == [r["urn"] for r in single["resources"]]
    assert both["resources"] == single["resources"], "a stack planned second is planned exactly as alone"
    assert (together / "dev.json").is_file() and (together / "dev" / "manifests").is_dir()


def test_one_stack_file_for_several_stacks_is_refused(repo, tmp_path, capsys):
    args = ["plan", "--program", str(repo), "--out", str(tmp_path), "--stack", "dev", "--stack", "prod"]
    assert main([*args, "--stack-file", str(repo / "stacks" / "Pulumi.dev.yaml")]) == 2
    assert "give one --stack" in capsys.readouterr().err
    assert not (tmp_path / "dev.json").exists()


def test_the_collector_is_paused_inside_and_restored_after():
    assert gc.isenabled()
    with collector_paused():
        assert not gc.isenabled() and gc.get_freeze_count() > 0
    assert gc.isenabled() and gc.get_freeze_count() == 0
    with pytest.raises(RuntimeError), collector_paused():
        raise RuntimeError("a failed plan")
    assert gc.isenabled()
    gc.disable()
    try:
        with collector_paused():
            pass
        assert not gc.isenabled(), "a caller that had it off keeps it off"
    finally:
        gc.enable()
