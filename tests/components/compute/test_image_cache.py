"""coldStart.imagePull cached: the serving pool's launch templates map a volume restored from the image cache's
snapshot and mount it as containerd's root before nodeadm starts containerd; the pool enables fast snapshot restore in
each of its zones. Upstream facts (awslabs/amazon-eks-ami v20260724, aws-samples/bottlerocket-images-cache) are quoted
in tests/data/upstream/amazon_eks_ami_v20260724_image_cache.json and re-read from the mirrors here."""

from __future__ import annotations

import base64
import email
import json
import subprocess
from pathlib import Path

import pytest

from inference_platform.catalog import image_cache
from inference_platform.catalog.image_cache import ImageCacheSpec
from inference_platform.catalog.pool_profile import PoolSpec, profile
from inference_platform.components.common.errors import ComponentArgsError
from inference_platform.components.compute.node_pool import SHELL_SCRIPT, NodePool
from tests.components.compute.test_efa_memlock import _node_configs
from tests.components.compute.test_node_pool import pool_resources
from tests.conftest import by_type, one
from tests.policies.test_efa_nodes_rules import _pool_args
from tests.upstream_quotes import assert_quote_holds

FACTS = json.loads((Path(__file__).parents[2] / "data/upstream/amazon_eks_ami_v20260724_image_cache.json").read_text())
CACHE = ImageCacheSpec(snapshot_id="snap-0a1b2c3d4e5f60718", size_gib=100)
FSR = "aws:ebs/fastSnapshotRestore:FastSnapshotRestore"


@pytest.mark.parametrize("fact", FACTS["facts"], ids=lambda f: f"{f['path'].rsplit('/', 1)[-1]}:{f['quote'][:30]}")
def test_each_upstream_fact_holds_at_its_ref(fact):
    assert_quote_holds(fact)


def test_our_names_are_the_quoted_ones():
    quotes = "\n".join(f["quote"] for f in FACTS["facts"])
    assert f'"{image_cache.SANDBOX_IMAGE}"' in quotes and f'"{image_cache.PAUSE_ARCHIVE}"' in quotes
    assert image_cache.CRI_PINNED_LABEL in quotes and image_cache.CRI_MANAGED_LABEL in quotes
    assert "DisabledMountContainerd" in quotes and "{Containerd," in quotes
    assert len(image_cache.FS_LABEL) <= 12  # XFS labels


def _scripts(lt_inputs) -> list[str]:
    message = email.message_from_string(base64.b64decode(lt_inputs["userData"]).decode())
    return [p.get_payload() for p in message.walk() if p.get("Content-Type") == SHELL_SCRIPT]


def test_a_cached_efa_pool_maps_the_snapshot_mounts_it_and_keeps_the_raid_off_containerd(run_components):
    resources = pool_resources(run_components, "p5.48xlarge", local_nvme_raid0=True, image_cache=CACHE,
                               zones=("us-west-2a", "us-west-2b"))  # fmt: skip
    for zone in ("us-west-2a", "us-west-2b"):
        lt = one(resources, f"pool-{zone}-lt").inputs
        root, cache = lt["blockDeviceMappings"]
        assert root["deviceName"] == "/dev/xvda" and root["ebs"]["encrypted"] == "true"
        assert cache["deviceName"] == image_cache.CACHE_DEVICE
        assert cache["ebs"]["snapshotId"] == CACHE.snapshot_id and cache["ebs"]["volumeSize"] == 100
        # EC2 refuses an encryption value beside a snapshot id: the volume takes the snapshot's.
        assert "encrypted" not in cache["ebs"] and "kmsKeyId" not in cache["ebs"]
        assert cache["ebs"]["throughput"] == 1000 and "volumeInitializationRate" not in cache["ebs"]
        configs = _node_configs(base64.b64decode(lt["userData"]).decode())
        storage = [d["spec"]["instance"]["localStorage"] for d in configs if d["spec"].get("instance")]
        assert storage == [{"strategy": "RAID0", "disabledMounts": ["Containerd"]}]
        assert not any(d["spec"].get("featureGates") for d in configs)
        mount, hugepages = _scripts(lt)
        assert mount == image_cache.mount_script() and "want=" in hugepages
    restores = by_type(resources, FSR)
    assert sorted((r.name, r.inputs["availabilityZone"]) for r in restores) == [
        ("pool-image-cache-us-west-2a", "us-west-2a"), ("pool-image-cache-us-west-2b", "us-west-2b")]  # fmt: skip
    assert all(r.inputs["snapshotId"] == CACHE.snapshot_id for r in restores)
    # Each zone's nodes launch once the restore is enabled, not while it optimizes (volumes would restore lazily).
    for zone in ("us-west-2a", "us-west-2b"):
        group = next(r for r in resources if r.type == "aws:eks/nodeGroup:NodeGroup" and zone in r.name)
        assert {r.urn for r in restores} <= set(group.dependencies)
    assert image_cache.fsr_enable_minutes(100) == 26 and image_cache.fsr_enable_minutes(1024) == 80


