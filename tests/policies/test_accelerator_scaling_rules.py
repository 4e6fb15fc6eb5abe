"""Accelerator scaling and placement (issue 18 §3): ScaledObjects, HPAs and ScaledJobs whose maximum asks for
more accelerators than the pools hold or the budget allows; CronJobs and bare Pods on accelerator nodes."""

from __future__ import annotations

import pulumi_aws as aws
import pulumi_kubernetes as k8s
import pytest

CAPACITY = "autoscaling-within-accelerator-capacity"
BOUNDED = "accelerator-pods-bounded"
AFFINITY = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
    {"matchExpressions": [{"key": "node-pool", "operator": "In", "values": ["inference"]},
                          {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["us-east-1a"]}]}]}}}  # fmt: skip


def _pod(gpus=4, affinity=AFFINITY):
    return {"affinity": affinity, "containers": [{"name": "triton", "image": "x",
                                                  "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}]}  # fmt: skip


def _pools():
    # 2 x p5.48xlarge (8 H100 each) for inference, and a small pool the pods do not select.
    aws.eks.NodeGroup("inference", cluster_name="c", node_role_arn="r", subnet_ids=["s"], instance_types=["p5.48xlarge"],
                      labels={"node-pool": "inference"},
                      scaling_config={"min_size": 0, "max_size": 2, "desired_size": 0})  # fmt: skip
    aws.eks.NodeGroup("small", cluster_name="c", node_role_arn="r", subnet_ids=["s"], instance_types=["g6e.xlarge"],
                      labels={"node-pool": "small"}, scaling_config={"min_size": 0, "max_size": 6, "desired_size": 0})  # fmt: skip


def _scaled(kind, maximum, *, pools=True, gpus=4):
    def program():
        if pools:
            _pools()
        meta = {"name": "triton", "namespace": "inference"}
        k8s.apps.v1.Deployment("triton", metadata=meta, spec={
            "selector": {"matchLabels": {"app": "t"}},
            "template": {"metadata": {"labels": {"app": "t"}}, "spec": _pod(gpus)}})  # fmt: skip
        ref = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "triton"}
        if kind == "ScaledObject":
            spec = {"scaleTargetRef": ref, "triggers": [{"type": "prometheus", "metadata": {}}]}
            if maximum is not None:
                spec["maxReplicaCount"] = maximum
            k8s.apiextensions.CustomResource("so", api_version="keda.sh/v1alpha1", kind="ScaledObject",
                                             metadata=meta, spec=spec)  # fmt: skip
        elif kind == "HPA":
            k8s.autoscaling.v2.HorizontalPodAutoscaler("hpa", metadata=meta,
                                                       spec={"scaleTargetRef": ref, "maxReplicas": maximum})  # fmt: skip
        else:
            spec = {"jobTargetRef": {"parallelism": 2, "template": {"spec": {**_pod(gpus), "restartPolicy": "Never"}}},
                    "triggers": [{"type": "aws-sqs-queue", "metadata": {}}]}  # fmt: skip
            if maximum is not None:
                spec["maxReplicaCount"] = maximum
            k8s.apiextensions.CustomResource("sj", api_version="keda.sh/v1alpha1", kind="ScaledJob",
                                             metadata=meta, spec=spec)  # fmt: skip

    return program


@pytest.mark.parametrize(("kind", "maximum"), [("ScaledObject", 4), ("HPA", 4), ("ScaledJob", 2)])
def test_maxima_within_the_selected_pools_pass(violations, kind, maximum):
    # 16 H100 in the selected pool: 4 x 4, or 2 jobs x 2 pods x 4.
    assert violations(_scaled(kind, maximum), CAPACITY) == []


@pytest.mark.parametrize(
    ("kind", "maximum"), [("ScaledObject", 5), ("ScaledObject", None), ("HPA", 8), ("ScaledJob", 3)]
)
def test_maxima_beyond_the_selected_pools_fail(violations, kind, maximum):
    (found,) = violations(_scaled(kind, maximum), CAPACITY)
    assert "more than the pools its pods can land on hold (16: inference 16)" in found.message
    if maximum is None:
        assert "at its maximum 100 x 4" in found.message  # KEDA's default maxReplicaCount


def test_the_budget_applies_where_the_pools_are_made_elsewhere(violations):
    assert violations(_scaled("ScaledObject", 2, pools=False), CAPACITY, {"maxAccelerators": 8}) == []
    (found,) = violations(_scaled("ScaledObject", 3, pools=False), CAPACITY, {"maxAccelerators": 8})
    assert "= 12, over this stack's accelerator budget of 8" in found.message


def test_a_karpenter_limit_bounds_the_pool(violations):
    def program():
        k8s.apiextensions.CustomResource("pool", api_version="karpenter.sh/v1", kind="NodePool",
                                         metadata={"name": "inference"},
                                         spec={"limits": {"nvidia.com/gpu": "2"}, "template": {
                                             "metadata": {"labels": {"node-pool": "inference"}}, "spec": {}}})  # fmt: skip
        k8s.apps.v1.Deployment("triton", metadata={"name": "triton", "namespace": "inference"}, spec={
            "selector": {"matchLabels": {"app": "t"}},
            "template": {"metadata": {"labels": {"app": "t"}}, "spec": _pod(1)}})  # fmt: skip
        k8s.apiextensions.CustomResource("so", api_version="keda.sh/v1alpha1", kind="ScaledObject",
                                         metadata={"name": "triton", "namespace": "inference"},
                                         spec={"scaleTargetRef": {"name": "triton"}, "maxReplicaCount": 3})  # fmt: skip

    (found,) = violations(program, CAPACITY)
    assert "3 x 1 nvidia.com/gpu = 3" in found.message and "(2: pool 2)" in found.message


def _cron(policy="Forbid", deadline=3600, backoff=2, spec=None):
    def program():
        job = {"template": {"spec": spec or {**_pod(1), "restartPolicy": "Never"}}}
        if deadline:
            job["activeDeadlineSeconds"] = deadline
        if backoff is not None:
            job["backoffLimit"] = backoff
        k8s.batch.v1.CronJob("nightly", metadata={"name": "nightly", "namespace": "inference"},
                             spec={"schedule": "0 2 * * *", "concurrencyPolicy": policy, "jobTemplate": {"spec": job}})  # fmt: skip

    return program


def test_bounded_cron_jobs_and_pods_pass(violations):
    assert violations(_cron(), BOUNDED) == []
    # Off the accelerators, a CronJob is not judged here.
    cpu = {"containers": [{"name": "c", "image": "x"}], "restartPolicy": "Never"}
    assert violations(_cron(policy="Allow", deadline=None, backoff=None, spec=cpu), BOUNDED) == []

    def pod():
        k8s.core.v1.Pod("probe", metadata={"namespace": "inference"},
                        spec={**_pod(1), "activeDeadlineSeconds": 600, "restartPolicy": "Never"})  # fmt: skip

    assert violations(pod, BOUNDED) == []


def test_unbounded_cron_jobs_on_accelerators_fail(violations):
    found = [v.message for v in violations(_cron(policy="Allow", deadline=None, backoff=None), BOUNDED)]
    assert len(found) == 3
    assert any("concurrencyPolicy Allow" in m for m in found)
    assert any("activeDeadlineSeconds is unset" in m for m in found)
    assert any("backoffLimit unset" in m for m in found)


@pytest.mark.parametrize(
    "placement",
    [{"nodeSelector": {"accelerator": "nvidia"}},
     {"nodeSelector": {"node.kubernetes.io/instance-type": "inf2.xlarge"}},
     {"tolerations": [{"key": "aws.amazon.com/neuron", "operator": "Exists", "effect": "NoSchedule"}]},
     {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
         {"matchExpressions": [{"key": "nvidia.com/gpu.present", "operator": "In", "values": ["true"]}]}]}}}}],
    ids=["pool-label", "instance-type", "neuron-toleration", "gpu-affinity"],
)  # fmt: skip
def test_bare_pods_on_accelerator_nodes_without_a_deadline_fail(violations, placement):
    def program():
        k8s.core.v1.Pod("probe", metadata={"namespace": "tools"},
                        spec={"containers": [{"name": "c", "image": "x"}], **placement})  # fmt: skip

    (found,) = violations(program, BOUNDED)
    assert "bare Pod on accelerator nodes without activeDeadlineSeconds" in found.message


