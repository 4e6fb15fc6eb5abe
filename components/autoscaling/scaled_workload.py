"""One inference workload's ScaledObject: KEDA scales it on the LLM's own signals, day and night.

The spec is :func:`inference_platform.components.autoscaling.scaled_object.scaled_object_spec` (pure, tested without
Pulumi); this component registers it in the workload's namespace once KEDA's CRDs exist.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import pulumi
import pulumi_kubernetes as k8s

from inference_platform.components.autoscaling.scaled_object import ScaleTarget, ScalingPolicy, scaled_object_spec
from inference_platform.components.common.errors import raise_if

API_VERSION = "keda.sh/v1alpha1"
KIND = "ScaledObject"


@dataclass(frozen=True, kw_only=True)
class ScaledWorkloadArgs:
    """What a ScaledWorkload needs: the cluster's provider, the target workload and its scaling policy."""

    k8s_provider: pulumi.ProviderResource
    """Required. The cluster's Kubernetes provider."""
    policy: ScalingPolicy
    """Required. Signals, targets, bounds, behaviour and night schedule."""
    target: ScaleTarget
    """Required. The Deployment or LeaderWorkerSet to scale (in ``policy.scope.namespace``)."""
    depends_on: Sequence[pulumi.Resource] = field(default_factory=tuple)
    """Default none. KEDA's release (its CRDs) and the workload."""


class ScaledWorkload(pulumi.ComponentResource):
    """One inference workload's KEDA ScaledObject: scaled on the LLM's own signals, day and night."""

    scaled_object_name: str
    hpa_name: str
    """The HPA KEDA creates (what kube-state-metrics reports and the waste alert reads)."""

    def __init__(self, name: str, args: ScaledWorkloadArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        raise_if("ScaledWorkload", args.policy.problems())
        spec = scaled_object_spec(args.policy, args.target)
        super().__init__("inference:autoscaling:ScaledWorkload", name, None, opts)
        self.scaled_object_name = args.target.name
        self.hpa_name = f"keda-hpa-{args.target.name}"
        k8s.apiextensions.CustomResource(
            f"{name}-scaled-object",
            api_version=API_VERSION,
            kind=KIND,
            metadata={
                "name": self.scaled_object_name,
                "namespace": args.policy.scope.namespace,
                "labels": {"app.kubernetes.io/part-of": "inference-platform"},
            },
            spec=spec,
            opts=pulumi.ResourceOptions(parent=self, provider=args.k8s_provider, depends_on=list(args.depends_on)),
        )
        self.register_outputs({"scaled_object_name": self.scaled_object_name, "hpa_name": self.hpa_name})
