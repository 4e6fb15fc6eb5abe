"""The distributed load test: a Locust master Job, a worker Indexed Job on the system nodes, a master Service,
NetworkPolicies that leave the workers only the edge, DNS and the master; bounded; schema-valid."""

from __future__ import annotations

import dataclasses

import pytest

from inference_platform.components.common.errors import ComponentArgsError
from inference_platform.components.verification import LoadTest, LoadTestArgs
from inference_platform.components.verification.load_test import (
    LOAD_SECONDS_ANNOTATION,
    MASTER_PORT,
    active_deadline_seconds,
)
from inference_platform.inferctl.loadtest.command import build_config, register
from tests.components.storage.test_fsx_csi import provider
from tests.components.verification.test_verification_job import validate_builtin
from tests.conftest import by_type

ARN = "arn:aws:secretsmanager:us-east-1:123456789012:secret:p-dev/edge/clients/bulk-AbCdEf"


def args(k8s_provider, **overrides) -> LoadTestArgs:
    base = LoadTestArgs(
        k8s_provider=k8s_provider,
        cluster_name="c",
        image="123456789012.dkr.ecr.us-east-1.amazonaws.com/p/inference@sha256:" + "b" * 64,
        image_version="sha256:" + "b" * 64,
        url="https://api.example.com",
        rate=1000,
        workers=3,
        concurrency_per_worker=256,
        duration_seconds=300,
        max_requests=360_000,
        api_key_secret_arn=ARN,
        kms_key_arn="arn:aws:kms:us-east-1:123456789012:key/k",
        vpc_cidrs=["10.30.0.0/16"],
    )
    return dataclasses.replace(base, **overrides)


def run(run_components, **overrides):
    return run_components(lambda: LoadTest("load-test", args(provider(), **overrides))).resources


def jobs(resources):
    found = {j.inputs["metadata"]["labels"]["app.kubernetes.io/component"]: j
             for j in by_type(resources, "kubernetes:batch/v1:Job")}  # fmt: skip
    return found["master"], found["worker"]


def parse(command):
    """The pods' command lines parse with inferctl's own parser (the flags exist and carry valid values)."""
    import argparse

    parser = argparse.ArgumentParser()
    register(parser.add_subparsers())
    assert command[:2] == ["inferctl", "loadtest"]
    return parser.parse_args(command[1:])


def test_master_job_and_indexed_worker_job_agree_on_the_run(run_components):
    resources = run(run_components)
    master, worker = jobs(resources)
    deadline = active_deadline_seconds(args(None))
    for job in (master, worker):
        spec = job.inputs["spec"]
        assert spec["backoffLimit"] == 0 and spec["activeDeadlineSeconds"] == deadline
        assert spec["ttlSecondsAfterFinished"] == 86400
    # pulumi up waits for the master (the test's outcome), not for each worker.
    assert master.inputs["metadata"]["annotations"] == {"pulumi.com/replaceUnready": "true"}
    assert worker.inputs["metadata"]["annotations"]["pulumi.com/skipAwait"] == "true"
    assert worker.inputs["metadata"]["annotations"][LOAD_SECONDS_ANNOTATION] == "300"
    wspec = worker.inputs["spec"]
    assert wspec["completionMode"] == "Indexed" and wspec["completions"] == wspec["parallelism"] == 3
    m = parse(master.inputs["spec"]["template"]["spec"]["containers"][0]["command"])
    w = parse(worker.inputs["spec"]["template"]["spec"]["containers"][0]["command"])
    assert (m.role, w.role) == ("master", "worker")
    assert m.expect_workers_seconds == 600
    assert w.master_host == "loadtest-master.loadtest.svc.cluster.local" and m.master_host == "0.0.0.0"
    for a in (m, w):
        assert (a.shape, a.rate, a.workers, a.max_requests, a.duration, a.master_port) == (
            "rate",
            1000.0,
            3,
            360_000,
            300.0,
            MASTER_PORT,
        )
    assert w.api_key_file is not None and m.api_key_file is None
    # inferctl's own validation accepts both command lines (bad flags would exit 2 in the pod).
    assert build_config(m).workers == build_config(w).workers == 3
    (service,) = by_type(resources, "kubernetes:core/v1:Service")
    assert service.inputs["spec"]["ports"][0]["port"] == MASTER_PORT
    assert service.inputs["spec"]["selector"] == master.inputs["spec"]["template"]["metadata"]["labels"]