LOAD_TEST_LABELS = {"app.kubernetes.io/name": "loadtest"}
SYSTEM = {"nodeSelector": {"node-role": "system"}, "containers": [{"name": "locust", "image": "x"}],
          "restartPolicy": "Never"}  # fmt: skip
ON_GPU = {**SYSTEM, "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}]}


@pytest.mark.parametrize("kind", ["CronJob", "Pod"])
def test_load_test_cron_jobs_and_pods_stay_off_accelerators(violations, kind):
    def program(spec):
        meta = {"name": "locust", "namespace": "loadtest", "labels": LOAD_TEST_LABELS}
        if kind == "CronJob":
            k8s.batch.v1.CronJob("locust", metadata=meta, spec={
                "schedule": "0 3 * * *", "jobTemplate": {"spec": {"template": {"spec": spec}}}})  # fmt: skip
        else:
            k8s.core.v1.Pod("locust", metadata=meta, spec=spec)

    assert violations(lambda: program(SYSTEM), "load-test-off-accelerators") == []
    (found,) = violations(lambda: program(ON_GPU), "load-test-off-accelerators")
    assert "tolerate the accelerator taint nvidia.com/gpu" in found.message


def test_scaled_jobs_on_accelerators_are_bounded(violations):
    def program(bounds):
        k8s.apiextensions.CustomResource("sj", api_version="keda.sh/v1alpha1", kind="ScaledJob",
                                         metadata={"name": "sj", "namespace": "inference"},
                                         spec={"jobTargetRef": {**bounds, "template": {"spec": _pod(1)}},
                                               "maxReplicaCount": 2, "triggers": []})  # fmt: skip

    assert violations(lambda: program({"activeDeadlineSeconds": 3600, "backoffLimit": 1}), BOUNDED) == []
    found = [v.message for v in violations(lambda: program({"backoffLimit": 50}), BOUNDED)]
    assert any("ScaledJob jobTargetRef on accelerator nodes: activeDeadlineSeconds is unset" in m for m in found)
    assert any("backoffLimit 50" in m for m in found)


def test_without_a_configured_ceiling_the_stacks_own_pools_are_the_ceiling(violations):
    """Issue 28: no shipped configuration sets maxAccelerators; a ScaledObject asking for tens of thousands of
    GPUs passed when no pool of the stack held them, or when the pool was a NodePool without a limit."""
    (found,) = violations(_scaled("ScaledObject", 10_000, pools=False), CAPACITY)
    assert "10000 x 4 nvidia.com/gpu = 40000" in found.message and "no pool of this stack" in found.message

    def unbounded(maximum):
        def program():
            _pools()  # 16 H100 in node groups with a maxSize
            k8s.apiextensions.CustomResource("pool", api_version="karpenter.sh/v1", kind="NodePool",
                                             metadata={"name": "burst"},
                                             spec={"template": {"metadata": {"labels": {"node-pool": "inference"}},
                                                                "spec": {"requirements": [
                                                                    {"key": "node.kubernetes.io/instance-type",
                                                                     "operator": "In", "values": ["p5.48xlarge"]}]}}})  # fmt: skip
            k8s.apps.v1.Deployment("triton", metadata={"name": "triton", "namespace": "inference"}, spec={
                "selector": {"matchLabels": {"app": "t"}},
                "template": {"metadata": {"labels": {"app": "t"}}, "spec": _pod(8)}})  # fmt: skip
            k8s.apiextensions.CustomResource("so", api_version="keda.sh/v1alpha1", kind="ScaledObject",
                                             metadata={"name": "triton", "namespace": "inference"},
                                             spec={"scaleTargetRef": {"name": "triton"}, "maxReplicaCount": maximum})  # fmt: skip

        return program

    (found,) = violations(unbounded(5_000), CAPACITY)
    assert "= 40000, more than the stack's pools with a limit hold" in found.message and "pool inf" in found.message
    assert violations(unbounded(2), CAPACITY) == []  # 16 GPUs: what the bounded pools hold
    # A configured ceiling replaces the derived one, as before.
    assert violations(_scaled("ScaledObject", 2, pools=False), CAPACITY, {"maxAccelerators": 8}) == []
