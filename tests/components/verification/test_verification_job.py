"""The verification Job: inferctl verify after the rollout, awaited, bounded, hardened, one key from the CSI driver."""

from __future__ import annotations

import argparse
import dataclasses
import json

import kubernetes_validate
import pytest

from inference_platform.components.common.errors import ComponentArgsError
from inference_platform.components.verification import InClusterTarget, PodShape, VerificationJob, VerificationJobArgs
from inference_platform.components.verification.verification_job import START_ALLOWANCE_SECONDS, create_timeout_seconds
from inference_platform.inferctl.verify import command as verify_command
from inference_platform.offline_plan.manifests import is_object, manifest
from tests.components.storage.test_fsx_csi import provider
from tests.conftest import by_type

# Custom resources (the CSI driver's SecretProviderClass) have no built-in schema to validate against.
CUSTOM_GROUPS = ("secrets-store.csi.x-k8s.io/",)


def validate_builtin(resources) -> int:
    count = 0
    for r in resources:
        if is_object(r) and not manifest(r)["apiVersion"].startswith(CUSTOM_GROUPS):
            kubernetes_validate.validate(manifest(r), "1.33", strict=True)
            count += 1
    assert count
    return count


ARN = "arn:aws:secretsmanager:us-east-1:123456789012:secret:p-prod/edge/clients/chat-AbCdEf"


def args(k8s_provider, **overrides) -> VerificationJobArgs:
    base = VerificationJobArgs(
        k8s_provider=k8s_provider,
        cluster_name="c",
        namespace="inference",
        stack="prod",
        image="123456789012.dkr.ecr.us-east-1.amazonaws.com/p/inference@sha256:" + "b" * 64,
        image_version="sha256:" + "b" * 64,
        settings_document=json.dumps({"format": "inference-platform/settings/v1", "stack": "prod"}),
        url="https://api.example.com",
        api_key_secret_arn=ARN,
        kms_key_arn="arn:aws:kms:us-east-1:123456789012:key/k",
        region="us-east-1",
        shape=PodShape(cpu=2, memory_gib=4),
        pod_selector="app.kubernetes.io/name=triton",
        prometheus=("monitoring", 9090),
    )
    return dataclasses.replace(base, **overrides)


def run(run_components, **overrides):
    return run_components(lambda: VerificationJob("verification", args(provider(), **overrides))).resources


def _job(resources):
    (job,) = by_type(resources, "kubernetes:batch/v1:Job")
    return job


def test_the_job_runs_verify_through_the_edge_and_is_awaited(run_components):
    job = _job(run(run_components))
    spec = job.inputs["spec"]
    assert spec["backoffLimit"] == 0 and spec["activeDeadlineSeconds"] == 1800
    assert spec["ttlSecondsAfterFinished"] == 86400
    annotations = job.inputs["metadata"]["annotations"]
    assert "pulumi.com/skipAwait" not in annotations and annotations["pulumi.com/replaceUnready"] == "true"
    pod = spec["template"]["spec"]
    (container,) = pod["containers"]
    command = container["command"]
    assert command[:2] == ["inferctl", "verify"]
    assert command[command.index("--url") + 1] == "https://api.example.com"
    assert command[command.index("--settings-file") + 1] == "/etc/verification/settings.json"
    assert command[command.index("--api-key-file") + 1] == "/mnt/secrets/verification/api-key"
    assert command[command.index("--namespace") + 1] == "inference"
    assert command[command.index("--selector") + 1] == "app.kubernetes.io/name=triton"
    parser = argparse.ArgumentParser()
    verify_command.register(parser.add_subparsers())
    parsed = parser.parse_args(command[1:])
    assert parsed.settings_file is not None and parsed.stack == "prod"
    # The Job's name follows what it verifies: a new image is a new Job, so every rollout is verified.
    other = _job(run(run_components, image_version="sha256:" + "c" * 64))
    assert other.inputs["metadata"]["name"] != job.inputs["metadata"]["name"]


