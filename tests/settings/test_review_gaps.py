"""Review gaps in the settings, each through the real ``inferctl plan``: a bad value exits 2 with one
problem line naming its key (the pattern of test_settings_plan_exit.py).

1. ``capacity.factors`` is a typed model: each factor's value a finite number (not a string or a boolean)
   in its range, ``source`` modelled|measured, ``basis`` one printable line, unknown names refused.
2. KEDA thresholds below its milli-quantity resolution (0.001) are refused: they render as a target of 0.
3. ``inference.initResources`` is held to the node as ``inference.resources`` is: a pod requests the
   largest of its init containers.
"""

from __future__ import annotations

import json
import shutil

import pytest

from inference_platform.catalog import downstream_limits as limits
from inference_platform.inferctl.cli import main
from inference_platform.planners.planning_factors import BASIS_MAX_CHARS, Factor, PlanningFactors
from inference_platform.settings import stack_files
from tests.conftest import REPO
from tests.settings.test_plan_exit import stack_text

EXAMPLES = [
    # 1. capacity.factors
    ("prod", "capacity", "factors.throughput_scale", "{value: .inf, source: measured}",
     "capacity.factors.throughput_scale.value", "finite"),
    ("prod", "capacity", "factors.throughput_scale", "{value: true}", "capacity.factors.throughput_scale.value",
     "boolean"),
    ("prod", "capacity", "factors.throughput_scale", '{value: "1.2"}', "capacity.factors.throughput_scale.value",
     "number"),
    # PyYAML (YAML 1.1) reads 1e300 as a string, Pulumi (YAML 1.2) as a number: refused either way.
    ("prod", "capacity", "factors.throughput_scale", "{value: 1e300}", "capacity.factors.throughput_scale.value",
     "number"),
    ("prod", "capacity", "factors.throughput_scale", "{value: 1.0e+300}", "capacity.factors.throughput_scale.value",
     "20"),
    ("prod", "capacity", "factors.ttft_scale", "{value: 0.01}", "capacity.factors.ttft_scale.value", "0.05"),
    ("prod", "capacity", "factors.prefix_hit_rate", "{value: 1.5}", "capacity.factors.prefix_hit_rate.value",
     "0.99"),
    ("prod", "capacity", "factors.cached_input_price_fraction", "{value: -0.1}",
     "capacity.factors.cached_input_price_fraction.value", "0"),
    ("prod", "capacity", "factors.throughput_scale", '{value: 1.1, basis: "run 1\\r\\nx: injected"}',
     "capacity.factors.throughput_scale.basis", "printable"),
    ("prod", "capacity", "factors.throughput_scale", "{value: 1.1, source: guessed}",
     "capacity.factors.throughput_scale.source", "measured"),
    ("prod", "capacity", "factors.throughput_scal", "{value: 1.1}", "capacity.factors.throughput_scal",
     "did you mean 'throughput_scale'"),
    # 2. KEDA's milli-quantity floor
    ("dev", "autoscaling", "targetRequestsPerReplica", "1e-9", "autoscaling.targetRequestsPerReplica", "0.001"),
    ("dev", "autoscaling", "queueRatioTarget", "1e-9", "autoscaling.queueRatioTarget", "0.001"),
    ("dev", "autoscaling", "kvCacheTarget", "0.0001", "autoscaling.kvCacheTarget", "0.001"),
    # 3. init containers against the node
    ("dev", "inference", "initResources.cpu", "64", "inference.initResources.cpu", "Pending"),
]  # fmt: skip


def _plan(tmp_path, stack: str, text: str) -> tuple[int, str]:
    file = tmp_path / f"Pulumi.{stack}.yaml"
    file.write_text(text)
    code = main(["plan", "--stack", stack, "--stack-file", str(file), "--out", str(tmp_path / "out"), "--quiet"])
    return code, file.name


@pytest.mark.parametrize(
    ("stack", "section", "dotted", "value", "path", "words"), EXAMPLES, ids=[f"{e[4]}={e[3]}" for e in EXAMPLES]
)
def test_each_bad_value_exits_2_naming_its_key(tmp_path, capsys, stack, section, dotted, value, path, words):
    code, _ = _plan(tmp_path, stack, stack_text(stack, section, dotted, value))
    err = capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err, err
    lines = [ln for ln in err.splitlines() if ln.strip().startswith("- ")]
    assert len(lines) == 1 and lines[0].strip().startswith(f"- {path}:") and words in lines[0], err
    out = tmp_path / "out"
    assert not out.exists() or not any(out.rglob("*.yaml")), "nothing is rendered"


@pytest.mark.parametrize(
    ("stack", "section", "dotted", "value"),
    [
        ("prod", "capacity", "factors.throughput_scale", '{value: 1.1, source: measured, basis: "verify run"}'),
        ("prod", "capacity", "factors.prefix_hit_rate", "{value: 0}"),
        ("dev", "autoscaling", "targetRequestsPerReplica", "0.001"),
        ("dev", "autoscaling", "kvCacheTarget", "0.001"),
        ("dev", "inference", "initResources.cpu", "2"),
    ],
)
def test_the_values_at_the_bounds_plan(tmp_path, capsys, stack, section, dotted, value):
    code, _ = _plan(tmp_path, stack, stack_text(stack, section, dotted, value))
    assert code == 0, capsys.readouterr().err


