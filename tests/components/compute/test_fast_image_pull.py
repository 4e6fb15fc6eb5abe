"""coldStart.imagePull parallel: the serving pool's nodes carry nodeadm's FastImagePull feature gate, in the managed
group's launch template and in Karpenter's EC2NodeClass alike (awslabs/amazon-eks-ami v20260724, pinned in
tests/data/upstream/amazon_eks_ami_v20260724_fast_image_pull.json)."""

from __future__ import annotations

import base64
import json
from pathlib import Path

from inference_platform.planners import cold_start
from tests.components.compute.test_efa_memlock import _memlock, _node_configs
from tests.components.compute.test_karpenter_node_pool import crs
from tests.components.compute.test_node_pool import pool_resources
from tests.conftest import one

PINNED = json.loads((Path(__file__).parents[2] / "data/upstream/amazon_eks_ami_v20260724_fast_image_pull.json")
                    .read_text())  # fmt: skip


def _gates(configs: list[dict]) -> dict:
    out: dict = {}
    for doc in configs:
        out.update(doc["spec"].get("featureGates") or {})
    return out


def test_the_pinned_gate_and_its_limits_are_the_models():
    assert PINNED["feature_gate"]["name"] == "FastImagePull"
    assert PINNED["applies_when"]["min_vcpus"] == cold_start.FAST_IMAGE_PULL_MIN_VCPUS
    assert PINNED["applies_when"]["min_memory_gib"] == cold_start.FAST_IMAGE_PULL_MIN_MEMORY_GIB
    assert "600MiB/s" in PINNED["documentation"]["disk"] and cold_start.FAST_IMAGE_PULL_MIN_DISK_MIB_S == 600
    assert PINNED["what_it_writes"]["parallel_pull_unpack"]["enable"] is True


def test_a_managed_group_with_fast_image_pull_carries_the_gate_beside_its_other_parts(run_components):
    lt = one(pool_resources(run_components, "p5.48xlarge", local_nvme_raid0=True, fast_image_pull=True),
             "pool-us-west-2a-lt").inputs  # fmt: skip
    configs = _node_configs(base64.b64decode(lt["userData"]).decode())
    assert _gates(configs) == {"FastImagePull": True}
    assert _memlock(configs) and any(d["spec"].get("instance") for d in configs)  # EFA and RAID0 parts kept
    plain = one(pool_resources(run_components, "g6.xlarge"), "pool-lt").inputs
    assert "userData" not in plain
    alone = one(pool_resources(run_components, "g6.xlarge", fast_image_pull=True), "pool-lt").inputs
    assert _gates(_node_configs(base64.b64decode(alone["userData"]).decode())) == {"FastImagePull": True}


def test_a_karpenter_node_class_carries_it_too(run_components):
    _, node_class, _ = crs(run_components, "g6.xlarge", fast_image_pull=True)
    assert _gates(_node_configs(node_class.inputs["spec"]["userData"])) == {"FastImagePull": True}
    _, efa, _ = crs(run_components, "p5.48xlarge", max_size=2, fast_image_pull=True)
    configs = _node_configs(efa.inputs["spec"]["userData"])
    assert _gates(configs) == {"FastImagePull": True} and _memlock(configs)
