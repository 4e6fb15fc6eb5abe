"""The Triton pod as plain dicts: what the image contract and issue 5 §3 require of every pod."""

from __future__ import annotations

import dataclasses

import kubernetes_validate
import pytest

from inference_platform.catalog.pool_profile import Taint
from inference_platform.catalog.serving_contract import (
    OPENAI_HEALTH_PATH,
    OPENAI_LIVE_PATH,
    OPENAI_PORT,
    READINESS_DEADLINE_ENV,
)
from inference_platform.components.serving.pod import (
    STAGE_SCRIPT,
    STAGE_STREAMS,
    ModelSource,
    Placement,
    Probes,
    Resources,
    SecretMount,
    ServerPod,
    init_containers,
    pod_spec,
    quantity_cpu,
    quantity_gib,
    server_args,
    server_container,
)
from inference_platform.inference_image.defaults import GRPC_PORT, HTTP_PORT, LIVE_PATH, METRICS_PORT

SELECTOR = {"app.kubernetes.io/name": "triton", "app.kubernetes.io/instance": "inference"}


def make_pod(**changes) -> ServerPod:
    pod = ServerPod(
        image="123456789012.dkr.ecr.us-west-2.amazonaws.com/p/inference@sha256:" + "a" * 64,
        settings_config_map="triton-serving-0123456789",
        model=ModelSource(kind="download", engine_uri="s3://b/models/e/v1/", tokenizer_uri="s3://b/models/t/v1/",
                          volume_gib=20),
        placement=Placement(pool="inference", taints=(Taint("nvidia.com/gpu", "true"),), accelerators=1),
        resources=Resources(cpu=3, memory_gib=12),
        init_resources=Resources(cpu=1, memory_gib=2),
        shared_memory_gib=2,
        scratch_gib=10,
        region="us-west-2",
        selector=SELECTOR,
    )  # fmt: skip
    return dataclasses.replace(pod, **changes)


def deployment(spec):
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "triton"},
            "spec": {"selector": {"matchLabels": SELECTOR},
                     "template": {"metadata": {"labels": SELECTOR}, "spec": spec}}}  # fmt: skip


def all_containers(spec):
    return [*spec.get("initContainers", []), *spec["containers"]]


def test_quantities():
    assert (quantity_gib(12), quantity_gib(1.5), quantity_cpu(3), quantity_cpu(2.5)) == ("12Gi", "1536Mi", "3", "2500m")


def test_the_server_container_follows_the_image_contract():
    pod = make_pod()
    container = server_container(pod, args=server_args(pod))
    assert container["args"] == ["--settings", "/etc/inference/serving.json", "--engine-uri", "s3://b/models/e/v1/",
                                 "--tokenizer-uri", "s3://b/models/t/v1/"]  # fmt: skip
    assert "command" not in container  # the image's entrypoint (inferctl serve) runs
    assert [(p["name"], p["containerPort"]) for p in container["ports"]] == [
        ("openai", OPENAI_PORT), ("http", HTTP_PORT), ("grpc", GRPC_PORT), ("metrics", METRICS_PORT)
    ]  # fmt: skip
    # Ready = the OpenAI server's 1-token generation answers, within the probe timeout less a margin.
    assert container["readinessProbe"]["httpGet"] == {"path": OPENAI_HEALTH_PATH, "port": "openai"}
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env[READINESS_DEADLINE_ENV] == str(pod.probes.timeout_seconds - 1)
    # Triton's own live stays 200 with its model's process dead: liveness asks the model through the OpenAI server.
    assert container["livenessProbe"]["httpGet"] == {"path": OPENAI_LIVE_PATH, "port": "openai"}
    assert container["startupProbe"]["httpGet"]["path"] == LIVE_PATH
    startup = container["startupProbe"]
    assert startup["periodSeconds"] * startup["failureThreshold"] >= pod.probes.startup_seconds
    assert container["lifecycle"]["preStop"] == {"sleep": {"seconds": 15}}
    mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
    assert set(mounts) == {"/etc/inference", "/models", "/tmp", "/dev/shm"}
    assert mounts["/etc/inference"]["readOnly"] is True