def test_the_keda_floor_is_its_milli_unit():
    assert limits.KEDA_THRESHOLD_MIN == 0.001
    assert "quantityFromFloat64" in (REPO / "catalog" / "downstream_limits.py").read_text()


@pytest.mark.parametrize(
    "item",
    [{"value": float("inf")}, {"value": True}, {"value": "1.2"}, {"value": 1e300}, {"value": 1.0, "basis": "a\nb"}],
)
def test_planning_factors_refuse_what_float_would_take(item):
    with pytest.raises(ValueError):
        PlanningFactors.from_dict({"throughput_scale": item})


def test_a_factor_basis_is_one_short_line():
    with pytest.raises(ValueError, match="characters"):
        PlanningFactors(throughput_scale=Factor(value=1.0, basis="x" * (BASIS_MAX_CHARS + 1)))


def _calibrate(tmp_path, change) -> tuple[int, object]:
    report = json.loads((REPO / "tests" / "data" / "calibrate" / "verify-dev-local.json").read_text())
    change(report)
    path = tmp_path / "verify.json"
    path.write_text(json.dumps(report))
    stack = tmp_path / "Pulumi.dev.yaml"
    shutil.copy(REPO / "stacks" / "Pulumi.dev.yaml", stack)
    code = main(["capacity", "calibrate", "--from", str(path), "--stack", "dev", "--stack-file", str(stack),
                 "--out", str(tmp_path / "f.json")])  # fmt: skip
    return code, stack


def test_calibrate_writes_a_one_line_basis_the_settings_accept(tmp_path, capsys):
    code, stack = _calibrate(tmp_path, lambda r: r.update(url="http://127.0.0.1:1/\r\nx: y"))
    assert code == 0, capsys.readouterr().err
    factors = stack_files.load("dev", stack_file=stack).capacity.planning_factors()
    assert "\r" not in factors.throughput_scale.basis and "\n" not in factors.throughput_scale.basis


def test_calibrate_refuses_a_ratio_beyond_the_factor_range(tmp_path, capsys):
    code, stack = _calibrate(tmp_path, lambda r: r["load"]["at_planned_concurrency"].update(output_tokens_per_s=1e12))
    assert code == 2 and "throughput_scale" in capsys.readouterr().err
    assert "factors:" not in stack.read_text()


# 4. nodePools.<pool>.localStorage: raid0 where it does nothing


def _plan_doc(tmp_path, capsys, stack: str, pool: str, values: dict) -> tuple[int, str]:
    import yaml

    doc = yaml.safe_load((REPO / "stacks" / f"Pulumi.{stack}.yaml").read_text())
    doc["config"]["inference-platform:nodePools"][pool].update(values)
    code, _ = _plan(tmp_path, stack, yaml.safe_dump(doc))
    return code, capsys.readouterr().err


@pytest.mark.parametrize(
    ("stack", "pool", "values", "words"),
    [
        ("prod", "small-models", {"amiFamily": "bottlerocket", "localStorage": "raid0"}, "amiFamily bottlerocket"),
        ("npu", "inference", {"localStorage": "raid0"}, "inf2.24xlarge, inf2.48xlarge have no NVMe"),
    ],
)
def test_raid0_where_it_has_no_effect_exits_2_naming_the_key(tmp_path, capsys, stack, pool, values, words):
    code, err = _plan_doc(tmp_path, capsys, stack, pool, values)
    assert code == 2, err
    lines = [ln for ln in err.splitlines() if ln.strip().startswith("- ")]
    assert len(lines) == 1 and lines[0].strip().startswith(f"- nodePools.{pool}.localStorage:"), err
    assert words in lines[0], err


def test_raid0_on_al2023_nvme_types_plans(tmp_path, capsys):
    code, err = _plan_doc(tmp_path, capsys, "prod", "small-models", {"localStorage": "raid0"})
    assert code == 0, err


@pytest.mark.parametrize(
    ("values", "nvme"),
    [
        ({"instanceTypes": ["g6e.xlarge"], "amiFamily": "bottlerocket", "localStorage": "raid0"}, False),
        ({"instanceTypes": ["inf2.24xlarge"], "localStorage": "raid0"}, False),
        ({"instanceTypes": ["g6e.xlarge"], "localStorage": "raid0"}, True),
        ({"instanceTypes": ["p5.48xlarge"]}, True),
        ({"instanceTypes": ["p5.48xlarge"], "amiFamily": "bottlerocket"}, False),
    ],
)
def test_the_cold_start_counts_nvme_only_where_raid0_takes_effect(values, nvme):
    from inference_platform.planners import cold_start
    from inference_platform.settings.node_pools import NodePoolSettings

    pool = NodePoolSettings.model_validate(values)
    assert pool.local_nvme_raid0() is nvme
    inputs = cold_start.StartInputs(
        provisioner="managed", instance_type=values["instanceTypes"][0], accelerators_per_node=1, model_gib=16,
        source="download", fsx_mb_s=None, starts_at_once=1, pods_per_node=1, local_nvme=pool.local_nvme_raid0(),
        ebs_mib_s=125.0, copy_streams=cold_start.PARALLEL_COPY_STREAMS,
    )  # fmt: skip
    assert ("NVMe" in cold_start.node_write_mib_s(inputs)[1]) is nvme
