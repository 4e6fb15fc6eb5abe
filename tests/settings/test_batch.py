"""``batch``: defaults (off; visibility and retention derived), the shipped stacks (on in prod and npu, off in dev),
and every bad input (exit 2) named by its key, its value and what is allowed; through ``inferctl plan`` too."""

from __future__ import annotations

import copy
import subprocess
import sys

import pytest
import yaml

from inference_platform.errors import CommandError
from inference_platform.settings import load_settings, stack_files

TAGS = {"owner": "team", "costCenter": "cc-1"}
P = "inference-platform:"


def test_defaults_are_off_with_derived_visibility_and_retention():
    cfg = load_settings({"tags": TAGS}, project="p", stack="dev", region="us-west-2").batch
    assert cfg.enabled is False
    assert cfg.visibility_timeout == 600 + 60 and cfg.queue_retention_seconds == (24 + 24) * 3600
    assert cfg.lines_per_message == 10 and cfg.queue_length_target == 1, "8 lines in flight = 1 message of 10"
    assert cfg.retention_days == 30 and cfg.max_receive_count == 5


@pytest.mark.parametrize(("stack", "enabled"), [("dev", False), ("prod", True), ("npu", True)])
def test_the_shipped_stacks(repo, stack, enabled):
    data = yaml.safe_load((repo / "stacks" / f"Pulumi.{stack}.yaml").read_text())
    assert bool((data["config"].get(P + "batch") or {}).get("enabled")) is enabled


@pytest.fixture
def prod(repo):
    return yaml.safe_load((repo / "stacks" / "Pulumi.prod.yaml").read_text())


def problems(tmp_path, stack, batch: dict, **others) -> str:
    stack = copy.deepcopy(stack)
    stack["config"][P + "batch"] = batch
    for key, value in others.items():
        stack["config"][P + key] = value
    path = tmp_path / "Pulumi.prod.yaml"
    path.write_text(yaml.safe_dump(stack))
    with pytest.raises(CommandError) as err:
        stack_files.load("prod", stack_file=path)
    assert err.value.exit_code == 2
    return str(err.value)


@pytest.mark.parametrize(
    ("batch", "others", "expected"),
    [
        (
            {"enabled": True, "visibilityTimeoutSeconds": 620},
            {},
            "batch.visibilityTimeoutSeconds: got 620; must exceed batch.requestTimeoutSeconds + 30 (630)",
        ),
        (
            {"enabled": True, "visibilityTimeoutSeconds": 50_000},
            {},
            "batch.visibilityTimeoutSeconds: got 50000; expected less than or equal to 43200",
        ),
        ({"enabled": True, "maxReceiveCount": 400}, {}, "batch.maxReceiveCount: got 400; 400 deliveries x 660 s"),
        ({"enabled": True, "maxReceiveCount": 0}, {}, "batch.maxReceiveCount: got 0"),
        ({"enabled": True, "completionWindowHours": 400}, {}, "batch.completionWindowHours: got 400"),
        ({"enabled": True, "dataKeyReuseSeconds": 30}, {}, "batch.dataKeyReuseSeconds: got 30"),
        ({"enabled": True, "maxFileBytes": 300_000_000}, {}, "batch.maxFileBytes: got 300000000"),
        (
            {"enabled": True, "workers": {"nodePool": "inference"}},
            {},
            "batch.workers.nodePool: got 'inference', an accelerator pool (nodePools.inference): batch workers never run on accelerator nodes",
        ),
        (
            {"enabled": True, "workers": {"minReplicas": 5, "maxReplicas": 2}},
            {},
            "batch.workers.minReplicas: got 5; above batch.workers.maxReplicas (2)",
        ),
        ({"enabled": True, "workers": {"concurrency": 0}}, {}, "batch.workers.concurrency: got 0"),
        ({"enabled": True, "api": {"replicas": 1}}, {}, "batch.api.replicas: got 1; production serves from at least 2"),
        ({"enabled": True, "api": {"memoryGib": 0.25}}, {}, "batch.api.memoryGib: got 0.25; an upload of"),
        ({"enabled": True, "image": {"tag": "1.0"}}, {}, "batch.image.digest: missing; production references"),
        (
            {"enabled": True, "quotas": {"clients": {"nobody": {"queuedTokens": 5}}}},
            {},
            "batch.quotas.clients.nobody: not an edge client; expected one of edge.auth.clients: ['batch', 'chat']",
        ),
        ({"enabled": True, "quotas": {"default": {"queuedTokens": 0}}}, {}, "batch.quotas.default.queuedTokens: got 0"),
        ({"enabled": True, "backoff": {"kvCacheRatio": 1.5}}, {}, "batch.backoff.kvCacheRatio: got 1.5"),
        ({"enabled": True, "backfill": {"targetUtilisation": 0}}, {}, "batch.backfill.targetUtilisation: got 0"),
        ({"enabled": True, "workrs": {}}, {}, "batch.workrs: unknown key (did you mean 'workers'?)"),
        ({"enabled": "yes please"}, {}, "batch.enabled: got 'yes please'"),
        (
            {"enabled": True},
            {"autoscaling": {"enabled": False}},
            "batch.enabled: true while autoscaling.enabled is false",
        ),
        (
            {"enabled": True, "workers": {"maxReplicas": 40, "cpu": 1}},
            {},
            "batch.workers.maxReplicas: got 40; 40 workers x 1 vCPU and 2 API replicas x 0.5 vCPU need 41 vCPU, more "
            "than the system node group holds at cluster.systemNodeGroup.maxSize 4 (16 vCPU)",
        ),
    ],
)
def test_bad_values_exit_2_naming_the_key(tmp_path, prod, batch, others, expected):
    assert expected in problems(tmp_path, prod, batch, **others)


def test_production_serves_the_batch_api_only_through_the_edge(tmp_path, prod):
    edge = {
        k: v for k, v in prod["config"][P + "edge"].items() if k not in ("domain", "hostedZoneId", "hostedZoneName")
    }
    text = problems(tmp_path, prod, {"enabled": True}, edge=edge)
    assert "batch.enabled: true while edge.domain is unset" in text


def test_a_disabled_lane_is_not_judged(tmp_path, prod):
    stack = copy.deepcopy(prod)
    stack["config"][P + "batch"] = {"enabled": False, "api": {"replicas": 1}, "workers": {"nodePool": "inference"}}
    path = tmp_path / "Pulumi.prod.yaml"
    path.write_text(yaml.safe_dump(stack))
    assert stack_files.load("prod", stack_file=path).batch.enabled is False


def test_inferctl_plan_exits_2_naming_the_key_without_a_traceback(repo, tmp_path, prod):
    stack = copy.deepcopy(prod)
    stack["config"][P + "batch"] = {"enabled": True, "visibilityTimeoutSeconds": 100}
    path = tmp_path / "Pulumi.prod.yaml"
    path.write_text(yaml.safe_dump(stack))
    result = subprocess.run(
        [sys.executable, "-m", "inference_platform.inferctl", "plan", "--stack", "prod", "--stack-file", str(path),
         "--quiet", "--out", str(tmp_path / "out")],
        capture_output=True, text=True, timeout=300, cwd=repo,
    )  # fmt: skip
    assert result.returncode == 2, result.stdout + result.stderr
    assert "batch.visibilityTimeoutSeconds: got 100" in result.stderr
    assert "Traceback" not in result.stderr
