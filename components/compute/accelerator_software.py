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

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from inference_platform import catalog
from inference_platform.catalog import charts
from inference_platform.catalog.pool_profile import LABEL_ACCELERATOR, LABEL_EFA, TAINT_KEYS
from inference_platform.components.common.errors import raise_if

NVIDIA_NAMESPACE = "gpu-operator"
SYSTEM_NAMESPACE = "kube-system"
NEURON_MONITOR_PORT = 8000
DEFAULT_METRICS_NAMESPACE = "monitoring"
_DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")
NEURON_SCHEDULER_NAME = "my-scheduler"
"""``schedulerName`` of pods that want topology-aware NeuronCore placement (the chart's custom scheduler)."""


def toleration(vendor: str) -> dict[str, str]:
    return {"key": TAINT_KEYS[vendor], "operator": "Exists", "effect": "NoSchedule"}


ALL_ACCELERATOR_TOLERATIONS = [toleration(catalog.VENDOR_NVIDIA), toleration(catalog.VENDOR_NEURON)]


@dataclass(frozen=True, kw_only=True)
class AcceleratorSoftwareArgs:
    """What the accelerator software needs: the cluster's provider, which accelerators (NVIDIA, Neuron, EFA) and
    where it runs."""

    provider: k8s.Provider
    """Required. The cluster's Kubernetes provider."""
    nvidia: bool = False
    """Default ``False``. Install the GPU Operator (a stack with NVIDIA pools)."""
    neuron: bool = False
    """Default ``False``. Install the Neuron chart and neuron-monitor (a stack with Neuron pools)."""
    efa: bool = False
    """Default ``False``. Install the EFA device plugin (a stack with EFA pools)."""
    neuron_monitor_digest: str | None = None
    """Default unset (the image by tag). ``sha256:<64 hex>`` of ``charts.NEURON_MONITOR_IMAGE``: the pods
    then run exactly that image (``<image>:<tag>@<digest>``). No digest is shipped: AWS publishes the
    tag only, and a digest nobody read from the registry would be invented."""
    metrics_namespace: str = DEFAULT_METRICS_NAMESPACE
    """Default ``monitoring``. The only namespace whose pods may reach neuron-monitor's metrics port."""
    dcgm_service_monitor: bool = False
    """Default ``False``. Have the GPU Operator create the DCGM exporter's ServiceMonitor (needs the
    Prometheus Operator CRDs: on when the stack runs its observability pipeline)."""
    system_node_selector: Mapping[str, str] = field(default_factory=lambda: {"node-role": "system"})
    """Default ``node-role=system``: where controllers run."""


