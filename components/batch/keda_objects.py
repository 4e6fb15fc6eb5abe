"""The lane's KEDA objects: the queue's TriggerAuthentication in each namespace that scales on it, and the
workers' ScaledObject (``components.batch.scaling`` holds the specs; KEDA's CRDs must exist first).

KEDA reads the queue with its own Pod Identity role (``podIdentity.provider: aws``, no ``roleArn``): the
program associates the ``keda/keda-operator`` service account with a role that may read the lane's queues'
attributes only, before KEDA's pods start (credentials are injected when a pod is created).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from inference_platform.components.batch.scaling import (
    AUTHENTICATION,
    QueueSignal,
    trigger_authentication_spec,
    worker_scaled_object_spec,
)

API_VERSION = "keda.sh/v1alpha1"
LABELS = {"app.kubernetes.io/part-of": "inference-platform"}


@dataclass(frozen=True, kw_only=True)
class QueueAuthenticationArgs:
    """What the queue's KEDA TriggerAuthentication needs: the cluster's provider and the namespace it serves."""

    k8s_provider: pulumi.ProviderResource
    """Required. The cluster's Kubernetes provider."""
    namespace: str
    """Required. Where the ScaledObject that reads the queue lives."""
    depends_on: Sequence[pulumi.Resource] = ()
    """Default none. KEDA's release (its CRDs) and the namespace."""


class QueueAuthentication(pulumi.ComponentResource):
    """``TriggerAuthentication batch-queue``: KEDA's own Pod Identity credentials for the queue."""

    name: str

    def __init__(self, name: str, args: QueueAuthenticationArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("inference:batch:QueueAuthentication", name, None, opts)
        self.name = AUTHENTICATION
        k8s.apiextensions.CustomResource(
            f"{name}-trigger-authentication",
            api_version=API_VERSION,
            kind="TriggerAuthentication",
            metadata={"name": AUTHENTICATION, "namespace": args.namespace, "labels": LABELS},
            spec=trigger_authentication_spec(),
            opts=pulumi.ResourceOptions(parent=self, provider=args.k8s_provider, depends_on=list(args.depends_on)),
        )
        self.register_outputs({"name": self.name})


@dataclass(frozen=True, kw_only=True)
class BatchScalingArgs:
    """What the workers' scaling needs: the cluster's provider, the Deployment, the queue signal and replica bounds."""

    k8s_provider: pulumi.ProviderResource
    """Required."""
    namespace: str
    """Required. The workers' namespace."""
    deployment: str
    """Required. The workers' Deployment."""
    signal: QueueSignal
    """Required. The work queue and how many messages one worker holds."""
    min_replicas: int = 0
    """Default 0."""
    max_replicas: int = 4
    """Default 4."""
    depends_on: Sequence[pulumi.Resource] = ()
    """Default none. KEDA's release and the workers' Deployment."""


class BatchScaling(pulumi.ComponentResource):
    """KEDA's ScaledObject of the queue workers: scaled on the work queue's depth."""

    scaled_object_name: str

    def __init__(self, name: str, args: BatchScalingArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        spec = worker_scaled_object_spec(
            args.signal, deployment=args.deployment, min_replicas=args.min_replicas, max_replicas=args.max_replicas
        )
        super().__init__("inference:batch:BatchScaling", name, None, opts)
        auth = QueueAuthentication(
            f"{name}-auth",
            QueueAuthenticationArgs(
                k8s_provider=args.k8s_provider, namespace=args.namespace, depends_on=args.depends_on
            ),
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.scaled_object_name = args.deployment
        k8s.apiextensions.CustomResource(
            f"{name}-scaled-object",
            api_version=API_VERSION,
            kind="ScaledObject",
            metadata={"name": args.deployment, "namespace": args.namespace, "labels": LABELS},
            spec=spec,
            opts=pulumi.ResourceOptions(parent=self, provider=args.k8s_provider, depends_on=[auth, *args.depends_on]),
        )
        self.register_outputs({"scaled_object_name": self.scaled_object_name})