def test_workers_run_on_system_nodes_hardened_with_one_vcpu(run_components):
    _, worker = jobs(run(run_components))
    pod = worker.inputs["spec"]["template"]["spec"]
    terms = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert terms == [{"matchExpressions": [{"key": "node-role", "operator": "In", "values": ["system"]}]}]
    assert "tolerations" not in pod and pod["automountServiceAccountToken"] is False
    container = pod["containers"][0]
    assert container["resources"]["limits"]["cpu"] == "1"
    assert container["resources"]["requests"] == container["resources"]["limits"]
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    (csi,) = [v for v in pod["volumes"] if "csi" in v]
    assert csi["csi"]["volumeAttributes"] == {"secretProviderClass": "loadtest-secrets"}


def test_workers_reach_only_dns_the_master_and_public_https(run_components):
    resources = run(run_components)
    policies = {p.inputs["metadata"]["name"]: p.inputs["spec"] for p in
                by_type(resources, "kubernetes:networking.k8s.io/v1:NetworkPolicy")}  # fmt: skip
    workers = policies["loadtest-workers"]
    assert workers["ingress"] == [] and workers["policyTypes"] == ["Ingress", "Egress"]
    dns, master, https = workers["egress"]
    assert {p["port"] for p in dns["ports"]} == {53}
    assert master["ports"] == [{"protocol": "TCP", "port": MASTER_PORT}]
    assert https["ports"] == [{"protocol": "TCP", "port": 443}]
    assert https["to"] == [{"ipBlock": {"cidr": "0.0.0.0/0", "except": ["10.30.0.0/16", "169.254.0.0/16"]}}]
    master_policy = policies["loadtest-master"]
    assert master_policy["ingress"][0]["ports"] == [{"protocol": "TCP", "port": MASTER_PORT}]
    assert master_policy["egress"] == [dns]
    (namespace,) = by_type(resources, "kubernetes:core/v1:Namespace")
    assert namespace.inputs["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"
    validate_builtin(resources)


@pytest.mark.parametrize(
    ("override", "expected"),
    [
        ({"rate": 0}, "rate=0"),
        ({"workers": 0}, "workers=0"),
        ({"concurrency_per_worker": 0}, "concurrency_per_worker=0"),
        ({"kms_key_arn": None}, "kms_key_arn"),
    ],
)
def test_bad_args_are_refused(override, expected):
    with pytest.raises(ComponentArgsError, match=expected):
        LoadTest("l", args(None, **override))


def test_inferctl_cost_prices_the_workers_on_the_system_nodes_per_run(run_components):
    """204 workers (100,000 requests/s at 70 % of the measured 701 each) on m7i.2xlarge system nodes."""
    from inference_platform.catalog.load_generator import workers_for
    from inference_platform.inferctl.cost.summary import resources_as_dicts
    from inference_platform.planners import costing

    workers = workers_for(100_000)
    resources = resources_as_dicts(run(run_components, rate=100_000, workers=workers, max_requests=36_000_000))
    system = {"type": costing.NODE_GROUP, "urn": "u:ng", "name": "pool-system-ng", "custom": True, "id": "ng",
              "inputs": {"instanceTypes": ["m7i.2xlarge"], "labels": {"node-role": "system"},
                         "scalingConfig": {"minSize": 2, "maxSize": 34}}}  # fmt: skip
    estimate = costing.estimate([system, *resources], region="us-east-1", usage=costing.Usage(load_test_runs=1))
    (line,) = [line for line in estimate.lines if line.category == "EC2 load test"]
    assert workers == 204 and line.status == "priced"
    assert "204 workers x 1 vCPU on 30 x m7i.2xlarge" in line.basis
    # 30 nodes x $0.4032/h for the 5 minutes of arrivals.
    assert line.monthly_expected == pytest.approx(30 * 0.4032 * 300 / 3600, rel=1e-3)
    assert line.monthly_max > line.monthly_expected
