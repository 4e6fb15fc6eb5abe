"""workloads-hardened-containers, workloads-resources-set, workloads-no-host-access,
workloads-images-from-project-ecr, inference-namespaces-network-policy, ecr-immutable-scanned:
passing and failing fixtures, on the rollout's own objects and on hand-made bad ones."""

from __future__ import annotations

import dataclasses
import json

import pulumi_aws as aws
import pulumi_kubernetes as k8s
import pytest

from inference_platform.components.compute.accelerator_software import neuron_monitor_spec
from inference_platform.components.serving.image_repository import ImageRepository, ImageRepositoryArgs
from inference_platform.components.serving.inference_service import InferenceService
from inference_platform.components.serving.pod import Placement
from inference_platform.policies.rules.exemptions import entry
from tests.components.serving.test_inference_service import service_args
from tests.components.storage.test_fsx_csi import provider

KEY = "arn:aws:kms:us-west-2:123456789012:key/k"
DIGEST = "sha256:" + "b" * 64
LABELS = {"app": "x"}


def rollout(image_suffix=f"@{DIGEST}", nodes=1):
    """The real rollout with its image in the stack's repository."""

    def program():
        repo = ImageRepository("images", ImageRepositoryArgs(name="p-s/inference", kms_key_arn=KEY))
        k8s.core.v1.Namespace("ns", metadata={"name": "inference"})
        args = service_args(provider(), image=repo.repository_url.apply(lambda url: url + image_suffix), nodes=nodes)
        if nodes > 1:
            args = dataclasses.replace(args, placement=Placement(pool="p", accelerators=8))
        InferenceService("svc", args)

    return program


def deployment(name="bad", namespace="inference", container=None, **pod):
    base = {"name": "c", "image": "nginx:1.27",
            "resources": {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}},
            "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}}  # fmt: skip
    return k8s.apps.v1.Deployment(
        name,
        metadata={"name": name, "namespace": namespace},
        spec={
            "selector": {"matchLabels": LABELS},
            "template": {
                "metadata": {"labels": LABELS},
                "spec": {"containers": [{**base, **(container or {})}], **pod},
            },
        },
    )


def messages(found):
    return sorted(v.message for v in found)


# --- workloads-hardened-containers -----------------------------------------------------------------


def test_the_rollout_and_the_exempt_neuron_monitor_are_hardened(violations):
    assert violations(rollout(), "workloads-hardened-containers") == []
    assert violations(rollout(nodes=2), "workloads-hardened-containers") == []

    def monitor():
        k8s.apps.v1.DaemonSet("nm", metadata={"name": "neuron-monitor", "namespace": "kube-system"},
                              spec=neuron_monitor_spec())  # fmt: skip

    assert violations(monitor, "workloads-hardened-containers") == []
    # The exemption is the only reason it passes: without it, AWS's privileged monitor is reported.
    found = violations(monitor, "workloads-hardened-containers", {"privilegedExemptions": []})
    assert any("privileged" in m for m in messages(found))


def test_an_exempt_privileged_pod_must_not_hold_a_service_account_token(violations):
    def monitor_with_token():
        spec = neuron_monitor_spec()
        spec["template"]["spec"].pop("automountServiceAccountToken")  # AWS's manifest: the default token
        k8s.apps.v1.DaemonSet("nm", metadata={"name": "neuron-monitor", "namespace": "kube-system"}, spec=spec)

    assert messages(violations(monitor_with_token, "workloads-hardened-containers")) == [
        "spec.template.spec: exempt privileged containers/neuron-monitor runs with a service-account token"
    ]


def test_privileged_escalating_or_capable_containers_fail(violations):
    def program():
        deployment("priv", container={"securityContext": {"privileged": True, "allowPrivilegeEscalation": False,
                                                          "capabilities": {"drop": ["ALL"]}}})  # fmt: skip
        deployment("escalate", container={"securityContext": {"capabilities": {"drop": ["ALL"]}}})
        deployment("caps", container={"securityContext": {"allowPrivilegeEscalation": False,
                                                          "capabilities": {"drop": ["NET_RAW"], "add": ["SYS_ADMIN"]}}})  # fmt: skip
        # An exemption names one container of one workload: the same name elsewhere is not exempt.
        deployment("neuron-monitor", namespace="inference", container={"securityContext": {"privileged": True}})

    found = violations(program, "workloads-hardened-containers")
    by_name = {}
    for v in found:
        by_name.setdefault(v.urn.rsplit("::", 1)[1], []).append(v.message)
    assert by_name["priv"] == ["spec.template.spec.containers/c: privileged"]
    assert by_name["escalate"] == ["spec.template.spec.containers/c: allowPrivilegeEscalation is not false"]
    assert sorted(by_name["caps"]) == [
        "spec.template.spec.containers/c: adds capabilities SYS_ADMIN",
        "spec.template.spec.containers/c: capabilities.drop does not include ALL",
    ]
    assert len(by_name["neuron-monitor"]) == 3


# --- workloads-resources-set ------------------------------------------------------------------------


