"""The inference (rollout) settings and the bad inputs of issue 5 §5: each ends `inferctl plan` with
exit 2, names its key, and stops the program before any resource exists."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from inference_platform.inferctl.cli import main as inferctl
from inference_platform.offline_plan.engine import ProgramError, run_program
from inference_platform.settings import SettingsError, decode_value, load_settings
from inference_platform.settings.project import load_project, load_stack_config
from tests.conftest import REPO


def stack_values(stack: str) -> dict:
    project = load_project(REPO)
    config = load_stack_config(project, stack)
    prefix = f"{project.name}:"
    return {
        k[len(prefix) :]: decode_value(k[len(prefix) :], v) for k, v in config.values.items() if k.startswith(prefix)
    }


def load(values, stack="dev"):
    base = stack_values(stack)
    region = {"dev": "us-west-2", "prod": "us-east-1", "npu": "us-east-2"}[stack]
    merged = {**base, **values}
    return load_settings(merged, project="p", stack="s", region=region)


def inference(**changes):
    """The dev stack's inference section with ``changes`` merged one level deep."""
    section = copy.deepcopy(stack_values("dev")["inference"])
    for key, value in changes.items():
        section[key] = {**section.get(key, {}), **value} if isinstance(value, dict) else value
    return section


def problems(values, stack="dev"):
    with pytest.raises(SettingsError) as err:
        load(values, stack)
    return {p.path: p.message for p in err.value.problems}


def test_defaults_match_the_documented_ones():
    minimal = {"image": {"tag": "1"}, "model": {"engine": "e/v1", "tokenizer": "t/v1"},
               "resources": {"cpu": 3, "memoryGib": 12}}  # fmt: skip
    cfg = load({"inference": minimal}).inference
    assert cfg.has_image and cfg.replicas == 1 and cfg.image.repository == "inference"
    assert (cfg.rollout.max_surge, cfg.rollout.max_unavailable, cfg.pdb.max_unavailable) == (1, 0, 1)
    assert cfg.ecr.keep_images == 30 and cfg.ecr.scan_on_push and cfg.ecr.untagged_expire_days == 7
    # The grace period is derived from the drain (tests/settings/test_drain.py).
    assert cfg.probes.startup_seconds == 1800 and cfg.termination.grace_period_seconds is None
    assert cfg.topology_spread.zones == "required" and cfg.topology_spread.hosts == "preferred"
    assert cfg.monitoring.service_monitor and cfg.monitoring.install_crds and cfg.run_as_user == 1000
    assert cfg.model.engine == "e/v1/"  # normalized to a prefix
    assert cfg.model_source(fsx_enabled=False) == "download" and cfg.model_source(fsx_enabled=True) == "fsx"


def test_every_shipped_stack_is_valid_and_sized_for_its_pool():
    for stack in ("dev", "prod", "npu"):
        cfg = load({}, stack).inference
        assert cfg.model.engine and cfg.model.tokenizer
    assert load({}, "prod").inference.image.digest and load({}, "npu").inference.replicas >= 2


