"""The inference rollout component: a Deployment (one node per replica) or a LeaderWorkerSet (several),
with its settings ConfigMap, Service, PodDisruptionBudget, NetworkPolicy and ServiceMonitor."""

from __future__ import annotations

import dataclasses
import re

import pulumi
import pulumi_kubernetes as k8s
import pytest

from inference_platform.catalog import server_metrics
from inference_platform.catalog.server_metrics import RELAYED_ENGINE_FAMILIES
from inference_platform.components.common.errors import ComponentArgsError
from inference_platform.components.serving.inference_service import (
    RELAYED_FAMILIES,
    Exposure,
    InferenceService,
    InferenceServiceArgs,
    rollout_timeout_seconds,
)
from inference_platform.components.serving.pod import ModelSource, Placement, Resources, SecretMount
from inference_platform.components.serving.serving_config import ServingDocument, settings_file
from inference_platform.offline_plan.manifests import manifest
from tests.components.storage.test_fsx_csi import provider
from tests.conftest import by_type, one

SERVING = ServingDocument({"model": "Llama-3.1-8B", "precision": "fp8"})
SELECTOR = {"app.kubernetes.io/name": "triton", "app.kubernetes.io/instance": "svc"}


def service_args(k8s_provider, **overrides) -> InferenceServiceArgs:
    args = InferenceServiceArgs(
        k8s_provider=k8s_provider,
        namespace="inference",
        service_account="triton",
        image="123456789012.dkr.ecr.us-west-2.amazonaws.com/p/inference:2026.11.2",
        image_version="2026.11.2",
        serving_config=SERVING,
        model=ModelSource(kind="download", engine_uri="s3://b/models/e/v1/", tokenizer_uri="s3://b/models/t/v1/",
                          volume_gib=20),
        placement=Placement(pool="inference", accelerators=1),
        resources=Resources(cpu=3, memory_gib=12),
        region="us-west-2",
        exposure=Exposure(load_balancer_cidrs=["10.0.192.0/24"]),
    )  # fmt: skip
    return dataclasses.replace(args, **overrides)


def run(run_components, **overrides):
    def program():
        crds = k8s.helm.v3.Release("crds", chart="prometheus-operator-crds", version="31.0.1")
        InferenceService("svc", service_args(provider(), depends_on=[crds], **overrides))

    return run_components(program).resources


def test_a_single_node_model_is_a_deployment_that_surges_and_waits_for_model_loads(run_components):
    resources = run(run_components, replicas=3)
    (deployment,) = by_type(resources, "kubernetes:apps/v1:Deployment")
    spec = deployment.inputs["spec"]
    assert spec["replicas"] == 3 and spec["selector"] == {"matchLabels": SELECTOR}
    assert spec["strategy"]["rollingUpdate"] == {"maxSurge": 1, "maxUnavailable": 0}
    assert spec["progressDeadlineSeconds"] >= 1800
    timeout = int(deployment.inputs["metadata"]["annotations"]["pulumi.com/timeoutSeconds"])
    assert timeout == 3 * (1800 + 600)
    template = spec["template"]
    assert template["metadata"]["labels"]["app.kubernetes.io/component"] == "inference-server"
    assert template["spec"]["serviceAccountName"] == "triton"
    assert not by_type(resources, "kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet")


def test_every_object_waits_for_the_namespace_resources_it_is_given(run_components):
    def program():
        namespace = k8s.core.v1.Namespace("ns", metadata={"name": "inference"})
        account = k8s.core.v1.ServiceAccount("sa", metadata={"name": "triton", "namespace": "inference"})
        InferenceService("svc", service_args(provider(), namespace_resources=[namespace, account]))

    resources = run_components(program).resources
    wanted = {one(resources, "ns").urn, one(resources, "sa").urn}
    mine = [r for r in resources if r.parent and r.parent.endswith("::svc")]
    assert len(mine) >= 5 and all(wanted <= set(r.dependencies) for r in mine)
    assert not one(run(run_components), "svc-deployment").dependencies  # nothing given, nothing waited for


def test_settings_configmap_is_immutable_and_named_by_its_content(run_components):
    first = by_type(run(run_components), "kubernetes:core/v1:ConfigMap")
    changed = by_type(
        run(run_components, serving_config=ServingDocument({"model": "Llama-3.1-8B", "precision": "bf16"})),
        "kubernetes:core/v1:ConfigMap",
    )
    (a,), (b,) = first, changed
    assert a.inputs["immutable"] is True and a.inputs["data"] == {"serving.json": settings_file(SERVING)}
    assert a.inputs["metadata"]["name"].startswith("triton-serving-")
    assert a.inputs["metadata"]["name"] != b.inputs["metadata"]["name"]  # a change rolls the pods