def test_the_rollout_sets_requests_and_limits_everywhere(violations):
    assert violations(rollout(), "workloads-resources-set") == []
    assert violations(rollout(nodes=2), "workloads-resources-set") == []


def test_containers_without_requests_or_limits_fail(violations):
    def program():
        deployment("open", container={"resources": {"requests": {"cpu": "1"}}})
        deployment("init", initContainers=[{"name": "i", "image": "busybox"}])

    found = messages(violations(program, "workloads-resources-set"))
    assert found == [
        "spec.template.spec.containers/c: no requests.memory, limits.cpu, limits.memory",
        "spec.template.spec.initContainers/i: no requests.cpu, requests.memory, limits.cpu, limits.memory",
    ]


# --- workloads-no-host-access -----------------------------------------------------------------------


def test_the_rollout_touches_nothing_of_the_host(violations):
    assert violations(rollout(), "workloads-no-host-access") == []


def test_host_paths_network_and_ports_fail_unless_the_workload_is_a_named_device_plugin(violations):
    def program():
        deployment("host", hostNetwork=True, hostPID=True,
                   volumes=[{"name": "sock", "hostPath": {"path": "/var/lib/kubelet/device-plugins"}}],
                   container={"ports": [{"containerPort": 80, "hostPort": 80}]})  # fmt: skip

    found = messages(violations(program, "workloads-no-host-access"))
    assert found == [
        "spec.template.spec.containers/c: hostPort 80",
        "spec.template.spec: hostNetwork",
        "spec.template.spec: hostPID",
        "spec.template.spec: volume sock is a hostPath",
    ]


PLUGIN_IMAGE = "public.ecr.aws/neuron/neuron-device-plugin:2.26.26.0"
PLUGIN = "DaemonSet/kube-system/neuron-device-plugin"


def _plugin(image: str = PLUGIN_IMAGE, host_path: str = "/var/lib/kubelet/device-plugins"):
    def program():
        k8s.apps.v1.DaemonSet(
            "plugin",
            metadata={"name": "neuron-device-plugin", "namespace": "kube-system"},
            spec={"selector": {"matchLabels": LABELS}, "template": {"metadata": {"labels": LABELS}, "spec": {
                "containers": [{"name": "p", "image": image}],
                "volumes": [{"name": "sock", "hostPath": {"path": host_path}}]}}},
        )  # fmt: skip

    return program


def test_a_host_access_exemption_is_tied_to_the_pinned_image_not_the_name(violations):
    """Issue 28: the name alone (or any image under it) no longer escapes; the pinned image does."""
    by_name = {"hostAccessExemptions": [PLUGIN]}
    pinned = {"hostAccessExemptions": [entry(PLUGIN, PLUGIN_IMAGE)]}
    assert len(violations(_plugin(), "workloads-no-host-access")) == 1  # no typed plugin is exempt by default
    assert len(violations(_plugin(), "workloads-no-host-access", by_name)) == 1
    assert violations(_plugin(), "workloads-no-host-access", pinned) == []
    assert violations(_plugin(PLUGIN_IMAGE + "@sha256:" + "a" * 64), "workloads-no-host-access", pinned) == []
    for impostor in ("attacker/neuron-device-plugin:2.26.26.0", "public.ecr.aws/neuron/neuron-device-plugin:latest",
                     "public.ecr.aws/neuron/neuron-device-plugin", PLUGIN_IMAGE + "-evil"):  # fmt: skip
        assert len(violations(_plugin(impostor), "workloads-no-host-access", pinned)) == 1, impostor
    # An entry pinning a digest takes only that digest; one naming a release only that chart's objects.
    digest = {"hostAccessExemptions": [entry(PLUGIN, PLUGIN_IMAGE + "@sha256:" + "b" * 64)]}
    assert len(violations(_plugin(PLUGIN_IMAGE + "@sha256:" + "a" * 64), "workloads-no-host-access", digest)) == 1
    release = {"hostAccessExemptions": [entry(PLUGIN, PLUGIN_IMAGE, release="neuron")]}
    assert len(violations(_plugin(), "workloads-no-host-access", release)) == 1  # declared beside, not by the chart


@pytest.mark.parametrize("path", ["/", "//", "/.", "/etc/..", "/var/lib/kubelet", "/run/containerd/containerd.sock",
                                  "/proc", "/etc/"])  # fmt: skip
def test_a_host_path_of_the_node_root_is_flagged_whatever_the_exemption(violations, path):
    pinned = {"hostAccessExemptions": [entry(PLUGIN, PLUGIN_IMAGE)]}
    found = messages(violations(_plugin(host_path=path), "workloads-no-host-access", pinned))
    assert len(found) == 1 and "no exemption covers it" in found[0], found


