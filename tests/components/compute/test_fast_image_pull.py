"""coldStart.imagePull parallel: the serving pool's nodes carry nodeadm's FastImagePull feature gate, in the managed
group's launch template and in Karpenter's EC2NodeClass alike (awslabs/amazon-eks-ami v20260724, pinned in
tests/data/upstream/amazon_eks_ami_v20260724_fast_image_pull.json)."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import get_args

from inference_platform.planners import cold_start
from inference_platform.settings.cold_start import ColdStartSettings
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


SOCI = json.loads((Path(__file__).parents[2] / "data/upstream/soci_snapshotter_v0.15.0_pull_modes.json").read_text())


def test_lazy_loading_is_not_modelled_because_the_pinned_gate_skips_it():
    """Issue 31: the new-node target needs lazy loading, which the pinned AMI's documented configuration cannot give:
    FastImagePull is nodeadm's one SOCI switch and writes parallel_pull_unpack.enable = true, and soci-snapshotter
    then skips the remote (lazy) snapshot before looking for an index. So the model offers no lazy mode and names
    why, with the pinned files."""
    gates = PINNED["feature_gates"]
    assert gates["soci_switches"] == ["FastImagePull"] and set(gates["soci_switches"]) <= set(gates["enum"])
    assert PINNED["what_it_writes"]["parallel_pull_unpack"]["enable"] is True
    assert "When true, lazy-load is skipped entirely." in SOCI["parallel_pull_unpack_enable"]["text"]
    skip = SOCI["skips_remote_snapshot"]
    assert "if o.parallelPullUnpack {\n\t\treturn true" in skip["code"] and "Parallel.Enable" in skip["set_by"]
    assert "ignored when `enable = true`" in SOCI["parallel_pull_as_fallback"]["text"]
    (lazy,) = [o for o in cold_start.NOT_OFFERED if o.name.startswith("lazy image loading")]
    assert "skips lazy-load" in lazy.why and "soci_snapshotter_v0.15.0_pull_modes.json" in lazy.source
    assert "amazon_eks_ami_v20260724_fast_image_pull.json" in lazy.source
    # The settings offer full, parallel and cached (a pre-pulled store, catalog/image_cache.py): no lazy mode.
    assert set(get_args(ColdStartSettings.model_fields["image_pull"].annotation)) == {"full", "parallel", "cached"}


def _no_snapshotter_override(configs: list[dict]) -> bool:
    """Our NodeConfig parts set only gates nodeadm knows, and no containerd config of their own: the snapshotter
    runs nodeadm's template (parallel pull, no lazy loading), as the model counts it."""
    known = set(PINNED["feature_gates"]["enum"])
    return all(set(d["spec"].get("featureGates") or {}) <= known and "config" not in (d["spec"].get("containerd") or {})
               for d in configs)  # fmt: skip


def test_a_managed_group_with_fast_image_pull_carries_the_gate_beside_its_other_parts(run_components):
    lt = one(pool_resources(run_components, "p5.48xlarge", local_nvme_raid0=True, fast_image_pull=True),
             "pool-us-west-2a-lt").inputs  # fmt: skip
    configs = _node_configs(base64.b64decode(lt["userData"]).decode())
    assert _gates(configs) == {"FastImagePull": True}
    assert _memlock(configs) and any(d["spec"].get("instance") for d in configs)  # EFA and RAID0 parts kept
    assert _no_snapshotter_override(configs)
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
    assert _no_snapshotter_override(configs)
