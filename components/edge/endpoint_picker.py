"""llm-d's endpoint picker in the cluster (``edge.routing: inference-pool``, issue 29 Path B): the pinned
``llm-d-router-standalone`` release (``catalog.endpoint_picker``) in the serving namespace, beside the pods it
picks from, and what the chart does not bring:

- a PodDisruptionBudget keeping one picker through a node drain (two replicas, active-passive by the chart's
  leader election);
- a NetworkPolicy admitting the picker's ext_proc port only from the gateway's Envoy proxies (the picker serves
  plaintext gRPC, ``secure-serving: false``) and its metrics port only from the monitoring namespace;
- a NetworkPolicy admitting the picker to the serving pods' OpenAI port, where it scrapes ``/metrics`` (the
  serving pods' other policies admit only the gateway and the load-balancer subnets there).

With several rollouts (models, a canary) the picker selects every serving pod of the stack and schedules each
rollout within its own (``catalog.endpoint_picker.profiled``); the scrape policy then admits it to all of them.

The chart's RBAC is least privilege as rendered: a namespaced Role to get/watch/list pods (``routerlib``
``_rbac.yaml``; no ClusterRole while its ServiceMonitor is off, so the stack scrapes the picker with its own, and the
metrics port serves without a token, behind the NetworkPolicy) and the leader-election Role. Its pods carry gRPC
liveness and readiness probes (``_deployment.yaml``). They run on the system nodes: the accelerator nodes are
tainted and the picker tolerates nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from inference_platform.catalog import endpoint_picker as picker
from inference_platform.components.verification.pods import system_affinity

MONITORING_NAMESPACE = "monitoring"


@dataclass(frozen=True, kw_only=True)
class EndpointPickerArgs:
    """What the picker needs: the cluster, the serving pods it scores and the gateway proxies that call it."""

    provider: k8s.Provider
    """Required. The cluster's Kubernetes provider."""
    namespace: str
    """Required. The serving namespace: the picker selects pods in its own namespace."""
    serving_labels: Mapping[str, str]
    """Required. The serving pods' selector labels."""
    serving_port: int
    """Required. The serving pods' OpenAI port (the picker's target port and scrape port)."""
    gateway_namespace: str
    """Required. Where the gateway's Envoy proxies run."""
    proxy_labels: Mapping[str, str]
    """Required. The Envoy proxy pods' labels."""
    neuron: bool = False
    """Default ``False``. The serving pods are Neuron's: the picker reads the ``neuron_llm`` step's gauges
    (``catalog.endpoint_picker.neuron_plugins``) instead of TensorRT-LLM's."""
    profiles: Sequence[picker.RolloutProfile] = ()
    """Default none. With more than one (several models, a canary): a scheduling profile per rollout, the first the
    default (``catalog.endpoint_picker.profiled``); ``serving_labels`` then selects every rollout's pods."""
    depends_on: Sequence[pulumi.Resource] = ()


class EndpointPicker(pulumi.ComponentResource):
    """llm-d's endpoint picker for ``edge.routing.mode: inference-pool``: its pinned chart release on the system
    nodes, with the objects beside it (module docstring)."""

    release: k8s.helm.v3.Release

    def __init__(self, name: str, args: EndpointPickerArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("inference:edge:EndpointPicker", name, None, opts)
        child = pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=list(args.depends_on))
        self.release = k8s.helm.v3.Release(
            f"{name}-release",
            name=picker.RELEASE,
            **picker.CHART.release_source(),
            namespace=args.namespace,
            values=picker.chart_values(
                serving_labels=args.serving_labels,
                serving_port=args.serving_port,
                system_affinity=system_affinity(),
                tolerations=[],
                neuron=args.neuron,
                profiles=args.profiles,
                default_profile=args.profiles[0].name if args.profiles else "",
            ),
            opts=child,
        )
        labels = {"app.kubernetes.io/part-of": "inference-edge"}
        k8s.policy.v1.PodDisruptionBudget(
            f"{name}-pdb",
            metadata={"name": picker.service_name(), "namespace": args.namespace, "labels": labels},
            spec={
                "minAvailable": 1,
                "selector": {"matchLabels": picker.pod_labels()},
                "unhealthyPodEvictionPolicy": "AlwaysAllow",
            },
            opts=child,
        )
        k8s.networking.v1.NetworkPolicy(
            f"{name}-ingress",
            metadata={"name": picker.service_name(), "namespace": args.namespace, "labels": labels},
            spec=picker_ingress_spec(args.gateway_namespace, args.proxy_labels),
            opts=child,
        )
        k8s.networking.v1.NetworkPolicy(
            f"{name}-scrape",
            metadata={"name": "from-endpoint-picker", "namespace": args.namespace, "labels": labels},
            spec=scrape_spec(args.serving_labels, args.serving_port),
            opts=child,
        )
        self.register_outputs({"service": picker.service_name()})


def picker_ingress_spec(gateway_namespace: str, proxy_labels: Mapping[str, str]) -> dict[str, Any]:
    """The picker's ext_proc port from the gateway's proxies, its metrics port from monitoring; nothing else."""
    return {
        "podSelector": {"matchLabels": picker.pod_labels()},
        "policyTypes": ["Ingress"],
        "ingress": [
            {
                "from": [
                    {
                        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": gateway_namespace}},
                        "podSelector": {"matchLabels": dict(proxy_labels)},
                    }
                ],
                "ports": [{"port": picker.EXT_PROC_PORT, "protocol": "TCP"}],
            },
            {
                "from": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": MONITORING_NAMESPACE}}}],
                "ports": [{"port": picker.METRICS_PORT, "protocol": "TCP"}],
            },
        ],
    }


def scrape_spec(serving_labels: Mapping[str, str], serving_port: int) -> dict[str, Any]:
    """The serving pods' OpenAI port from the picker (it scrapes ``/metrics`` there)."""
    return {
        "podSelector": {"matchLabels": dict(serving_labels)},
        "policyTypes": ["Ingress"],
        "ingress": [
            {
                "from": [{"podSelector": {"matchLabels": picker.pod_labels()}}],
                "ports": [{"port": serving_port, "protocol": "TCP"}],
            }
        ],
    }