@pytest.mark.parametrize(
    ("changes", "path", "words"),
    [
        ({"image": {"digest": "sha256:abc"}}, "inference.image.digest", ["64 lower-case hex"]),
        ({"image": {"tag": "bad tag!"}}, "inference.image.tag", ["Docker tag"]),
        ({"image": {"repository": "Inference"}}, "inference.image.repository", ["ECR repository name"]),
        ({"model": {"engine": "../etc/v1"}}, "inference.model.engine", ["relative version path"]),
        ({"model": {"tokenizer": None}}, "inference.model.tokenizer", ["missing"]),
        ({"monitoring": {"scrapeInterval": "15"}}, "inference.monitoring.scrapeInterval", ["15s or 1m"]),
        (
            {"networkPolicy": {"loadBalancerCidrs": ["10.0.0.1/8"]}},
            "inference.networkPolicy.loadBalancerCidrs[0]",
            ["not a CIDR"],
        ),
        ({"probes": {"timeoutSeconds": 10}}, "inference.probes.timeoutSeconds", ["below periodSeconds"]),
        ({"pdb": {"maxUnavailable": 0}}, "inference.pdb.maxUnavailable", ["greater than or equal to 1"]),
        ({"rollout": {"maxSurge": 0, "maxUnavailable": 0}}, "inference.rollout.maxSurge", ["never progresses"]),
        ({"replicas": 3}, "inference.replicas", ["holds 2 at nodePools.inference.maxSize"]),
        ({"replicas": 2}, "inference.rollout.maxSurge", ["exceed the 2"]),
        ({"resources": {"memoryGib": 15}}, "inference.resources.memoryGib", ["g6.xlarge", "offers pods about 14"]),
        ({"resources": {"cpu": 4}}, "inference.resources.cpu", ["g6.xlarge"]),
        ({"sharedMemoryGib": 12}, "inference.sharedMemoryGib", ["below resources.memoryGib"]),
        ({"sharedMemoryGib": 11}, "inference.resources.memoryGib", ["host memory", "~9 GiB"]),
        ({"model": {"volumeGib": 5}}, "inference.model.volumeGib", ["about 9 GiB per pod"]),
        ({"model": {"volumeGib": 200}}, "inference.model.volumeGib", ["diskSizeGib 200 leaves 140 GiB"]),
        ({"model": {"source": "fsx"}}, "inference.model.source", ["fsx.enabled"]),
        (
            {"termination": {"gracePeriodSeconds": 30}},
            "inference.termination.gracePeriodSeconds",
            ["549 (derived from the longest stream)", "= 559", "unset it"],
        ),
        ({"ecr": {"keepImages": 0}}, "inference.ecr.keepImages", ["greater than or equal to 1"]),
        ({"runAsUser": 0}, "inference.runAsUser", ["greater than or equal to 1"]),
    ],
)
def test_each_bad_value_names_its_key(changes, path, words):
    found = problems({"inference": inference(**changes)})
    assert path in found, found
    for word in words:
        assert word in found[path]


def test_serving_keys_the_rollout_cannot_honour_are_named():
    serving = copy.deepcopy(stack_values("dev")["serving"])
    serving["artifacts"] = {"engineUri": "s3://other-bucket/models/e/v1/"}
    serving["auth"] = {"enabled": True, "keyFile": None, "keyEnv": "API_KEY",
                       "restrictedApis": ["inference", "health"]}  # fmt: skip
    found = problems({"serving": serving})
    assert "inference.model.engine" in found["serving.artifacts.engineUri"]
    assert "use keyFile" in found["serving.auth.keyEnv"]
    assert "leave health unrestricted" in found["serving.auth.restrictedApis"]
    serving["auth"] = {"enabled": True, "keyFile": "/tmp/api-key"}
    serving.pop("artifacts")
    assert "/tmp" in problems({"serving": serving})["serving.auth.keyFile"]


def test_production_needs_a_digest_two_replicas_and_scanning():
    section = copy.deepcopy(stack_values("prod")["inference"])
    section["image"].pop("digest")
    section["replicas"] = 1
    section["ecr"] = {"scanOnPush": False}
    found = problems({"inference": section}, "prod")
    assert "production references the image by digest" in found["inference.image.digest"]
    assert "at least 2" in found["inference.replicas"]
    assert "production scans" in found["inference.ecr.scanOnPush"]


def test_an_efa_pools_capacity_counts_every_zone_and_production_needs_two():
    section = copy.deepcopy(stack_values("prod")["inference"])
    assert load({"inference": {**section, "replicas": 7}}, "prod").inference.replicas == 7  # 7 + 1 surge = 2 x 2 x 2
    found = problems({"inference": {**section, "replicas": 8}}, "prod")
    assert "exceed the 8" in found["inference.rollout.maxSurge"]
    pools = copy.deepcopy(stack_values("prod")["nodePools"])
    pools["inference"]["availabilityZones"] = ["us-east-1b"]
    found = problems({"nodePools": pools}, "prod")
    assert (
        "got us-east-1b; production serves its 3 replicas from at least two zones"
        in found["nodePools.inference.availabilityZones"]
    )
    assert set(found) == {"nodePools.inference.availabilityZones"}  # one zone's 2 nodes hold 3 + 1 surge