def test_service_pdb_and_service_monitor(run_components):
    resources = run(run_components)
    service = one(resources, "svc-service").inputs["spec"]
    assert service["selector"] == SELECTOR and service["type"] == "ClusterIP"
    assert [(p["name"], int(p["port"])) for p in service["ports"]] == [
        ("openai", 9000),
        ("http", 8000),
        ("grpc", 8001),
        ("metrics", 8002),
    ]
    pdb = one(resources, "svc-pdb").inputs["spec"]
    assert pdb["maxUnavailable"] == 1 and pdb["selector"] == {"matchLabels": SELECTOR}
    monitor = one(resources, "svc-service-monitor")
    assert monitor.type == "kubernetes:monitoring.coreos.com/v1:ServiceMonitor"
    # Triton's metrics port, and the OpenAI server's /metrics (the request histograms the rules read).
    assert monitor.inputs["spec"]["endpoints"] == [
        {"port": "metrics", "path": "/metrics", "interval": "15s", "scrapeTimeout": "10s"},
        {"port": "openai", "path": "/metrics", "interval": "15s", "scrapeTimeout": "10s",
         "metricRelabelings": [{"sourceLabels": ["__name__"], "regex": RELAYED_FAMILIES, "action": "drop"}]},
    ]  # fmt: skip
    # Every family the server relays is dropped there (Prometheus anchors the regex), and nothing else of its own.
    for family in RELAYED_ENGINE_FAMILIES:
        assert re.fullmatch(RELAYED_FAMILIES, family), family
    assert not re.fullmatch(RELAYED_FAMILIES, server_metrics.RUNNING)
    crds = one(resources, "crds")
    assert crds.urn in monitor.dependencies  # the CRD exists before the ServiceMonitor applies


def test_network_policy_admits_only_load_balancers_and_monitoring(run_components):
    policy = one(run(run_components), "svc-network-policy").inputs["spec"]
    assert policy["policyTypes"] == ["Ingress"] and policy["podSelector"] == {"matchLabels": SELECTOR}
    lb, metrics = policy["ingress"]
    assert lb["from"] == [{"ipBlock": {"cidr": "10.0.192.0/24"}}]
    assert [int(p["port"]) for p in lb["ports"]] == [9000]  # the OpenAI server only; Triton stays pod-internal
    assert metrics["from"] == [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}]
    assert [int(p["port"]) for p in metrics["ports"]] == [8002, 9000]  # Triton's metrics, the server's /metrics


def test_without_load_balancer_cidrs_or_service_monitor(run_components):
    resources = run(run_components, exposure=Exposure(load_balancer_cidrs=[], service_monitor=False))
    (only,) = one(resources, "svc-network-policy").inputs["spec"]["ingress"]
    assert int(only["ports"][0]["port"]) == 8002
    assert not by_type(resources, "kubernetes:monitoring.coreos.com/v1:ServiceMonitor")


def test_a_multi_node_model_is_a_leader_worker_set_with_a_scoped_launch_role(run_components):
    resources = run(run_components, nodes=2, replicas=2, max_surge=1, placement=Placement(pool="p", accelerators=8))
    assert not by_type(resources, "kubernetes:apps/v1:Deployment")
    group = one(resources, "svc-group")
    assert group.type == "kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet"
    assert one(resources, "crds").urn in group.dependencies
    spec = group.inputs["spec"]
    assert spec["replicas"] == 2 and spec["leaderWorkerTemplate"]["size"] == 2
    role = one(resources, "svc-launcher-role").inputs
    assert role["rules"][1]["resourceNames"] == ["triton-0-1", "triton-1-1", "triton-2-1"]  # replicas + surge
    binding = one(resources, "svc-launcher-binding").inputs
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "triton", "namespace": "inference"}]
    service = one(resources, "svc-service").inputs["spec"]
    assert service["selector"]["leaderworkerset.sigs.k8s.io/worker-index"] == "0"  # leaders serve
    ingress = one(resources, "svc-network-policy").inputs["spec"]["ingress"]
    assert ingress[-1] == {"from": [{"podSelector": {"matchLabels": SELECTOR}}]}


def test_every_object_is_parented_uses_the_provider_and_renders(run_components):
    resources = run(run_components, secrets=SecretMount(class_name="triton-secrets", mount_dir="/mnt/secrets/x"))
    (k8s_provider,) = by_type(resources, "pulumi:providers:kubernetes")
    mine = [r for r in resources if r.custom and r.name.startswith("svc-")]
    assert len(mine) == 6
    for resource in mine:
        assert resource.provider == k8s_provider.urn and resource.parent.endswith("InferenceService::svc")
        doc = manifest(resource)
        assert doc["metadata"]["namespace"] == "inference" and doc["metadata"]["name"]


def test_bad_arguments_are_named_together():
    with pytest.raises(ComponentArgsError) as err:
        InferenceService(
            "svc",
            service_args(
                pulumi.ProviderResource.__new__(pulumi.ProviderResource),
                namespace="Inference",
                max_surge=0,
                max_unavailable=0,
                pdb_max_unavailable=0,
                shared_memory_gib=12,
                model=ModelSource(kind="fsx", engine_uri="s3://b/e/", tokenizer_uri="s3://b/t/", volume_gib=1),
            ),
        )
    message = str(err.value)
    for words in ("namespace='Inference'", "one must be > 0", "pdb_max_unavailable=0", "shared_memory_gib=12",
                  "fsx needs claim_name"):  # fmt: skip
        assert words in message


def test_rollout_timeout_counts_batches():
    args = service_args(None, replicas=4, max_surge=2)
    assert rollout_timeout_seconds(args) == 2 * (1800 + 600)
    assert rollout_timeout_seconds(dataclasses.replace(args, max_surge=0, max_unavailable=1)) == 4 * 2400
