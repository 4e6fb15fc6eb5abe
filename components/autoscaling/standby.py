"""Standby capacity for scale-ups: placeholder pods that hold a serving replica's room on the serving pool and give it
up the moment a replica needs it (coldStart.standbyReplicas).

Why: a scale-up that needs a new node waits for its launch and the ~20 GB image pull (planners/cold_start.py: more
than 3 minutes after the launch even with nodeadm's parallel pull). A placeholder keeps a node running with the image
pulled; a pending serving pod preempts it and starts on that node in the running-node time. The cluster autoscaler
(or Karpenter) then sees the preempted placeholder pending and brings up a node for it in the background: the
overprovisioning pattern of the cluster autoscaler's FAQ ("How can I configure overprovisioning with Cluster
Autoscaler?": pause pods at a negative priority).

The placeholders run at a PriorityClass of negative value with ``preemptionPolicy: Never``: below every workload
(pods without a class have priority 0), so the scheduler preempts them for any serving pod, and they never displace
anything themselves (Kubernetes, Pod Priority and Preemption). They cost what the nodes they hold cost:
``inferctl cost`` prices them like any workload pinned to the pool (planners/costing.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from inference_platform.components.common.errors import raise_if

PRIORITY_VALUE = -10
"""Below every pod without a class (0): the scheduler preempts a placeholder for any serving pod."""
PREEMPTION_POLICY = "Never"
"""A placeholder waits for room; it never evicts anything."""
LABEL_COMPONENT = "standby"


@dataclass(frozen=True, kw_only=True)
class StandbyArgs:
    """What Standby needs: the cluster's provider, the serving pod it stands in for and how many."""

    k8s_provider: pulumi.ProviderResource
    """Required. The cluster's Kubernetes provider."""
    namespace: str
    """Required. The serving rollout's namespace."""
    workload_name: str
    """Required. The serving Deployment: the placeholders are ``<name>-standby``."""
    pod_spec: Mapping[str, Any]
    """Required. A pod holding what one serving pod holds (InferenceService.placeholder_pod_spec); each placeholder
    runs it at the standby priority class."""
    replicas: int
    """Required, >= 1. Placeholders, each one serving replica's room."""
    depends_on: Sequence[pulumi.Resource] = field(default_factory=tuple)
    """Default none. The serving rollout (its image exists) and the pool's node software."""


def priority_class_spec() -> dict[str, Any]:
    return {
        "value": PRIORITY_VALUE,
        "preemptionPolicy": PREEMPTION_POLICY,
        "globalDefault": False,
        "description": "Standby placeholders for inference scale-ups: preempted by any serving pod, never preempting.",
    }


def deployment_spec(args: StandbyArgs, priority_class: str) -> dict[str, Any]:
    selector = {"app.kubernetes.io/name": args.workload_name, "app.kubernetes.io/component": LABEL_COMPONENT}
    return {
        "replicas": args.replicas,
        "selector": {"matchLabels": selector},
        # A replaced placeholder frees its room before its successor asks for one.
        "strategy": {"type": "Recreate"},
        "template": {
            "metadata": {"labels": {**selector, "app.kubernetes.io/part-of": "inference-platform"}},
            "spec": {**args.pod_spec, "priorityClassName": priority_class},
        },
    }


class Standby(pulumi.ComponentResource):
    """Placeholder pods holding serving replicas' room at a negative priority (coldStart.standbyReplicas)."""

    deployment_name: str
    priority_class_name: str

    def __init__(self, name: str, args: StandbyArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        raise_if("Standby", [] if args.replicas >= 1 else [f"replicas={args.replicas}: expected >= 1"])
        super().__init__("inference:autoscaling:Standby", name, None, opts)
        self.deployment_name = f"{args.workload_name}-standby"
        self.priority_class_name = f"{args.namespace}-{args.workload_name}-standby"
        child = pulumi.ResourceOptions(parent=self, provider=args.k8s_provider, depends_on=list(args.depends_on))
        labels = {"app.kubernetes.io/part-of": "inference-platform", "app.kubernetes.io/component": LABEL_COMPONENT}
        priority = k8s.scheduling.v1.PriorityClass(
            f"{name}-priority-class",
            metadata={"name": self.priority_class_name, "labels": labels},
            **{_snake(k): v for k, v in priority_class_spec().items()},
            opts=child,
        )
        k8s.apps.v1.Deployment(
            f"{name}-deployment",
            metadata={"name": self.deployment_name, "namespace": args.namespace, "labels": labels},
            spec=deployment_spec(args, self.priority_class_name),
            opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[priority])),
        )
        self.register_outputs(
            {"deployment_name": self.deployment_name, "priority_class_name": self.priority_class_name}
        )


def _snake(key: str) -> str:
    return {"preemptionPolicy": "preemption_policy", "globalDefault": "global_default"}.get(key, key)