def test_without_an_image_or_a_pool_nothing_is_rolled_out_and_nothing_checked():
    bare = load({"inference": {"replicas": 50, "resources": {"cpu": 400}}}).inference
    assert not bare.has_image and bare.replicas == 50
    values = {"nodePools": {}, "inference": inference(replicas=50)}
    assert load(values).inference.replicas == 50


def test_unknown_keys_are_named_with_a_hint():
    found = problems({"inference": inference(rollout={"maxSurg": 1})})
    assert "did you mean 'maxSurge'" in found["inference.rollout.maxSurg"]


# --- issue 5 §5 through the command: exit 2, the key named, nothing registered ------------------------


def _stack_file(tmp_path: Path, stack: str, config: dict) -> Path:
    doc = yaml.safe_load((REPO / "stacks" / f"Pulumi.{stack}.yaml").read_text())
    merged = copy.deepcopy(doc)
    for key, value in config.items():
        qualified = f"inference-platform:{key}"
        base = merged["config"].get(qualified)
        merged["config"][qualified] = {**base, **value} if isinstance(base, dict) and isinstance(value, dict) else value
    path = tmp_path / f"Pulumi.{stack}-bad.yaml"
    path.write_text(yaml.safe_dump(merged))
    return path


def _prod_image_without_digest() -> dict:
    section = copy.deepcopy(stack_values("prod")["inference"])
    section["image"] = {"tag": section["image"]["tag"]}
    return {"inference": section}


BAD_INPUTS = {
    "tp-pp-over-the-node": ("dev", {"serving": {"tensorParallel": 2}}, "serving.tensorParallel", "no multi-node"),
    "shm-over-node-ram": (
        "dev",
        {"inference": inference(sharedMemoryGib=64, resources={"memoryGib": 100})},
        "inference.sharedMemoryGib",
        "larger than the node's RAM",
    ),
    "fp8-on-a10g": (
        "dev",
        {
            "nodePools": {
                "inference": {"instanceTypes": ["g5.xlarge", "g5.2xlarge"], "capacityTypes": ["spot"], "maxSize": 2}
            }
        },
        "serving.precision",
        "fp8 does not run on g5.xlarge",
    ),
    "tag-without-digest-in-prod": ("prod", _prod_image_without_digest(), "inference.image.digest", "by digest"),
    "unknown-model": ("dev", {"serving": {"model": "Mystery-13B"}}, "serving.model", "serving.architecture"),
    "batch-over-the-kv-cache": (
        "prod",
        {"serving": {"maxBatchSize": 128}},
        "serving.tensorParallel",
        "tensorParallel 8 holds it on p5.48xlarge",
    ),
    "kv-cap-below-the-batch": (
        "dev",
        {"serving": {"kvCache": {"dtype": "fp8", "maxTokens": 65536}}},
        "serving.kvCache.maxTokens",
        "below maxBatchSize 16 x maxSeqLen 8192 = 131072",
    ),
    "replicas-over-both-zones": (
        "prod",
        {"inference": {"replicas": 9}},
        "inference.replicas",
        "holds 8 at nodePools.inference.maxSize (2 nodes per zone x 2 zones x 2 per node)",
    ),
    "no-surge-no-unavailable": (
        "dev",
        {"inference": inference(rollout={"maxSurge": 0, "maxUnavailable": 0})},
        "inference.rollout.maxSurge",
        "never progresses",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_bad_input_exits_2_naming_the_key_with_nothing_registered(tmp_path, capsys, case):
    stack, config, key, words = BAD_INPUTS[case]
    stack_file = _stack_file(tmp_path, stack, config)
    out = tmp_path / "out"
    code = inferctl(["plan", "--stack", stack, "--stack-file", str(stack_file), "--program", str(REPO),
                     "--out", str(out), "--quiet"])  # fmt: skip
    err = capsys.readouterr().err
    line = next((line for line in err.splitlines() if f"{key}:" in line), "")
    assert code == 2 and words in line, err
    with pytest.raises(ProgramError) as stopped:
        run_program(REPO, stack, stack_file=stack_file)
    assert stopped.value.registered == 0 and key in str(stopped.value)
    assert not (out / f"{stack}.json").exists()
