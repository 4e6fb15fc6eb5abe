"""Device plugins and accelerator monitoring, installed only for the accelerators a stack has.

- NVIDIA: the GPU Operator with driver and container toolkit off (the EKS accelerated AMIs ship both);
  it brings the device plugin, GPU feature discovery and the DCGM exporter, and runs its operands
  only on nodes with NVIDIA GPUs (ai-on-eks, REFERENCE §4).
- Neuron: AWS's Neuron Helm chart (device plugin and scheduler extension) and neuron-monitor.
- EFA: the EFA device plugin, on nodes labelled ``efa=true`` (the pools that attach EFA interfaces).
Each runs where its devices are, by nodeSelector on the pool labels plus a toleration of the pool's
taint; controllers (the GPU operator itself, the Neuron scheduler extension) run on system nodes.
A stack without NVIDIA pools installs no NVIDIA software and one without Neuron pools none of AWS's.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components import catalog
from components.catalog import charts
from components.common.errors import raise_if
from components.compute.pool_profile import LABEL_ACCELERATOR, LABEL_EFA, TAINT_KEYS

NVIDIA_NAMESPACE = "gpu-operator"
SYSTEM_NAMESPACE = "kube-system"
NEURON_MONITOR_PORT = 8000
NEURON_SCHEDULER_NAME = "my-scheduler"
"""``schedulerName`` of pods that want topology-aware NeuronCore placement (the chart's custom scheduler)."""


def toleration(vendor: str) -> dict[str, str]:
    return {"key": TAINT_KEYS[vendor], "operator": "Exists", "effect": "NoSchedule"}


ALL_ACCELERATOR_TOLERATIONS = [toleration(catalog.VENDOR_NVIDIA), toleration(catalog.VENDOR_NEURON)]


@dataclass(frozen=True, kw_only=True)
class AcceleratorSoftwareArgs:
    provider: k8s.Provider
    """Required. The cluster's Kubernetes provider."""
    nvidia: bool = False
    """Default ``False``. Install the GPU Operator (a stack with NVIDIA pools)."""
    neuron: bool = False
    """Default ``False``. Install the Neuron chart and neuron-monitor (a stack with Neuron pools)."""
    efa: bool = False
    """Default ``False``. Install the EFA device plugin (a stack with EFA pools)."""
    system_node_selector: Mapping[str, str] = field(default_factory=lambda: {"node-role": "system"})
    """Default ``node-role=system``: where controllers run."""


class AcceleratorSoftware(pulumi.ComponentResource):
    releases: dict[str, k8s.helm.v3.Release]

    def __init__(self, name: str, args: AcceleratorSoftwareArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        raise_if(
            "AcceleratorSoftware",
            [] if args.nvidia or args.neuron or args.efa else ["nothing to install: no NVIDIA, Neuron or EFA pools"],
        )
        super().__init__("inference:accelerators:AcceleratorSoftware", name, None, opts)
        self.releases = {}
        child = pulumi.ResourceOptions(parent=self, provider=args.provider)
        system = dict(args.system_node_selector)
        if args.nvidia:
            self.releases["nvidia"] = _release(
                f"{name}-gpu-operator",
                "gpu-operator",
                charts.GPU_OPERATOR,
                NVIDIA_NAMESPACE,
                gpu_operator_values(system),
                child,
                create_ns=True,
            )
        if args.neuron:
            self.releases["neuron"] = _release(
                f"{name}-neuron", "neuron", charts.NEURON, SYSTEM_NAMESPACE, neuron_values(system), child
            )
            k8s.apps.v1.DaemonSet(
                f"{name}-neuron-monitor",
                metadata={"name": "neuron-monitor", "namespace": SYSTEM_NAMESPACE, "labels": {"app": "neuron-monitor"}},
                spec=neuron_monitor_spec(),
                opts=child,
            )
        if args.efa:
            self.releases["efa"] = _release(
                f"{name}-efa",
                "aws-efa-k8s-device-plugin",
                charts.EFA_DEVICE_PLUGIN,
                SYSTEM_NAMESPACE,
                {"nodeSelector": {LABEL_EFA: "true"}, "tolerations": ALL_ACCELERATOR_TOLERATIONS},
                child,
            )
        self.register_outputs({"releases": {k: r.name for k, r in self.releases.items()}})


def gpu_operator_values(system: Mapping[str, str]) -> dict[str, Any]:
    nvidia_nodes = {LABEL_ACCELERATOR: catalog.VENDOR_NVIDIA}
    gpu = [toleration(catalog.VENDOR_NVIDIA)]
    return {
        # The EKS AL2023/Bottlerocket NVIDIA AMIs install the driver and the container toolkit.
        "driver": {"enabled": False},
        "toolkit": {"enabled": False},
        "operator": {"nodeSelector": dict(system)},
        "daemonsets": {"tolerations": gpu},
        "node-feature-discovery": {
            "master": {"nodeSelector": dict(system)},
            "gc": {"nodeSelector": dict(system)},
            "worker": {"nodeSelector": nvidia_nodes, "tolerations": gpu},
        },
        # DCGM metrics for autoscaling and health (DCGM_FI_DEV_GPU_UTIL, XID errors...). The
        # ServiceMonitor is created by the observability stack, which installs the Prometheus CRDs.
        "dcgmExporter": {"enabled": True, "serviceMonitor": {"enabled": False}},
    }


def neuron_values(system: Mapping[str, str]) -> dict[str, Any]:
    neuron = [toleration(catalog.VENDOR_NEURON)]
    return {
        "devicePlugin": {"nodeSelector": {LABEL_ACCELERATOR: catalog.VENDOR_NEURON}, "tolerations": neuron},
        # The extension keeps a pod's NeuronCores on adjacent devices (topology-aware allocation). EKS
        # runs no user-visible control-plane nodes, so the chart's defaults (master nodeSelector and
        # tolerations) are replaced; pods opt in with ``schedulerName: my-scheduler``.
        "scheduler": {
            "enabled": True,
            "nodeSelector": dict(system),
            "tolerations": [],
            "customScheduler": {"enabled": True, "nodeSelector": dict(system)},
        },
        # Node problem detection needs its own IAM role and is part of the observability work.
        "npd": {"enabled": False},
    }


def neuron_monitor_spec() -> dict[str, Any]:
    """AWS's neuron-monitor DaemonSet (aws-neuron-sdk src/k8/k8s-neuron-monitor-daemonset.yml), pinned
    to Neuron nodes by label instead of an instance-type list. It must be privileged to read devices."""
    labels = {"app": "neuron-monitor"}
    return {
        "selector": {"matchLabels": labels},
        "template": {
            "metadata": {"labels": labels},
            "spec": {
                "nodeSelector": {LABEL_ACCELERATOR: catalog.VENDOR_NEURON},
                "tolerations": [toleration(catalog.VENDOR_NEURON)],
                "containers": [
                    {
                        "name": "neuron-monitor",
                        "image": charts.NEURON_MONITOR_IMAGE,
                        "command": ["/opt/bin/entrypoint.sh"],
                        "args": ["--port", str(NEURON_MONITOR_PORT)],
                        "ports": [{"name": "metrics", "containerPort": NEURON_MONITOR_PORT}],
                        "env": [{"name": "GOMEMLIMIT", "value": "160MiB"}],
                        "resources": {
                            "requests": {"cpu": "256m", "memory": "128Mi"},
                            "limits": {"cpu": "500m", "memory": "256Mi"},
                        },
                        "securityContext": {"privileged": True},
                    }
                ],
            },
        },
    }


def _release(
    name: str,
    release_name: str,
    chart: charts.Chart,
    namespace: str,
    values: dict[str, Any],
    opts: pulumi.ResourceOptions,
    *,
    create_ns: bool = False,
) -> k8s.helm.v3.Release:
    return k8s.helm.v3.Release(
        name,
        name=release_name,
        **chart.release_source(),
        namespace=namespace,
        create_namespace=create_ns,
        values=values,
        opts=opts,
    )
