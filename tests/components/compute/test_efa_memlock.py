"""EFA nodes raise the containers' locked-memory limit (nodeadm containerd.baseRuntimeSpec), because a non-root
pod cannot: IPC_LOCK is inert without ambient capabilities (catalog/efa.py). Every other node's user
data is unchanged."""

from __future__ import annotations

import base64
import email

import yaml

from inference_platform.components.compute.node_pool import EFA_MEMLOCK_BYTES
from tests.components.compute.test_karpenter_node_pool import crs
from tests.components.compute.test_node_pool import pool_resources
from tests.conftest import one


def _node_configs(mime: str) -> list[dict]:
    message = email.message_from_string(mime)
    return [
        yaml.safe_load(part.get_payload())
        for part in message.walk()
        if part.get_content_type() == "application/node.eks.aws"
    ]


def _memlock(configs: list[dict]) -> list[dict]:
    return [
        limit
        for doc in configs
        for limit in doc["spec"].get("containerd", {}).get("baseRuntimeSpec", {}).get("process", {}).get("rlimits", [])
        if limit["type"] == "RLIMIT_MEMLOCK"
    ]


def test_an_efa_node_group_lifts_memlock_for_every_container(run_components):
    lt = one(pool_resources(run_components, "p5.48xlarge", local_nvme_raid0=True), "pool-us-west-2a-lt").inputs
    configs = _node_configs(base64.b64decode(lt["userData"]).decode())
    assert all(doc["apiVersion"] == "node.eks.aws/v1alpha1" and doc["kind"] == "NodeConfig" for doc in configs)
    assert _memlock(configs) == [{"type": "RLIMIT_MEMLOCK", "hard": EFA_MEMLOCK_BYTES, "soft": EFA_MEMLOCK_BYTES}]
    assert any(doc["spec"].get("instance", {}).get("localStorage") == {"strategy": "RAID0"} for doc in configs)
    # An exact int64 once parsed (nodeadm turns the YAML into JSON numbers for the OCI spec).
    assert EFA_MEMLOCK_BYTES == 2**63 - 1 and isinstance(_memlock(configs)[0]["hard"], int)


def test_a_node_group_without_efa_keeps_its_user_data(run_components):
    assert "userData" not in one(pool_resources(run_components, "g6.xlarge"), "pool-lt").inputs


def test_a_karpenter_efa_node_class_carries_the_same_part(run_components):
    _, node_class, _ = crs(run_components, "p5.48xlarge", max_size=2)
    assert _memlock(_node_configs(node_class.inputs["spec"]["userData"]))[0]["hard"] == EFA_MEMLOCK_BYTES
    _, plain, _ = crs(run_components, "g6.xlarge")
    assert "userData" not in plain.inputs["spec"]
