"""The inference rollout of every shipped stack, as `make plan` builds it: dev serves Llama-3.1-8B FP8
on one L4 from S3, prod Llama-3.1-70B FP8 at TP 4 on H100 from S3 by digest, npu the Neuron image on
Inferentia2; all through the cluster's provider, into the storage area's namespace and account."""

from __future__ import annotations

import pytest
import yaml

from inference_platform import catalog
from inference_platform.catalog import models
from inference_platform.catalog.efa import EFA_ENV
from inference_platform.offline_plan.engine import run_program
from inference_platform.planners import placement as inference_placement
from inference_platform.settings.stack_files import load as load_stack
from tests.conftest import STACKS, by_type, one

DEPLOYMENT = "kubernetes:apps/v1:Deployment"
ECR = "aws:ecr/repository:Repository"
RELEASE = "kubernetes:helm.sh/v3:Release"
MY_POLICIES = ("workloads-hardened-containers", "workloads-resources-set", "workloads-no-host-access",
               "workloads-images-from-project-ecr", "inference-namespaces-network-policy", "ecr-immutable-scanned")  # fmt: skip


def server(resources):
    """The inference rollout's Deployment (the edge's credential sync is another one)."""
    (deployment,) = [r for r in by_type(resources, DEPLOYMENT) if r.name == "inference-deployment"]
    spec = deployment.inputs["spec"]
    (container,) = spec["template"]["spec"]["containers"]
    return deployment, spec, container


@pytest.mark.parametrize("stack", STACKS)
def test_every_stack_rolls_out_one_deployment_into_the_storage_namespace(stack_plan, stack):
    plan = stack_plan(stack)
    resources = plan.run.resources
    deployment, spec, _ = server(resources)
    assert deployment.inputs["metadata"]["namespace"] == "inference"
    pod = spec["template"]["spec"]
    assert pod["serviceAccountName"] == "triton"  # the storage area's account, bound to the read-only role
    # Reused, not duplicated: one namespace, one service account named triton.
    names = [r.inputs["metadata"]["name"] for r in by_type(resources, "kubernetes:core/v1:Namespace")]
    assert names.count("inference") == 1
    accounts = [r for r in by_type(resources, "kubernetes:core/v1:ServiceAccount")
                if r.inputs["metadata"]["name"] == "triton"]  # fmt: skip
    assert len(accounts) == 1
    (k8s_provider,) = by_type(resources, "pulumi:providers:kubernetes")
    mine = [r for r in resources if r.custom and r.parent and "InferenceService::inference" in r.parent]
    assert len(mine) >= 6 and all(r.provider == k8s_provider.urn for r in mine)
    assert [v for v in plan.violations if v.policy in MY_POLICIES] == []
    outputs = plan.run.outputs
    assert outputs["inference"]["workload"] == "Deployment/triton" and outputs["imageRepository"]["url"]


@pytest.mark.parametrize("stack", STACKS)
def test_the_image_comes_from_the_stacks_immutable_ecr_repository(stack_plan, stack):
    resources = stack_plan(stack).run.resources
    # The serving image's repository (the batch lane, where on, has its own: tests/components/batch).
    (repo,) = [r for r in by_type(resources, ECR) if r.name == "image-repository-repository"]
    settings = load_stack(stack)
    assert repo.inputs["name"] == f"inference-platform-{stack}/{settings.inference.image.repository}"
    assert repo.inputs["imageTagMutability"] == "IMMUTABLE"
    assert repo.inputs["encryptionConfigurations"][0]["kmsKey"] == one(resources, "keys-storage").outputs["arn"]
    _, _, container = server(resources)
    url = repo.outputs["repositoryUrl"]
    expected = f"{url}@{settings.inference.image.digest}" if settings.production else f"{url}:2026.11.2"
    assert container["image"] == expected
    assert repo.protect == settings.production


