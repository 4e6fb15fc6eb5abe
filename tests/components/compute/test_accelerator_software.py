"""Accelerator software only for the accelerators present, each on its own nodes."""

from __future__ import annotations

import pulumi_kubernetes as k8s
import pytest

from inference_platform.catalog import charts
from inference_platform.components.common.errors import ComponentArgsError
from inference_platform.components.compute.accelerator_software import AcceleratorSoftware, AcceleratorSoftwareArgs
from tests.conftest import by_type, one

RELEASE = "kubernetes:helm.sh/v3:Release"


def software(run_components, **flags):
    def program():
        AcceleratorSoftware("acc", AcceleratorSoftwareArgs(provider=k8s.Provider("k8s", kubeconfig="{}"), **flags))

    return run_components(program).resources


def test_nvidia_only_installs_the_gpu_operator_without_driver_and_toolkit(run_components):
    resources = software(run_components, nvidia=True)
    (release,) = by_type(resources, RELEASE)
    assert (release.inputs["chart"], release.inputs["version"]) == ("gpu-operator", charts.GPU_OPERATOR.version)
    assert release.inputs["repositoryOpts"] == {"repo": "https://helm.ngc.nvidia.com/nvidia"}
    values = release.inputs["values"]
    assert values["driver"] == {"enabled": False} and values["toolkit"] == {"enabled": False}
    assert values["dcgmExporter"]["enabled"] is True
    assert values["operator"]["nodeSelector"] == {"node-role": "system"}
    worker = values["node-feature-discovery"]["worker"]
    assert worker["nodeSelector"] == {"accelerator": "nvidia"}
    assert worker["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    assert not by_type(resources, "kubernetes:apps/v1:DaemonSet")


def test_neuron_only_installs_device_plugin_scheduler_and_monitor(run_components):
    resources = software(run_components, neuron=True)
    (release,) = by_type(resources, RELEASE)
    assert (release.inputs["chart"], release.inputs["version"]) == (charts.NEURON.chart, "1.10.0")
    values = release.inputs["values"]
    assert values["devicePlugin"]["nodeSelector"] == {"accelerator": "neuron"}
    assert values["devicePlugin"]["tolerations"][0]["key"] == "aws.amazon.com/neuron"
    assert values["scheduler"]["enabled"] is True and values["scheduler"]["nodeSelector"] == {"node-role": "system"}
    assert values["scheduler"]["customScheduler"]["nodeSelector"] == {"node-role": "system"}
    monitor = one(resources, "acc-neuron-monitor").inputs["spec"]["template"]["spec"]
    assert monitor["nodeSelector"] == {"accelerator": "neuron"}
    assert monitor["containers"][0]["image"] == charts.NEURON_MONITOR_IMAGE  # no digest given: the tag


DIGEST = "sha256:" + "ab" * 32


def test_neuron_monitor_is_pinned_probed_and_stripped_of_what_it_does_not_need(run_components):
    resources = software(run_components, neuron=True, neuron_monitor_digest=DIGEST, metrics_namespace="prom")
    pod = one(resources, "acc-neuron-monitor").inputs["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["image"] == f"{charts.NEURON_MONITOR_IMAGE}@{DIGEST}"
    assert pod["automountServiceAccountToken"] is False
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert not {"hostNetwork", "hostPID", "hostIPC", "volumes"} & pod.keys()
    assert container["livenessProbe"]["tcpSocket"] == {"port": "metrics"}
    assert container["readinessProbe"]["httpGet"] == {"path": "/metrics", "port": "metrics"}
    # Privileged as AWS ships it (it reads every /dev/neuron*); nothing else widened.
    assert container["securityContext"] == {"privileged": True}
    policy = one(resources, "acc-neuron-monitor-policy").inputs
    assert policy["metadata"]["namespace"] == "kube-system"
    spec = policy["spec"]
    assert spec["podSelector"] == {"matchLabels": {"app": "neuron-monitor"}}
    assert spec["policyTypes"] == ["Ingress", "Egress"] and spec["egress"] == []
    (rule,) = spec["ingress"]
    assert rule["from"] == [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "prom"}}}]
    assert rule["ports"] == [{"protocol": "TCP", "port": 8000}]


def test_a_malformed_neuron_monitor_digest_is_an_error():
    with pytest.raises(ComponentArgsError, match="is not sha256:<64 hex digits>"):
        AcceleratorSoftware("acc", AcceleratorSoftwareArgs(provider=None, neuron=True, neuron_monitor_digest="1.10.0"))


def test_efa_plugin_runs_on_efa_nodes_whatever_their_accelerator(run_components):
    (release,) = by_type(software(run_components, efa=True), RELEASE)
    assert release.inputs["values"]["nodeSelector"] == {"efa": "true"}
    assert {t["key"] for t in release.inputs["values"]["tolerations"]} == {"nvidia.com/gpu", "aws.amazon.com/neuron"}


def test_nothing_to_install_is_an_error():
    with pytest.raises(ComponentArgsError, match="nothing to install"):
        AcceleratorSoftware("acc", AcceleratorSoftwareArgs(provider=None))