def test_an_initialization_rate_replaces_fast_snapshot_restore(run_components):
    rated = ImageCacheSpec(CACHE.snapshot_id, 100, fast_snapshot_restore=False, initialization_rate_mib_s=300)
    resources = pool_resources(run_components, "g6.xlarge", image_cache=rated)
    (_, cache) = one(resources, "pool-lt").inputs["blockDeviceMappings"]
    assert cache["ebs"]["volumeInitializationRate"] == 300 and not by_type(resources, FSR)


def test_the_component_refuses_a_cache_it_cannot_mount():
    bottlerocket = _pool_args("bottlerocket")
    spec = PoolSpec(name="gpu", instance_types=("g6.xlarge",), ami_family="bottlerocket", image_cache=CACHE)
    with pytest.raises(ComponentArgsError, match="image_cache: with ami_family bottlerocket"):
        NodePool("pool", bottlerocket.__class__(**{**bottlerocket.__dict__, "pool": profile(spec, ("us-west-2a",))}))
    soci = PoolSpec(name="gpu", instance_types=("g6.xlarge",), image_cache=CACHE, fast_image_pull=True)
    with pytest.raises(ComponentArgsError, match="SOCI snapshotter"):
        NodePool("pool", bottlerocket.__class__(**{**bottlerocket.__dict__, "pool": profile(soci, ("us-west-2a",))}))


def _stub_bin(tmp_path: Path, found: bool) -> tuple[Path, Path]:
    """Commands the script calls, recording their arguments; blkid finds the label or not."""
    bin_dir, log = tmp_path / "bin", tmp_path / "calls.log"
    bin_dir.mkdir()
    for name in ("mount", "systemctl", "ctr", "xfs_growfs", "udevadm", "sleep"):
        (bin_dir / name).write_text(f'#!/bin/sh\necho "{name} $*" >> {log}\n')
    (bin_dir / "blkid").write_text(
        f'#!/bin/sh\necho "blkid $*" >> {log}\n' + ("echo /dev/nvme1n1\n" if found else "exit 2\n")
    )
    for f in bin_dir.iterdir():
        f.chmod(0o755)
    return bin_dir, log


def _run_mount(tmp_path: Path, found: bool) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    bin_dir, log = _stub_bin(tmp_path, found)
    root, units = tmp_path / "containerd", tmp_path / "units"
    units.mkdir()
    script = (image_cache.mount_script().replace(image_cache.CONTAINERD_ROOT, str(root))
              .replace(image_cache.MOUNT_UNIT_DIR, str(units)))  # fmt: skip
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin"}
    result = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=30, check=False, env=env)
    return result, log.read_text().splitlines() if log.exists() else []


def test_the_script_mounts_before_containerd_starts_and_restores_the_sandbox_image(tmp_path):
    result, calls = _run_mount(tmp_path, found=True)
    assert result.returncode == 0, result.stderr
    enable = calls.index(f"systemctl enable --now {image_cache.MOUNT_UNIT}")
    start = calls.index("systemctl start containerd")
    assert calls.index("systemctl stop containerd") < calls.index("systemctl daemon-reload") < enable < start, calls
    # The mount is a unit, so it holds across reboots (cloud-init runs user scripts once per instance).
    unit = (tmp_path / "units" / image_cache.MOUNT_UNIT).read_text()
    assert f"What=LABEL={image_cache.FS_LABEL}\n" in unit and f"Where={tmp_path / 'containerd'}\n" in unit
    assert "Before=containerd.service" in unit and "WantedBy=local-fs.target containerd.service" in unit
    assert not [c for c in calls if c.startswith("mount ")]
    imported = next(c for c in calls if "import" in c)
    assert image_cache.PAUSE_ARCHIVE in imported and calls.index(imported) > start
    assert any(image_cache.SANDBOX_IMAGE in c and image_cache.CRI_PINNED_LABEL in c for c in calls)
    assert calls[-1] == "systemctl stop containerd"  # nodeadm-run restarts it with its own config


def test_the_unit_is_named_for_its_mount_point():
    """systemd requires a mount unit's name to be its path escaped (systemd.mount(5)): var-lib-containerd.mount."""
    escaped = image_cache.CONTAINERD_ROOT.strip("/").replace("-", "\\x2d").replace("/", "-")
    assert f"{escaped}.mount" == image_cache.MOUNT_UNIT


def test_without_the_volume_the_node_keeps_its_store_and_boots(tmp_path):
    result, calls = _run_mount(tmp_path, found=False)
    assert result.returncode == 0 and "no volume labelled image-cache" in result.stderr
    assert not [c for c in calls if c.startswith(("mount", "systemctl", "ctr"))]
    assert sum(c.startswith("blkid") for c in calls) == image_cache.MOUNT_WAIT_SECONDS


def test_fast_snapshot_restore_credits_follow_the_published_formula():
    # Amazon EBS User Guide: a 128 GiB snapshot gets 8 credits, refilled at 8 an hour; at most 10, at least 1.
    assert image_cache.fsr_credits(128) == 8 and image_cache.fsr_refill_per_hour(128) == 8
    assert image_cache.fsr_credits(100) == 10 and image_cache.fsr_credits(4096) == 1
    assert image_cache.fsr_refill_per_hour(4096) == 0.25