def test_dev_serves_llama_8b_fp8_on_one_l4_downloaded_by_init_containers(stack_plan):
    settings = load_stack("dev")
    assert (settings.serving.model, settings.serving.precision, settings.serving.tensor_parallel) == (
        "Llama-3.1-8B", "fp8", 1
    )  # fmt: skip
    assert {catalog.instance(t).accelerator_model for t in settings.node_pools.root["inference"].instance_types} == {
        "l4"
    }
    _, spec, container = server(stack_plan("dev").run.resources)
    limits = container["resources"]["limits"]
    assert limits["nvidia.com/gpu"] == "1" and "vpc.amazonaws.com/efa" not in limits
    init = spec["template"]["spec"]["initContainers"]
    assert [c["name"] for c in init] == ["fetch-engine", "fetch-tokenizer"]
    assert init[0]["command"][:3] == ["inferctl", "artifacts", "download"]
    assert init[0]["command"][3].startswith("s3://inference-platform-dev-models-")
    assert init[0]["command"][3].endswith("/models/llama-3.1-8b-instruct/fp8-tp1-sm89/2026-11-30/")
    assert not [v for v in spec["template"]["spec"]["volumes"] if "persistentVolumeClaim" in v]
    assert not [m for m in container["volumeMounts"] if m["name"] == "api-keys"]  # dev runs without auth


def test_prod_serves_llama_70b_fp8_at_tp4_on_h100_with_efa_from_s3_in_three_replicas(stack_plan):
    settings = load_stack("prod")
    serving = settings.serving
    assert (serving.model, serving.precision, serving.tensor_parallel) == ("Llama-3.1-70B", "fp8", 4)
    # TP 4 holds the configured batch at full length; twice that batch would need TP 8 on p5.
    shape = ("Llama-3.1-70B", "fp8", "p5.48xlarge", 0.0, serving.max_seq_len)
    assert (serving.max_batch_size, serving.max_seq_len) == (64, 16384)
    assert models.min_tensor_parallel(*shape, serving.max_batch_size, "fp8") == 4
    assert models.min_tensor_parallel(*shape, 2 * serving.max_batch_size, "fp8") == 8
    resources = stack_plan("prod").run.resources
    _, spec, container = server(resources)
    assert spec["replicas"] == 3 >= 2 and spec["strategy"]["rollingUpdate"]["maxUnavailable"] == 0
    limits = container["resources"]["limits"]
    assert limits["nvidia.com/gpu"] == "4" and limits["vpc.amazonaws.com/efa"] == "16"
    assert container["resources"]["requests"] == limits
    pod = spec["template"]["spec"]
    zone = next(c for c in pod["topologySpreadConstraints"] if c["topologyKey"] == "topology.kubernetes.io/zone")
    assert zone["whenUnsatisfiable"] == "DoNotSchedule" and zone["maxSkew"] == 1
    assert stack_plan("prod").run.outputs["inference"]["zones"] == ["us-east-1a", "us-east-1b"]  # 2 + 1 replicas
    # Weights from S3 at 32 ranged GETs each (coldStart.downloadConcurrency, issue 31): no FSx claim mounted.
    assert [c["name"] for c in pod["initContainers"]] == ["fetch-engine", "fetch-tokenizer"]
    assert all(c["command"][c["command"].index("--concurrency") + 1] == "32" for c in pod["initContainers"])
    assert not [v for v in pod["volumes"] if v["name"] == "model-cache"]
    # Keys are checked at the gateway: Triton mounts none and its role reads no secret.
    assert not [v for v in pod["volumes"] if v["name"] == "api-keys"]
    assert not settings.serving.auth.enabled and settings.edge.auth.enabled
    assert not [r for r in resources if r.name == "inference-secrets-read"]


@pytest.mark.parametrize("stack", ["prod", "npu"])
def test_a_managed_pools_minimum_holds_the_replicas_and_its_maximum_the_surge(stack_plan, stack):
    """Managed node groups start at minSize and the cluster autoscaler grows them to maxSize: the replicas
    must run without waiting for it, and a rollout's surge must fit at the maximum (zones x per zone)."""
    settings = load_stack(stack)
    pool = settings.node_pools.root[settings.serving.node_pool]
    zones = stack_plan(stack).run.outputs["nodePools"][settings.serving.node_pool]["zones"]
    fit = inference_placement.pool_fit(pool.instance_types, settings.serving.ranks_per_node)
    shards = pool.shard_count(zones)
    at_min = inference_placement.replica_slots(fit, max_size=pool.min_size, shards=shards)
    at_max = inference_placement.replica_slots(fit, max_size=pool.max_size, shards=shards)
    replicas = settings.inference.replicas
    assert at_min >= replicas and at_max >= replicas + settings.inference.rollout.max_surge
    assert len(zones) >= 2  # production replicas run in two zones or more