def test_with_a_canary_the_job_posts_its_decisions_as_events_on_itself(run_components):
    resources = run(run_components, canary=True)
    job = _job(resources)
    command = job.inputs["spec"]["template"]["spec"]["containers"][0]["command"]
    assert command[command.index("--event-job") + 1] == job.inputs["metadata"]["name"]
    (role,) = by_type(resources, "kubernetes:rbac.authorization.k8s.io/v1:Role")
    assert role.inputs["rules"][-1] == {"apiGroups": [""], "resources": ["events"], "verbs": ["create"]}
    parser = argparse.ArgumentParser()
    verify_command.register(parser.add_subparsers())
    assert parser.parse_args(command[1:]).event_job == job.inputs["metadata"]["name"]
    # Without one, no Event rights and no flag.
    plain = _job(run(run_components))
    assert "--event-job" not in plain.inputs["spec"]["template"]["spec"]["containers"][0]["command"]


def test_create_timeout_covers_the_deadline_and_the_pod_start():
    assert create_timeout_seconds(args(None)) == 1800 + START_ALLOWANCE_SECONDS


def test_hardened_on_system_nodes_with_one_key_of_its_own(run_components):
    resources = run(run_components)
    pod = _job(resources).inputs["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == "verification" and pod["restartPolicy"] == "Never"
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    container = pod["containers"][0]
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert container["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    assert container["resources"]["requests"] == container["resources"]["limits"]
    terms = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert terms == [{"matchExpressions": [{"key": "node-role", "operator": "In", "values": ["system"]}]}]
    assert "tolerations" not in pod
    assert not any("KEY" in e["name"].upper() for e in container["env"])
    (csi,) = [v for v in pod["volumes"] if "csi" in v]
    assert csi["csi"]["volumeAttributes"] == {"secretProviderClass": "verification-secrets"}
    (spc,) = by_type(resources, "kubernetes:secrets-store.csi.x-k8s.io/v1:SecretProviderClass")
    assert ARN in spc.inputs["spec"]["parameters"]["objects"]
    assert spc.inputs["spec"]["parameters"]["objects"].count("objectName") == 1
    (read,) = by_type(resources, "aws:iam/rolePolicy:RolePolicy")
    assert ARN in read.inputs["policy"]
    (role,) = by_type(resources, "kubernetes:rbac.authorization.k8s.io/v1:Role")
    assert role.inputs["rules"] == [
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]},
        {"apiGroups": [""], "resources": ["pods/log"], "verbs": ["get"]},
    ]
    (policy,) = by_type(resources, "kubernetes:networking.k8s.io/v1:NetworkPolicy")
    spec = policy.inputs["spec"]
    assert spec["ingress"] == [] and spec["policyTypes"] == ["Ingress", "Egress"]
    ports = sorted({p["port"] for rule in spec["egress"] for p in rule["ports"]})
    assert ports == [53, 443, 9090]
    validate_builtin(resources)


def test_in_cluster_target_gets_admitted_to_triton_and_no_key_without_auth(run_components):
    target = InClusterTarget(pod_labels={"app.kubernetes.io/name": "triton"}, port=8000)
    resources = run(
        run_components,
        url="http://triton.inference.svc.cluster.local:8000",
        in_cluster=target,
        api_key_secret_arn=None,
    )
    pod = _job(resources).inputs["spec"]["template"]["spec"]
    assert "--api-key-file" not in pod["containers"][0]["command"]
    assert not [v for v in pod["volumes"] if "csi" in v]
    assert by_type(resources, "kubernetes:secrets-store.csi.x-k8s.io/v1:SecretProviderClass") == []
    admit = [p for p in by_type(resources, "kubernetes:networking.k8s.io/v1:NetworkPolicy")
             if p.inputs["metadata"]["name"] == "verification-to-triton"]  # fmt: skip
    assert admit[0].inputs["spec"]["ingress"][0]["ports"] == [{"protocol": "TCP", "port": 8000}]


@pytest.mark.parametrize(
    ("override", "expected"),
    [
        ({"active_deadline_seconds": 10}, "active_deadline_seconds=10"),
        ({"ttl_seconds_after_finished": -1}, "ttl_seconds_after_finished=-1"),
        ({"url": "http://api.example.com"}, "through the edge the Job speaks TLS"),
    ],
)
def test_unbounded_or_plain_text_jobs_are_refused(override, expected):
    with pytest.raises(ComponentArgsError, match=expected):
        VerificationJob("v", args(None, **override))
