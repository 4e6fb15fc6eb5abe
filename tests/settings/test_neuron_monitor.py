"""cluster.neuronMonitorDigest (issue 9 §7): a production stack with Neuron pools runs AWS's
neuron-monitor by digest; the key is required there, validated everywhere, and reaches the DaemonSet."""

from __future__ import annotations

import copy

from inference_platform.catalog import charts
from tests.conftest import one
from tests.settings.test_inference import load, problems, stack_values

KEY = "cluster.neuronMonitorDigest"


def _cluster(stack: str, **changes) -> dict:
    cluster = copy.deepcopy(stack_values(stack).get("cluster", {}))
    cluster.pop("neuronMonitorDigest", None)
    return {**cluster, **changes}


def test_production_with_neuron_pools_requires_the_digest():
    assert "by digest, not by tag" in problems({"cluster": _cluster("npu")}, "npu")[KEY]


def test_stacks_without_neuron_pools_or_in_development_need_none():
    assert load({"cluster": _cluster("prod")}, "prod").cluster.neuron_monitor_digest is None  # NVIDIA only
    trn = {"instanceTypes": ["trn1.32xlarge"], "minSize": 0, "maxSize": 1}
    pools = {**stack_values("dev")["nodePools"], "trn": trn}
    assert load({"nodePools": pools}).cluster.neuron_monitor_digest is None


def test_a_malformed_digest_is_refused_in_any_stack():
    for bad in ("1.10.0", "sha256:" + "A" * 64, "sha256:abc"):
        assert "expected sha256:<64 hex digits>" in problems({"cluster": _cluster("dev", neuronMonitorDigest=bad)})[KEY]


def test_the_digest_pins_the_daemonset_image(stack_plan):
    digest = stack_values("npu")["cluster"]["neuronMonitorDigest"]
    monitor = one(stack_plan("npu").run.resources, "accelerators-neuron-monitor")
    assert (
        monitor.inputs["spec"]["template"]["spec"]["containers"][0]["image"]
        == f"{charts.NEURON_MONITOR_IMAGE}@{digest}"
    )