def test_npu_serves_the_neuron_image_on_inferentia2_devices_with_the_neuron_scheduler(stack_plan):
    resources = stack_plan("npu").run.resources
    _, spec, container = server(resources)
    assert "/inference-platform-npu/inference-neuron@sha256:" in container["image"]
    assert container["resources"]["limits"]["aws.amazon.com/neuron"] == "4"  # TP 8 = 8 NeuronCores
    pod = spec["template"]["spec"]
    assert pod["schedulerName"] == "my-scheduler"
    assert pod["tolerations"] == [{"key": "aws.amazon.com/neuron", "operator": "Exists", "effect": "NoSchedule"}]
    assert any(e["name"] == "NEURON_COMPILE_CACHE_URL" for e in container["env"])
    assert spec["replicas"] == 2
    assert "nvidia.com/gpu" not in str(container["resources"])


@pytest.mark.parametrize("stack", STACKS)
def test_network_policy_admits_exactly_the_gateway_and_monitoring(stack_plan, stack):
    """Every shipped stack has an edge (edge.domain): no CIDR reaches Triton directly, only the gateway's
    Envoy pods (the edge's own policy, tests/infra/test_edge_stacks.py) and the monitoring namespace."""
    resources = stack_plan(stack).run.resources
    policy = one(resources, "inference-network-policy").inputs["spec"]
    assert not [peer for rule in policy["ingress"] for peer in rule["from"] if "ipBlock" in peer]
    assert policy["ingress"][0]["from"][0]["namespaceSelector"]["matchLabels"] == {
        "kubernetes.io/metadata.name": "monitoring"
    }
    gateway = one(resources, "edge-gateway-inference-ingress").inputs["spec"]
    assert gateway["ingress"][0]["from"][0]["namespaceSelector"]["matchLabels"] == {
        "kubernetes.io/metadata.name": "envoy-gateway-system"
    }


@pytest.mark.parametrize("stack", STACKS)
def test_service_monitor_waits_for_the_pinned_prometheus_crds_and_no_lws_controller_is_installed(stack_plan, stack):
    resources = stack_plan(stack).run.resources
    crds = one(resources, "serving-controllers-prometheus-crds")
    assert (crds.inputs["chart"], crds.inputs["version"]) == ("prometheus-operator-crds", "31.0.1")
    assert crds.urn in one(resources, "inference-service-monitor").dependencies
    assert not [r for r in by_type(resources, RELEASE) if r.inputs["chart"].endswith("/lws")]  # no multi-node stack


@pytest.mark.parametrize("stack", STACKS)
def test_drain_covers_prestop_and_tritons_exit_timeout(stack_plan, stack):
    settings = load_stack(stack)
    _, spec, container = server(stack_plan(stack).run.resources)
    pre_stop = container["lifecycle"]["preStop"]["sleep"]["seconds"]
    grace = spec["template"]["spec"]["terminationGracePeriodSeconds"]
    assert grace >= pre_stop + settings.serving.exit_timeout_seconds
    startup = container["startupProbe"]
    assert startup["periodSeconds"] * startup["failureThreshold"] >= settings.inference.probes.startup_seconds


def test_a_stack_without_an_image_has_the_repository_only(tmp_path, repo):
    doc = yaml.safe_load((repo / "stacks" / "Pulumi.dev.yaml").read_text())
    doc["config"]["inference-platform:inference"] = {"replicas": 1}
    stack_file = tmp_path / "Pulumi.dev-bootstrap.yaml"
    stack_file.write_text(yaml.safe_dump(doc))
    run = run_program(repo, "dev", stack_file=stack_file)
    assert len(by_type(run.resources, ECR)) == 1
    assert not [r for r in run.resources if "InferenceService" in r.type or r.type == DEPLOYMENT]
    assert any("no rollout" in line and "image repository is ready" in line for line in run.logs)


@pytest.mark.parametrize("stack", STACKS)
def test_no_stack_builds_an_engine(stack_plan, stack):
    """The LLM API loads the checkpoint as it is (issue 20): the only Jobs left are the verification's."""
    jobs = by_type(stack_plan(stack).run.resources, "kubernetes:batch/v1:Job")
    assert [j.urn for j in jobs if "inference:verification:" not in j.urn] == []


@pytest.mark.parametrize("stack", STACKS)
def test_only_pods_with_efa_interfaces_get_the_nccl_ofi_environment(stack_plan, stack):
    _, _, container = server(stack_plan(stack).run.resources)
    env = {e["name"]: e.get("value") for e in container["env"]}
    efa_env = {k: env[k] for k, _ in EFA_ENV if k in env}
    if "vpc.amazonaws.com/efa" in container["resources"]["limits"]:
        assert efa_env == dict(EFA_ENV)
    else:
        assert efa_env == {}
