"""node-snapshot-volumes and node-containerd-root-mount: the cached pool we render passes; a snapshot volume with an
encryption value (EC2 refuses it at `pulumi up`) or restored lazily fails, and so does user data that mounts a store
over containerd's root without the AMI's sandbox image, under nodeadm's RAID0 bind or with FastImagePull on."""

from __future__ import annotations

import base64

import pulumi_aws as aws
import pytest

from inference_platform.catalog import image_cache
from inference_platform.catalog.image_cache import ImageCacheSpec
from inference_platform.catalog.pool_profile import PoolSpec, profile
from inference_platform.components.compute.node_pool import (
    FAST_IMAGE_PULL_NODE_CONFIG,
    LOCAL_STORAGE_CACHED_NODE_CONFIG,
    LOCAL_STORAGE_NODE_CONFIG,
    NodePool,
    node_config_mime,
)
from tests.policies.test_efa_nodes_rules import _pool_args

SNAPSHOT = "snap-0a1b2c3d4e5f60718"
RULES = ("node-snapshot-volumes", "node-containerd-root-mount", "nodes-ebs-encrypted", "nodes-volumes-cmk")


def _cached_pool() -> NodePool:
    args = _pool_args()
    spec = PoolSpec(name="gpu", instance_types=("p5.48xlarge",), local_nvme_raid0=True,
                    image_cache=ImageCacheSpec(SNAPSHOT, 100))  # fmt: skip
    return NodePool("pool", args.__class__(**{**args.__dict__, "pool": profile(spec, ("us-west-2a",)),
                                              "volume_kms_key_arn": "arn:aws:kms:us-west-2:123456789012:key/k"}))  # fmt: skip


def test_the_cached_pool_we_render_passes_every_node_volume_rule(violations):
    for rule in RULES:
        assert violations(_cached_pool, rule) == [], rule


def _template(ebs: dict, restore: bool = False, user_data: str | None = None):
    def program():
        aws.ec2.LaunchTemplate("lt", instance_type="g6.xlarge", user_data=user_data,
                               block_device_mappings=[{"device_name": "/dev/xvdc", "ebs": {"snapshot_id": SNAPSHOT,
                                                                                             **ebs}}])  # fmt: skip
        if restore:
            aws.ebs.FastSnapshotRestore("fsr", availability_zone="us-west-2a", snapshot_id=SNAPSHOT)

    return program


@pytest.mark.parametrize(
    ("ebs", "restore", "words"),
    [
        ({}, True, []),
        ({"volume_initialization_rate": 300}, False, []),
        ({}, False, ["neither fast snapshot restore"]),
        ({"encrypted": "true"}, True, ["sets an encryption value"]),
        ({"kms_key_id": "arn:aws:kms:us-west-2:123456789012:key/k", "volume_initialization_rate": 100}, False,
         ["sets an encryption value"]),
    ],
)  # fmt: skip
def test_a_snapshot_volume_sets_no_encryption_and_is_initialized_at_creation(violations, ebs, restore, words):
    found = violations(_template(ebs, restore), "node-snapshot-volumes")
    assert [w for w in words if any(w in v.message for v in found)] == words and len(found) == len(words)
    assert all(v.mandatory for v in found)


def _user_data(parts, scripts) -> str:
    return base64.b64encode(node_config_mime(parts, scripts).encode()).decode()


WITHOUT_PAUSE = image_cache.mount_script().replace(f"import --local {image_cache.PAUSE_ARCHIVE}", "ls")


@pytest.mark.parametrize(
    ("parts", "scripts", "words"),
    [
        ([LOCAL_STORAGE_CACHED_NODE_CONFIG], [image_cache.mount_script()], []),
        ([], [image_cache.mount_script()], []),
        ([LOCAL_STORAGE_CACHED_NODE_CONFIG], [WITHOUT_PAUSE], ["without importing /etc/eks/pause.tar"]),
        ([LOCAL_STORAGE_NODE_CONFIG], [image_cache.mount_script()], ["disabledMounts: [Containerd]"]),
        ([FAST_IMAGE_PULL_NODE_CONFIG], [image_cache.mount_script()], ["FastImagePull"]),
        ([LOCAL_STORAGE_NODE_CONFIG, FAST_IMAGE_PULL_NODE_CONFIG], ["echo no mount here"], []),
    ],
)
def test_a_store_mounted_over_containerd_keeps_the_sandbox_and_its_mount(violations, parts, scripts, words):
    found = violations(_template({}, True, _user_data(parts, scripts)), "node-containerd-root-mount")
    assert [w for w in words if any(w in v.message for v in found)] == words and len(found) == len(words)