def test_requests_equal_limits_with_accelerators_efa_and_ephemeral_storage():
    pod = make_pod(placement=Placement(pool="inference", accelerators=4, efa=16))
    resources = server_container(pod, args=[])["resources"]
    assert resources["requests"] == resources["limits"] == {
        "cpu": "3", "memory": "12Gi", "ephemeral-storage": "32Gi", "nvidia.com/gpu": "4", "vpc.amazonaws.com/efa": "16",
        "hugepages-2Mi": "5120Mi",  # AWS's EKS EFA guidance (catalog/efa.py)
    }  # fmt: skip
    assert "hugepages-2Mi" not in server_container(make_pod(), args=[])["resources"]["requests"]
    none = make_pod(placement=Placement(pool="inference", accelerators=4, efa=16, hugepages_2mi_mib=0))
    assert "hugepages-2Mi" not in server_container(none, args=[])["resources"]["limits"]
    spec = pod_spec(pod, [server_container(pod, args=[])], service_account="triton")
    for init in spec["initContainers"]:
        assert init["resources"]["requests"] == init["resources"]["limits"] == {"cpu": "1", "memory": "2Gi"}


def test_every_container_is_hardened_and_the_root_filesystem_read_only():
    pod = make_pod()
    spec = pod_spec(pod, [server_container(pod, args=[])], service_account="triton")
    assert spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert spec["securityContext"]["runAsNonRoot"] is True and spec["securityContext"]["runAsUser"] == 1000
    assert spec["automountServiceAccountToken"] is False
    for container in all_containers(spec):
        context = container["securityContext"]
        assert context["allowPrivilegeEscalation"] is False and context["privileged"] is False
        assert context["readOnlyRootFilesystem"] is True and context["capabilities"] == {"drop": ["ALL"]}


def test_writable_paths_are_sized_volumes_and_shm_lives_in_memory():
    volumes = {v["name"]: v for v in pod_spec(make_pod(), [], service_account="triton")["volumes"]}
    assert volumes["dshm"]["emptyDir"] == {"medium": "Memory", "sizeLimit": "2Gi"}
    assert volumes["models"]["emptyDir"] == {"sizeLimit": "20Gi"}
    assert volumes["scratch"]["emptyDir"] == {"sizeLimit": "10Gi"}
    assert volumes["settings"]["configMap"]["name"] == "triton-serving-0123456789"
    assert "model-cache" not in volumes and "api-keys" not in volumes


def test_download_source_fetches_both_artifacts_with_inferctl():
    spec = pod_spec(make_pod(), [], service_account="triton")
    commands = {c["name"]: c["command"] for c in spec["initContainers"]}
    assert commands == {
        "fetch-engine": ["inferctl", "artifacts", "download", "s3://b/models/e/v1/", "/models/engine", "--no-progress"],
        "fetch-tokenizer": ["inferctl", "artifacts", "download", "s3://b/models/t/v1/", "/models/tokenizer",
                            "--no-progress"],
    }  # fmt: skip


def test_fsx_source_stages_from_the_read_only_cache():
    model = ModelSource(kind="fsx", engine_uri="s3://b/models/e/v1/", tokenizer_uri="s3://b/models/t/v1/",
                        volume_gib=120, claim_name="models", engine_path="/models/e/v1/",
                        tokenizer_path="/models/t/v1/")  # fmt: skip
    spec = pod_spec(make_pod(model=model), [], service_account="triton")
    stage = {c["name"]: c for c in spec["initContainers"]}
    command = stage["stage-engine"]["command"]
    assert command[:2] == ["sh", "-c"] and command[3:] == ["stage", "/mnt/model-cache/models/e/v1/", "/models/engine",
                                                           str(STAGE_STREAMS)]  # fmt: skip
    assert STAGE_STREAMS > 1  # parallel: one cp -R stream could not fill FSx or the node's disk (issue 21)
    cache = [m for m in stage["stage-engine"]["volumeMounts"] if m["name"] == "model-cache"]
    assert cache == [{"name": "model-cache", "mountPath": "/mnt/model-cache", "readOnly": True}]
    volume = next(v for v in spec["volumes"] if v["name"] == "model-cache")
    assert volume["persistentVolumeClaim"] == {"claimName": "models", "readOnly": True}


def test_api_keys_come_from_the_secrets_csi_driver_only():
    pod = make_pod(secrets=SecretMount(class_name="triton-secrets", mount_dir="/mnt/secrets/inference"))
    container = server_container(pod, args=[])
    spec = pod_spec(pod, [container], service_account="triton")
    volume = next(v for v in spec["volumes"] if v["name"] == "api-keys")
    assert volume["csi"] == {"driver": "secrets-store.csi.k8s.io", "readOnly": True,
                             "volumeAttributes": {"secretProviderClass": "triton-secrets"}}  # fmt: skip
    assert {"name": "api-keys", "mountPath": "/mnt/secrets/inference", "readOnly": True} in container["volumeMounts"]
    assert not any("secretKeyRef" in str(e) for e in container["env"])


