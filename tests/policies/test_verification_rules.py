"""Load-test pods stay off accelerator nodes; the verification Job is awaited, never retried, key from a file.
Each rule passes the components' own objects and fails each way it guards against."""

from __future__ import annotations

import copy

import pulumi_kubernetes as k8s
import pytest

from inference_platform.components.verification.load_test import WORKER_LABELS, LoadTest
from inference_platform.components.verification.verification_job import VerificationJob
from tests.components.verification.test_load_test import args as load_args
from tests.components.verification.test_verification_job import args as job_args

BOUNDS = {"backoffLimit": 0, "activeDeadlineSeconds": 600, "ttlSecondsAfterFinished": 600}
SYSTEM = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [{"key": "node-role", "operator": "In", "values": ["system"]}]}]
        }
    }
}
CONTAINER = {"name": "worker", "image": "i@sha256:" + "a" * 64, "resources": {"limits": {"cpu": "1"}}}


def _worker_job(pod_changes: dict, labels: dict | None = None):
    pod = {"restartPolicy": "Never", "affinity": SYSTEM, "containers": [copy.deepcopy(CONTAINER)], **pod_changes}
    labels = labels or WORKER_LABELS
    return lambda: k8s.batch.v1.Job(
        "w",
        metadata={"name": "w", "namespace": "loadtest", "labels": labels},
        spec={**BOUNDS, "template": {"metadata": {"labels": labels}, "spec": pod}},
    )


def test_the_load_test_component_passes(violations):
    program = lambda: LoadTest("load-test", load_args(None))  # noqa: E731
    assert violations(program, "load-test-off-accelerators") == []


@pytest.mark.parametrize(
    ("pod_changes", "expected"),
    [
        ({"affinity": {}}, "not pinned to the system nodes"),
        ({"affinity": {}, "nodeSelector": {"node-pool": "inference"}}, "not pinned to the system nodes"),
        ({"tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]}, "nvidia.com/gpu"),
        ({"tolerations": [{"operator": "Exists"}]}, "(every taint)"),
        ({"containers": [{**CONTAINER, "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}, "limits nvidia.com/gpu"),
    ],
)
def test_load_test_pods_on_accelerators_fail(violations, pod_changes, expected):
    found = violations(_worker_job(pod_changes), "load-test-off-accelerators")
    assert any(expected in v.message for v in found), found


def test_other_workloads_are_not_judged_by_the_load_test_rule(violations):
    other = _worker_job({"affinity": {}}, labels={"app.kubernetes.io/name": "engine-build"})
    assert violations(other, "load-test-off-accelerators") == []


def test_the_verification_component_passes(violations):
    program = lambda: VerificationJob("verification", job_args(None))  # noqa: E731
    assert violations(program, "verification-job-awaited") == []


def _verification_job(*, annotations=None, backoff=0, env=None):
    labels = {"app.kubernetes.io/name": "verification"}
    container = {"name": "verify", "image": "i@sha256:" + "a" * 64, "env": env or []}
    return lambda: k8s.batch.v1.Job(
        "v",
        metadata={"name": "v", "namespace": "inference", "labels": labels, "annotations": annotations or {}},
        spec={
            **BOUNDS,
            "backoffLimit": backoff,
            "template": {"metadata": {"labels": labels}, "spec": {"restartPolicy": "Never", "containers": [container]}},
        },
    )


@pytest.mark.parametrize(
    ("job", "expected"),
    [
        (_verification_job(annotations={"pulumi.com/skipAwait": "true"}), "skipAwait is set"),
        (_verification_job(backoff=2), "spec.backoffLimit is 2"),
        (_verification_job(env=[{"name": "INFERCTL_API_KEY", "value": "abc"}]), "INFERCTL_API_KEY"),
    ],
)
def test_a_verification_job_that_would_not_fail_the_deploy_fails(violations, job, expected):
    (found,) = violations(job, "verification-job-awaited")
    assert expected in found.message