class AcceleratorSoftware(pulumi.ComponentResource):
    """Device plugins and accelerator monitoring (GPU Operator pieces, Neuron, EFA), only for the accelerators a
    stack has."""

    releases: dict[str, k8s.helm.v3.Release]

    def __init__(self, name: str, args: AcceleratorSoftwareArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        problems = (
            [] if args.nvidia or args.neuron or args.efa else ["nothing to install: no NVIDIA, Neuron or EFA pools"]
        )
        if args.neuron_monitor_digest is not None and not _DIGEST.match(args.neuron_monitor_digest):
            problems.append(f"neuron_monitor_digest {args.neuron_monitor_digest!r} is not sha256:<64 hex digits>")
        raise_if("AcceleratorSoftware", problems)
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
                gpu_operator_values(system, dcgm_service_monitor=args.dcgm_service_monitor),
                child,
                create_ns=True,
            )
        if args.neuron:
            self.releases["neuron"] = _release(
                f"{name}-neuron", "neuron", charts.NEURON, SYSTEM_NAMESPACE, neuron_values(system), child
            )
            k8s.apps.v1.DaemonSet(
                f"{name}-neuron-monitor",
                metadata={"name": "neuron-monitor", "namespace": SYSTEM_NAMESPACE, "labels": NEURON_MONITOR_LABELS},
                spec=neuron_monitor_spec(args.neuron_monitor_digest),
                opts=child,
            )
            k8s.networking.v1.NetworkPolicy(
                f"{name}-neuron-monitor-policy",
                metadata={"name": "neuron-monitor", "namespace": SYSTEM_NAMESPACE, "labels": NEURON_MONITOR_LABELS},
                spec=neuron_monitor_network_policy(args.metrics_namespace),
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


def gpu_operator_values(system: Mapping[str, str], *, dcgm_service_monitor: bool = False) -> dict[str, Any]:
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
        # DCGM metrics for the fleet dashboard and alerts (utilisation, memory, power, XID errors); never
        # a scaling signal. The operator creates the ServiceMonitor once the Prometheus CRDs exist.
        "dcgmExporter": {
            "enabled": True,
            "serviceMonitor": {"enabled": dcgm_service_monitor, "interval": "15s", "honorLabels": False},
        },
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


NEURON_MONITOR_LABELS = {"app": "neuron-monitor"}


def neuron_monitor_spec(digest: str | None = None) -> dict[str, Any]:
    """AWS's neuron-monitor DaemonSet (aws-neuron-sdk src/k8/k8s-neuron-monitor-daemonset.yml), pinned
    to Neuron nodes by label instead of an instance-type list, and hardened as far as its job allows.

    It stays privileged and root, as AWS ships it: it reads every /dev/neuron* device of the node,
    which the device plugin hands to no pod that has not requested them, and privileged implies every
    capability and privilege escalation (the API refuses allowPrivilegeEscalation false with it), so
    those settings are left out rather than written as a promise the runtime does not keep. What its
    job does not need goes: the service-account token (it never calls the API server), host
    namespaces, and a writable root for anything but the image's own paths. The RuntimeDefault seccomp
    profile takes effect only if privileged is ever dropped (runtimes run privileged containers
    unconfined). Probes: liveness on the metrics port, readiness on a real scrape of ``/metrics``.
    """
    image = charts.NEURON_MONITOR_IMAGE if digest is None else f"{charts.NEURON_MONITOR_IMAGE}@{digest}"
    return {
        "selector": {"matchLabels": dict(NEURON_MONITOR_LABELS)},
        "template": {
            "metadata": {"labels": dict(NEURON_MONITOR_LABELS)},
            "spec": {
                "automountServiceAccountToken": False,
                "enableServiceLinks": False,
                "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
                "nodeSelector": {LABEL_ACCELERATOR: catalog.VENDOR_NEURON},
                "tolerations": [toleration(catalog.VENDOR_NEURON)],
                "containers": [
                    {
                        "name": "neuron-monitor",
                        "image": image,
                        "imagePullPolicy": "IfNotPresent",
                        "command": ["/opt/bin/entrypoint.sh"],
                        "args": ["--port", str(NEURON_MONITOR_PORT)],
                        "ports": [{"name": "metrics", "containerPort": NEURON_MONITOR_PORT, "protocol": "TCP"}],
                        "env": [{"name": "GOMEMLIMIT", "value": "160MiB"}],
                        "resources": {
                            "requests": {"cpu": "256m", "memory": "128Mi"},
                            "limits": {"cpu": "500m", "memory": "256Mi"},
                        },
                        "livenessProbe": {
                            "tcpSocket": {"port": "metrics"},
                            "initialDelaySeconds": 30,
                            "periodSeconds": 30,
                            "timeoutSeconds": 5,
                            "failureThreshold": 4,
                        },
                        "readinessProbe": {
                            "httpGet": {"path": "/metrics", "port": "metrics"},
                            "initialDelaySeconds": 10,
                            "periodSeconds": 30,
                            "timeoutSeconds": 10,
                            "failureThreshold": 3,
                        },
                        "securityContext": {"privileged": True},
                    }
                ],
            },
        },
    }


def neuron_monitor_network_policy(metrics_namespace: str) -> dict[str, Any]:
    """Only the monitoring namespace reaches the metrics port; nothing leaves (it reads local devices)."""
    return {
        "podSelector": {"matchLabels": dict(NEURON_MONITOR_LABELS)},
        "policyTypes": ["Ingress", "Egress"],
        "ingress": [
            {
                "from": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": metrics_namespace}}}],
                "ports": [{"protocol": "TCP", "port": NEURON_MONITOR_PORT}],
            }
        ],
        "egress": [],
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