def test_scheduling_targets_the_pool_and_spreads_over_zones_and_nodes():
    pod = make_pod(placement=Placement(pool="small-models", taints=(Taint("nvidia.com/gpu", "true"),),
                                       zones="required", hosts="preferred", scheduler_name=None))  # fmt: skip
    spec = pod_spec(pod, [], service_account="triton", spread_label_keys=["pod-template-hash"])
    terms = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert terms == [{"matchExpressions": [{"key": "node-pool", "operator": "In", "values": ["small-models"]}]}]
    assert spec["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    spread = {c["topologyKey"]: c for c in spec["topologySpreadConstraints"]}
    assert spread["topology.kubernetes.io/zone"]["whenUnsatisfiable"] == "DoNotSchedule"
    assert spread["kubernetes.io/hostname"]["whenUnsatisfiable"] == "ScheduleAnyway"
    assert all(c["labelSelector"] == {"matchLabels": SELECTOR} for c in spread.values())
    assert all(c["matchLabelKeys"] == ["pod-template-hash"] for c in spread.values())
    # A lost zone's nodes carry the unreachable taint: they stop counting, so its replicas can move.
    assert all(c["maxSkew"] == 1 and c["nodeTaintsPolicy"] == "Honor" for c in spread.values())
    assert "schedulerName" not in spec


def test_neuron_pods_use_the_neuron_scheduler_and_cache_under_tmp():
    pod = make_pod(
        neuron=True,
        placement=Placement(pool="inference", resource_name="aws.amazon.com/neuron", accelerators=4,
                            scheduler_name="my-scheduler"),
    )  # fmt: skip
    container = server_container(pod, args=[])
    spec = pod_spec(pod, [container], service_account="triton")
    assert spec["schedulerName"] == "my-scheduler"
    assert container["resources"]["limits"]["aws.amazon.com/neuron"] == "4"
    env = {e["name"]: e["value"] for e in container["env"]}
    assert env["NEURON_COMPILE_CACHE_URL"].startswith("/tmp/")
    assert all(v.startswith("/tmp/") for k, v in env.items() if k in ("HOME", "XDG_CACHE_HOME", "HF_HOME"))


@pytest.mark.parametrize("version", ["1.33", "1.36"])
def test_a_full_pod_validates_strictly(version):
    pod = make_pod(secrets=SecretMount(class_name="triton-secrets", mount_dir="/mnt/secrets/inference"),
                   probes=Probes(startup_seconds=600))  # fmt: skip
    spec = pod_spec(pod, [server_container(pod, args=server_args(pod))], service_account="triton")
    kubernetes_validate.validate(deployment(spec), version, strict=True)


def test_fetch_init_containers_pin_the_manifests_they_download():
    unpinned = make_pod().model
    pinned = dataclasses.replace(unpinned, engine_manifest_sha256="e" * 64, tokenizer_manifest_sha256="t" * 64)
    commands = {c["name"]: c["command"] for c in init_containers(make_pod(model=pinned))}
    assert commands["fetch-engine"][-2:] == ["--manifest-sha256", "e" * 64]
    assert commands["fetch-tokenizer"][-2:] == ["--manifest-sha256", "t" * 64]
    plain = {c["name"]: c["command"] for c in init_containers(make_pod(model=unpinned))}
    assert "--manifest-sha256" not in plain["fetch-engine"]


def test_the_stage_script_copies_every_file_in_parallel_and_fails_on_a_failed_copy(tmp_path):
    """The FSx stage command, run here with this machine's sh, find, xargs and GNU cp."""
    import subprocess

    src = tmp_path / "cache" / "models" / "e" / "v1"
    for rel in ("rank0.engine", "rank1.engine", "config.json", "tokenizer/tokenizer.json", "a b/c'd.bin"):
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_bytes(rel.encode() * 1000)
    dest = tmp_path / "models" / "engine"
    subprocess.run(["sh", "-c", STAGE_SCRIPT, "stage", f"{src}/", str(dest), "3"], check=True)
    copied = sorted(p.relative_to(dest).as_posix() for p in dest.rglob("*") if p.is_file())
    assert copied == ["a b/c'd.bin", "config.json", "rank0.engine", "rank1.engine", "tokenizer/tokenizer.json"]
    assert (dest / "rank1.engine").read_bytes() == (src / "rank1.engine").read_bytes()
    blocked = tmp_path / "blocked"
    blocked.mkdir()
    (blocked / "tokenizer").write_text("a file where a directory must go")  # one copy fails, so must the script
    failed = subprocess.run(["sh", "-c", STAGE_SCRIPT, "stage", f"{src}/", str(blocked), "3"], capture_output=True)
    assert failed.returncode != 0
