"""The engine-build Job: prepare on the serving pool with the read-write role, bounded and hardened."""

from __future__ import annotations

import dataclasses
import json

import kubernetes_validate
import pytest
from inference_platform.components.common.errors import ComponentArgsError
from inference_platform.components.compute.pool_profile import Taint
from inference_platform.components.serving.engine_build import EngineBuild, EngineBuildArgs
from inference_platform.components.serving.pod import Placement, Resources, SecretMount
from inference_platform.offline_plan.manifests import is_object, manifest

from tests.components.storage.test_fsx_csi import provider
from tests.conftest import by_type

SERVING = json.dumps({"model": "Llama-3.1-70B", "precision": "fp8", "tensorParallel": 4})


def args(k8s_provider, **overrides) -> EngineBuildArgs:
    base = EngineBuildArgs(
        k8s_provider=k8s_provider,
        namespace="model-sync",
        service_account="model-sync",
        image="123456789012.dkr.ecr.us-east-1.amazonaws.com/p/inference@sha256:" + "b" * 64,
        serving_config=SERVING,
        instance_type="p5.48xlarge",
        placement=Placement(pool="inference", taints=(Taint("nvidia.com/gpu", "true", "NoSchedule"),), accelerators=4),
        engine_uri="s3://b/models/engines/70b/v1/",
        tokenizer_uri="s3://b/models/tokenizers/70b/v1/",
        region="us-east-1",
        resources=Resources(cpu=48, memory_gib=512),
        secrets=SecretMount(class_name="model-sync-secrets", mount_dir="/mnt/secrets/model-sync"),
    )
    return dataclasses.replace(base, **overrides)


def run(run_components, **overrides):
    return run_components(lambda: EngineBuild("engine-build", args(provider(), **overrides))).resources


def test_the_job_runs_prepare_on_the_pool_it_serves_on(run_components):
    resources = run(run_components)
    (job,) = by_type(resources, "kubernetes:batch/v1:Job")
    spec = job.inputs["spec"]
    assert spec["backoffLimit"] == 1 and spec["activeDeadlineSeconds"] == 14400
    assert spec["ttlSecondsAfterFinished"] == 86400
    assert job.inputs["metadata"]["annotations"] == {"pulumi.com/skipAwait": "true"}
    pod = spec["template"]["spec"]
    (container,) = pod["containers"]
    assert container["command"][:2] == ["inferctl", "prepare"]
    command = container["command"]
    assert command[command.index("--instance-type") + 1] == "p5.48xlarge"
    assert command[command.index("--engine-uri") + 1] == "s3://b/models/engines/70b/v1/"
    assert "--force" not in command
    assert container["resources"]["requests"] == container["resources"]["limits"]
    assert container["resources"]["limits"]["nvidia.com/gpu"] == "4"
    terms = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert {e["key"]: e["values"] for e in terms[0]["matchExpressions"]} == {
        "node-pool": ["inference"],
        "node.kubernetes.io/instance-type": ["p5.48xlarge"],
    }
    assert pod["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    assert pod["serviceAccountName"] == "model-sync" and pod["restartPolicy"] == "Never"


def test_the_hf_token_is_a_mounted_file_never_a_value(run_components):
    resources = run(run_components)
    (job,) = by_type(resources, "kubernetes:batch/v1:Job")
    pod = job.inputs["spec"]["template"]["spec"]
    env = {e["name"]: e.get("value") for e in pod["containers"][0]["env"]}
    assert env["HF_TOKEN_PATH"] == "/mnt/secrets/model-sync/hf-token"
    assert "HF_TOKEN" not in env
    (csi,) = [v for v in pod["volumes"] if "csi" in v]
    assert csi["csi"]["volumeAttributes"] == {"secretProviderClass": "model-sync-secrets"}


def test_hardened_like_serving_and_no_ingress(run_components):
    resources = run(run_components, force=True)
    (job,) = by_type(resources, "kubernetes:batch/v1:Job")
    pod = job.inputs["spec"]["template"]["spec"]
    assert pod["automountServiceAccountToken"] is False
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    context = pod["containers"][0]["securityContext"]
    assert context["readOnlyRootFilesystem"] is True and context["capabilities"] == {"drop": ["ALL"]}
    assert "--force" in pod["containers"][0]["command"]
    (policy,) = by_type(resources, "kubernetes:networking.k8s.io/v1:NetworkPolicy")
    assert policy.inputs["spec"]["policyTypes"] == ["Ingress"] and policy.inputs["spec"]["ingress"] == []
    for r in resources:
        if is_object(r):
            kubernetes_validate.validate(manifest(r), "1.33", strict=True)


@pytest.mark.parametrize(
    ("override", "expected"),
    [
        ({"backoff_limit": 11}, "backoff_limit=11"),
        ({"active_deadline_seconds": 60}, "active_deadline_seconds=60"),
        ({"work_gib": 1}, "work_gib=1"),
    ],
)
def test_unbounded_builds_are_refused(run_components, override, expected):
    with pytest.raises(ComponentArgsError, match=expected):
        EngineBuild("b", args(None, **override))