def test_exemptions_of_privilege_and_root_follow_the_image(violations):
    def monitor(image: str):
        def program():
            spec = neuron_monitor_spec()
            spec["template"]["spec"]["containers"][0]["image"] = image
            k8s.apps.v1.DaemonSet("nm", metadata={"name": "neuron-monitor", "namespace": "kube-system"}, spec=spec)

        return program

    from inference_platform.catalog.charts import NEURON_MONITOR_IMAGE

    assert violations(monitor(NEURON_MONITOR_IMAGE), "workloads-hardened-containers") == []
    assert violations(monitor(NEURON_MONITOR_IMAGE), "workloads-non-root") == []
    for impostor in ("attacker.example.com/miner:1.0", NEURON_MONITOR_IMAGE.replace("1.10.0", "latest")):
        assert violations(monitor(impostor), "workloads-hardened-containers"), impostor
        assert violations(monitor(impostor), "workloads-non-root"), impostor


# --- workloads-images-from-project-ecr --------------------------------------------------------------


def test_the_rollout_runs_the_stack_image_by_digest(violations):
    assert violations(rollout(), "workloads-images-from-project-ecr") == []
    assert violations(rollout(nodes=2), "workloads-images-from-project-ecr") == []
    # A tag is fine where the stack does not require digests (dev).
    config = {"namespaces": ["inference"], "requireDigest": False}
    assert violations(rollout(":2026.11.2"), "workloads-images-from-project-ecr", config) == []


def test_foreign_images_and_tags_where_digests_are_required_fail(violations):
    found = messages(violations(rollout(":2026.11.2"), "workloads-images-from-project-ecr"))
    assert found and all("is not referenced by digest" in m for m in found)
    assert len(found) == 3  # two init containers and the server

    def foreign():
        ImageRepository("images", ImageRepositoryArgs(name="p-s/inference", kms_key_arn=KEY))
        deployment("public", container={"image": f"nvcr.io/nvidia/tritonserver@{DIGEST}"})
        deployment("elsewhere", namespace="tools")  # outside the inference namespaces: not judged

    (found,) = violations(foreign, "workloads-images-from-project-ecr")
    assert "nvcr.io/nvidia/tritonserver" in found.message and "not from this stack's ECR" in found.message


# --- inference-namespaces-network-policy -------------------------------------------------------------


def test_the_rollout_brings_its_network_policy(violations):
    assert violations(rollout(), "inference-namespaces-network-policy") == []


def test_inference_namespaces_without_an_ingress_policy_fail(violations):
    def program():
        k8s.core.v1.Namespace("ns", metadata={"name": "inference"})
        deployment("gpu", namespace="batch",
                   container={"resources": {"limits": {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "1"}}})  # fmt: skip
        k8s.networking.v1.NetworkPolicy("egress-only", metadata={"name": "e", "namespace": "batch"},
                                        spec={"podSelector": {}, "policyTypes": ["Egress"]})  # fmt: skip

    found = messages(violations(program, "inference-namespaces-network-policy"))
    assert found == [
        "inference namespace 'batch' has no NetworkPolicy limiting ingress",
        "inference namespace 'inference' has no NetworkPolicy limiting ingress",
    ]


def cluster_with_cni(configuration=None):
    """An EKS cluster and its vpc-cni add-on configured with ``configuration`` (None: no add-on)."""
    aws.eks.Cluster("eks", role_arn="arn:aws:iam::123456789012:role/eks", vpc_config={"subnet_ids": ["s-1", "s-2"]})
    if configuration is not None:
        aws.eks.Addon("cni", cluster_name="c", addon_name="vpc-cni", configuration_values=json.dumps(configuration))


def test_the_rollout_on_a_cluster_whose_vpc_cni_enforces_policies_passes(violations):
    def program():
        cluster_with_cni({"enableNetworkPolicy": "true"})
        rollout()()

    assert violations(program, "inference-namespaces-network-policy") == []


def test_policies_nobody_enforces_fail(violations):
    def unconfigured():
        cluster_with_cni({"env": {"ENABLE_PREFIX_DELEGATION": "true"}})
        rollout()()

    (found,) = violations(unconfigured, "inference-namespaces-network-policy")
    assert "enableNetworkPolicy" in found.message and found.urn.endswith("::cni")

    def without_addon():
        cluster_with_cni(None)
        rollout()()

    (found,) = violations(without_addon, "inference-namespaces-network-policy")
    assert "no vpc-cni add-on" in found.message
    config = {"requireVpcCniEnforcement": False}
    assert violations(without_addon, "inference-namespaces-network-policy", config) == []


# --- ecr-immutable-scanned --------------------------------------------------------------------------


def test_our_repository_is_immutable_and_scanned(violations):
    def program():
        ImageRepository("images", ImageRepositoryArgs(name="p-s/inference", kms_key_arn=KEY))

    assert violations(program, "ecr-immutable-scanned") == []


def test_ecr_defaults_are_mutable_and_unscanned(violations):
    def program():
        aws.ecr.Repository("default")
        aws.ecr.Repository("unscanned", image_tag_mutability="IMMUTABLE")

    found = violations(program, "ecr-immutable-scanned")
    assert sorted((v.urn.rsplit("::", 1)[1], v.message.split(":")[0]) for v in found) == [
        ("default", "image tags are MUTABLE"),
        ("default", "scan on push is off"),
        ("unscanned", "scan on push is off"),
    ]
