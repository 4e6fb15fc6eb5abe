"""Accelerator probes with injected tool output, and the engine-placement verdicts."""

from __future__ import annotations

import json
import subprocess

import pytest

from inference_platform.inference_image.accelerators import (
    ProbeError,
    VisibleAccelerators,
    placement_problem,
    probe_neuron,
    probe_nvidia,
)


def _runner(stdout="", returncode=0, stderr="", missing=False):
    calls = []

    def run(argv):
        calls.append(list(argv))
        if missing:
            raise FileNotFoundError(argv[0])
        return subprocess.CompletedProcess(argv, returncode, stdout, stderr)

    run.calls = calls  # type: ignore[attr-defined]
    return run


def test_nvidia_probe_reads_names_and_compute_capability():
    run = _runner("0, NVIDIA H100 80GB HBM3, 9.0\n1, NVIDIA H100 80GB HBM3, 9.0\n")
    seen = probe_nvidia(run, env={"NVIDIA_VISIBLE_DEVICES": "0,1"})
    assert seen == VisibleAccelerators("nvidia", "sm90", 2, 2, ("NVIDIA H100 80GB HBM3",) * 2)
    assert run.calls == [["nvidia-smi", "--query-gpu=index,name,compute_cap", "--format=csv,noheader"]]


def test_nvidia_probe_without_gpus_or_tools_sees_nothing():
    for env in ({"NVIDIA_VISIBLE_DEVICES": "void"}, {"NVIDIA_VISIBLE_DEVICES": ""}):
        assert probe_nvidia(_runner("0, NVIDIA L4, 8.9"), env=env).devices == 0
    assert probe_nvidia(_runner(missing=True), env={}).vendor == "none"


@pytest.mark.parametrize(
    ("run", "message"),
    [
        (_runner(returncode=9, stderr="NVIDIA-SMI has failed because it couldn't communicate"), "couldn't communicate"),
        (_runner("0, NVIDIA L4\n"), "unexpected line"),
        (_runner("0, NVIDIA L4, n/a\n"), "compute capability"),
        (_runner("0, NVIDIA L4, 8.9\n1, NVIDIA A10G, 8.6\n"), "several architectures"),
    ],
)
def test_nvidia_probe_failures_quote_the_tool(run, message):
    with pytest.raises(ProbeError, match=message):
        probe_nvidia(run, env={})


def _neuron_sysfs(tmp_path, name="Inferentia2", devices=(0,)):
    for index in devices:
        path = tmp_path / f"neuron{index}" / "info" / "architecture"
        path.mkdir(parents=True)
        (path / "device_name").write_text(name + "\n")
    return tmp_path


def test_neuron_probe_counts_devices_and_cores(tmp_path):
    listing = [{"neuron_device": i, "nc_count": 2, "memory_size": 34359738368} for i in (4, 5, 6, 7)]
    seen = probe_neuron(_runner(json.dumps(listing)), sysfs=_neuron_sysfs(tmp_path, devices=(4,)))
    assert (seen.vendor, seen.architecture, seen.devices, seen.units) == ("neuron", "neuron-v2", 4, 8)


def test_neuron_probe_failures(tmp_path):
    with pytest.raises(ProbeError, match="unknown Neuron device"):
        probe_neuron(_runner('[{"neuron_device": 0, "nc_count": 2}]'), sysfs=_neuron_sysfs(tmp_path, "Mystery"))
    with pytest.raises(ProbeError, match="unreadable JSON"):
        probe_neuron(_runner('[{"neuron_device": 0}]'), sysfs=tmp_path)
    with pytest.raises(ProbeError, match="cannot read"):
        probe_neuron(_runner('[{"neuron_device": 3, "nc_count": 2}]'), sysfs=tmp_path)
    with pytest.raises(ProbeError, match="failed failed"):
        probe_neuron(_runner(returncode=1, stderr="failed failed"), sysfs=tmp_path)
    assert probe_neuron(_runner("[]"), sysfs=tmp_path).devices == 0
    assert probe_neuron(_runner(missing=True), sysfs=tmp_path).vendor == "none"


L4 = VisibleAccelerators("nvidia", "sm89", 1, 1, ("NVIDIA L4",))
H100X4 = VisibleAccelerators("nvidia", "sm90", 4, 4, ("NVIDIA H100",) * 4)
INF2X4 = VisibleAccelerators("neuron", "neuron-v2", 4, 8, ("Inferentia2",) * 4)


def test_an_engine_runs_only_on_its_architecture_and_rank_count():
    assert placement_problem(L4, vendor="nvidia", architecture="sm89", ranks=1) is None
    assert placement_problem(H100X4, vendor="nvidia", architecture="sm90", ranks=4) is None
    assert "built for sm90" in placement_problem(L4, vendor="nvidia", architecture="sm90", ranks=1)
    assert "runs 2 rank(s) per node" in placement_problem(H100X4, vendor="nvidia", architecture="sm90", ranks=2)
    assert "nvidia.com/gpu" in placement_problem(
        VisibleAccelerators("none", None, 0, 0), vendor="nvidia", architecture="sm89", ranks=1
    )


def test_neuron_placement_counts_whole_devices():
    assert placement_problem(INF2X4, vendor="neuron", architecture="neuron-v2", ranks=8, units_per_device=2) is None
    assert placement_problem(INF2X4, vendor="neuron", architecture="neuron-v2", ranks=7, units_per_device=2) is None
    problem = placement_problem(INF2X4, vendor="neuron", architecture="neuron-v2", ranks=2, units_per_device=2)
    assert "needs 2 NeuronCores (1 devices)" in problem
    assert "aws.amazon.com/neuron" in placement_problem(L4, vendor="neuron", architecture="neuron-v2", ranks=2)
