"""Standby placeholders (components/autoscaling/standby.py): a Deployment of pods holding a serving pod's room at a
negative, non-preempting PriorityClass, both children of one component; zero replicas is refused."""

from __future__ import annotations

import pulumi_kubernetes as k8s
import pytest

from inference_platform.components.autoscaling.standby import PRIORITY_VALUE, Standby, StandbyArgs
from inference_platform.components.common.errors import ComponentArgsError
from tests.conftest import by_type

POD = {"containers": [{"name": "standby", "image": "i@sha256:" + "a" * 64, "command": ["sleep", "infinity"],
                       "resources": {"requests": {"nvidia.com/gpu": "4"}, "limits": {"nvidia.com/gpu": "4"}}}]}  # fmt: skip


def _program(replicas):
    def program():
        provider = k8s.Provider("k8s", kubeconfig="{}")
        Standby("standby", StandbyArgs(k8s_provider=provider, namespace="inference", workload_name="triton",
                                       pod_spec=POD, replicas=replicas))  # fmt: skip

    return program


def test_placeholders_run_the_pod_at_the_standby_class(run_components):
    resources = run_components(_program(3)).resources
    (priority,) = by_type(resources, "kubernetes:scheduling.k8s.io/v1:PriorityClass")
    (deployment,) = by_type(resources, "kubernetes:apps/v1:Deployment")
    assert priority.inputs["value"] == PRIORITY_VALUE and priority.inputs["preemptionPolicy"] == "Never"
    spec = deployment.inputs["spec"]
    assert spec["replicas"] == 3 and deployment.inputs["metadata"]["name"] == "triton-standby"
    pod = spec["template"]["spec"]
    assert pod["priorityClassName"] == priority.inputs["metadata"]["name"] == "inference-triton-standby"
    assert pod["containers"] == POD["containers"]
    assert spec["selector"]["matchLabels"].items() <= spec["template"]["metadata"]["labels"].items()
    assert all("inference:autoscaling:Standby::standby" in (r.parent or "") for r in (priority, deployment))


def test_zero_placeholders_are_refused():
    with pytest.raises(ComponentArgsError, match="replicas=0"):
        _program(0)()
