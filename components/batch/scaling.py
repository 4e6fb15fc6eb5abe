"""KEDA's view of the lane's queue, as plain typed data: the workers' ScaledObject and the queue trigger the
serving rollout's ScaledObject adds to hold its floor at night while batch work waits.

KEDA v2.20.2's ``aws-sqs-queue`` scaler (kedacore/keda pkg/scalers/aws_sqs_queue_scaler.go at v2.20.2, pinned in
tests/data/upstream/keda_v2.20.2_aws_sqs_queue_scaler.json): the metric is ApproximateNumberOfMessages plus
...NotVisible (``scaleOnInFlight``, default true), an AverageValue against ``queueLength`` per replica (default
5), active above ``activationQueueLength`` (default 0); ``queueURL`` and ``awsRegion`` are required. Credentials:
a TriggerAuthentication with ``podIdentity.provider: aws`` and no ``roleArn`` makes KEDA use its own default
credential chain (pkg/scalers/aws/aws_common.go GetAwsAuthorization, aws_config_cache.go GetCredentials), i.e.
the KEDA operator pod's EKS Pod Identity role, which may read these queues' attributes and nothing else.
(``identityOwner: workload`` would read an IRSA role annotation from the workload's service account, which
EKS Pod Identity does not use.)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

TRIGGER_TYPE = "aws-sqs-queue"
TRIGGER_NAME = "batch"
"""The trigger's name: the serving ScaledObject's scaling-modifier formula reads the queue depth by it."""
AUTHENTICATION = "batch-queue"
"""The TriggerAuthentication (one per namespace that scales on the queue)."""
POD_IDENTITY_PROVIDER = "aws"
KEDA_OPERATOR_SERVICE_ACCOUNT = "keda-operator"
"""kedacore/charts keda/values.yaml at v2.20.2: serviceAccount.operator.name."""
DEFAULT_POLLING_SECONDS = 15
DEFAULT_COOLDOWN_SECONDS = 300
"""After the last message, workers stay 5 minutes before scaling to zero: a batch's last lines may be retried."""
DEFAULT_SCALE_DOWN_STABILIZATION_SECONDS = 600
"""The HPA drops workers on the highest recommendation of the last 10 minutes: a queue drained by a burst of
receives refills as retried lines return after their visibility timeout."""


@dataclass(frozen=True, kw_only=True)
class QueueSignal:
    """The lane's work queue as a KEDA trigger."""

    queue_url: Any
    """The work queue's URL (``https://sqs.<region>.amazonaws.com/<account>/<name>``)."""
    region: str
    messages_per_replica: int = 5
    """``queueLength``: visible + in-flight messages per replica (KEDA's default 5)."""


def trigger_authentication_spec() -> dict[str, Any]:
    return {"podIdentity": {"provider": POD_IDENTITY_PROVIDER}}


def queue_trigger(signal: QueueSignal) -> dict[str, Any]:
    return {
        "type": TRIGGER_TYPE,
        "name": TRIGGER_NAME,
        "metricType": "AverageValue",
        "authenticationRef": {"name": AUTHENTICATION, "kind": "TriggerAuthentication"},
        "metadata": {
            "queueURL": signal.queue_url,
            "awsRegion": signal.region,
            "queueLength": str(signal.messages_per_replica),
            "activationQueueLength": "0",
            "scaleOnInFlight": "true",
        },
    }


def worker_scaled_object_spec(
    signal: QueueSignal,
    *,
    deployment: str,
    min_replicas: int,
    max_replicas: int,
    polling_seconds: int = DEFAULT_POLLING_SECONDS,
    cooldown_seconds: int = DEFAULT_COOLDOWN_SECONDS,
) -> dict[str, Any]:
    """Workers from ``min_replicas`` (0: none while the queue is empty) to ``max_replicas``, one per
    ``messages_per_replica`` messages queued or in flight."""
    if not 0 <= min_replicas <= max_replicas or max_replicas < 1:
        raise ValueError(f"min_replicas={min_replicas}, max_replicas={max_replicas}: need 0 <= min <= max, max >= 1")
    if signal.messages_per_replica < 1:
        raise ValueError(f"messages_per_replica={signal.messages_per_replica}: >= 1")
    return {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": deployment},
        "pollingInterval": polling_seconds,
        "cooldownPeriod": cooldown_seconds,
        "minReplicaCount": min_replicas,
        "maxReplicaCount": max_replicas,
        "advanced": {
            "horizontalPodAutoscalerConfig": {
                "behavior": {"scaleDown": {"stabilizationWindowSeconds": DEFAULT_SCALE_DOWN_STABILIZATION_SECONDS}}
            }
        },
        "triggers": [queue_trigger(signal)],
    }


def desired_workers(queued: int, in_flight: int, *, messages_per_replica: int, min_replicas: int,
                    max_replicas: int) -> int:  # fmt: skip
    """What the HPA KEDA makes asks for from the queue's attributes (scaleOnInFlight): ceil(total / target),
    zero while the queue is empty (activation), within the bounds."""
    total = queued + in_flight
    if total <= 0:
        return min_replicas
    wanted = -(-total // messages_per_replica)
    return max(min_replicas, min(max_replicas, wanted))
