"""KEDA from its pinned chart and the rollout's ScaledObject under the mock engine."""

from __future__ import annotations

import pytest

from inference_platform.components.autoscaling.keda import Keda, KedaArgs
from inference_platform.components.autoscaling.scaled_object import ScaleTarget, ScalingPolicy
from inference_platform.components.autoscaling.scaled_workload import ScaledWorkload, ScaledWorkloadArgs
from inference_platform.components.common.errors import ComponentArgsError
from inference_platform.components.observability.promql import Scope
from inference_platform.components.serving.inference_service import InferenceService
from tests.components.serving.test_inference_service import service_args
from tests.components.storage.test_fsx_csi import provider
from tests.conftest import by_type, one

POLICY = ScalingPolicy(
    scope=Scope(namespace="inference", job="triton"), prometheus_url="http://p:9090", min_replicas=2, max_replicas=6
)


def test_keda_and_the_scaled_object(run_components):
    def program():
        k = provider()
        keda = Keda("keda", KedaArgs(k8s_provider=k))
        ScaledWorkload(
            "scaling",
            ScaledWorkloadArgs(
                k8s_provider=k, policy=POLICY, target=ScaleTarget(name="triton"), depends_on=[keda.release]
            ),
        )

    run = run_components(program)
    release = one(run.resources, "keda-release")
    assert release.inputs["chart"] == "keda" and release.inputs["version"] == "2.20.2"
    assert release.inputs["values"]["nodeSelector"] == {"node-role": "system"}
    (scaled,) = by_type(run.resources, "kubernetes:keda.sh/v1alpha1:ScaledObject")
    spec = scaled.inputs["spec"]
    assert scaled.inputs["metadata"]["namespace"] == "inference"
    assert spec["minReplicaCount"] == 1 and spec["maxReplicaCount"] == 6  # night floor 1 of the day's 2
    assert release.urn in scaled.dependencies


def test_a_bad_policy_is_refused():
    with pytest.raises(ComponentArgsError, match="min_replicas=7"):
        ScaledWorkload(
            "s",
            ScaledWorkloadArgs(
                k8s_provider=None,
                policy=ScalingPolicy(  # type: ignore[arg-type]
                    scope=POLICY.scope, prometheus_url="http://p", min_replicas=7, max_replicas=2
                ),
                target=ScaleTarget(name="t"),
            ),
        )


def test_an_autoscaled_rollout_leaves_the_replica_count_to_keda(run_components):
    run = run_components(lambda: InferenceService("svc", service_args(provider(), replicas=2, autoscaled_max=6)))
    (deployment,) = by_type(run.resources, "kubernetes:apps/v1:Deployment")
    assert deployment.inputs["spec"]["replicas"] == 2 and deployment.ignore_changes == ["spec.replicas"]
    fixed = run_components(lambda: InferenceService("svc", service_args(provider(), replicas=2)))
    assert by_type(fixed.resources, "kubernetes:apps/v1:Deployment")[0].ignore_changes == []
    with pytest.raises(ComponentArgsError, match="autoscaled_max=1"):
        InferenceService("bad", service_args(provider(), replicas=2, autoscaled_max=1))
