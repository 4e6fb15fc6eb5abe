"""Issue 28 R10: nodeadm replaces the AMI's container rlimits list with a NodeConfig's, so the EFA nodes' NodeConfig
renders the whole list: the AMI's own open-files limit and the locked-memory limit EFA needs.

Read from awslabs/amazon-eks-ami at v20260724 (``git show v20260724:<path>``):
- nodeadm/internal/containerd/base-runtime-spec.json ``process.rlimits``:
  ``[{"type": "RLIMIT_NOFILE", "soft": 65536, "hard": 1048576}]``, the AMI's only container rlimit;
- nodeadm/internal/containerd/base_runtime_spec.go ``writeBaseRuntimeSpec``: the NodeConfig's
  ``containerd.baseRuntimeSpec`` merged over it with ``util.Merge``;
- nodeadm/internal/util/merge.go: ``mergo.Merge(&dstMap, &srcMap, mergo.WithOverride)`` when no option is given
  (and writeBaseRuntimeSpec gives none), never ``mergo.WithAppendSlice``, which nodeadm/vendor/dario.cat/mergo/
  merge.go documents as "will make merge append slices instead of overwriting it": a list is overwritten whole.

``mergo_override`` below reproduces that merge for the maps and lists nodeadm decodes JSON into.
"""

from __future__ import annotations

import base64
from typing import Any

from inference_platform.catalog import nodeadm
from inference_platform.components.compute.node_pool import EFA_MEMLOCK_BYTES
from tests.components.compute.test_efa_memlock import _node_configs
from tests.components.compute.test_karpenter_node_pool import crs
from tests.components.compute.test_node_pool import pool_resources
from tests.conftest import one

TAG = "v20260724"
# base-runtime-spec.json's process section, as far as rlimits go.
AMI_BASE_SPEC = {"process": {"rlimits": [{"type": "RLIMIT_NOFILE", "soft": 65536, "hard": 1048576}]}}
# What components/compute/node_pool.py rendered before issue 28: memlock alone.
BEFORE = {"process": {"rlimits": [{"type": "RLIMIT_MEMLOCK", "hard": EFA_MEMLOCK_BYTES, "soft": EFA_MEMLOCK_BYTES}]}}


def mergo_override(dst: Any, src: Any) -> Any:
    """mergo.Merge with WithOverride over decoded JSON: maps merge key by key, anything else (lists included) in
    ``src`` overrides ``dst``."""
    if isinstance(dst, dict) and isinstance(src, dict):
        return {**dst, **{k: mergo_override(dst[k], v) if k in dst else v for k, v in src.items()}}
    return src


def _container_rlimits(base_runtime_spec: dict) -> dict[str, dict]:
    merged = mergo_override(AMI_BASE_SPEC, base_runtime_spec)
    return {r["type"]: r for r in merged["process"]["rlimits"]}


def test_the_pins_are_the_amis():
    assert nodeadm.AMI_RELEASE == TAG
    assert [dict(r) for r in nodeadm.AMI_CONTAINER_RLIMITS] == [
        {"type": "RLIMIT_NOFILE", "hard": 1048576, "soft": 65536}
    ]
    assert nodeadm.merged_rlimits(None) == list(nodeadm.AMI_CONTAINER_RLIMITS)


def test_memlock_alone_drops_the_amis_open_files_limit():
    """The old NodeConfig: the merged spec has memlock and no RLIMIT_NOFILE any more."""
    assert set(_container_rlimits(BEFORE)) == {"RLIMIT_MEMLOCK"}


def _efa_base_runtime_spec(mime: str) -> dict:
    (spec,) = [
        doc["spec"]["containerd"]["baseRuntimeSpec"] for doc in _node_configs(mime) if "containerd" in doc["spec"]
    ]
    return spec


def test_an_efa_node_group_keeps_the_amis_open_files_limit_and_lifts_memlock(run_components):
    lt = one(pool_resources(run_components, "p5.48xlarge", local_nvme_raid0=True), "pool-us-west-2a-lt").inputs
    limits = _container_rlimits(_efa_base_runtime_spec(base64.b64decode(lt["userData"]).decode()))
    assert limits == {
        "RLIMIT_NOFILE": {"type": "RLIMIT_NOFILE", "soft": 65536, "hard": 1048576},
        "RLIMIT_MEMLOCK": {"type": "RLIMIT_MEMLOCK", "soft": EFA_MEMLOCK_BYTES, "hard": EFA_MEMLOCK_BYTES},
    }


def test_a_karpenter_efa_node_class_renders_the_same_list(run_components):
    _, node_class, _ = crs(run_components, "p5.48xlarge", max_size=2)
    limits = _container_rlimits(_efa_base_runtime_spec(node_class.inputs["spec"]["userData"]))
    assert set(limits) == {"RLIMIT_NOFILE", "RLIMIT_MEMLOCK"} and limits["RLIMIT_NOFILE"]["soft"] == 65536
