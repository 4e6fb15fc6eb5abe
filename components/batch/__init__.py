"""The asynchronous lane (``inference:batch``): the OpenAI Batch API beside the synchronous one (issue 22).

An encrypted S3 bucket for request and result files (``BatchBucket``), an SQS work queue with its dead-letter
queue (``BatchQueues``), the Batch API service and the queue workers on the system nodes with their Pod
Identity roles (``BatchWorkloads``), KEDA's scaling of the workers on the queue's depth (``BatchScaling``,
``QueueAuthentication``) and the lane's rules and dashboard (``BatchMonitoring``). The specs, documents and
signals are pure (``documents``, ``pods``, ``scaling``, ``signals``); the code that runs in the pods is the
``inference_platform.batch`` package (its image: batch/Dockerfile).

This module is the area's public surface; the modules beside it hold the pieces.
"""

from typing import TYPE_CHECKING

from inference_platform.components.common.exports import lazy_exports

if TYPE_CHECKING:
    from inference_platform.components.batch.bucket import BatchBucket, BatchBucketArgs
    from inference_platform.components.batch.keda_objects import (
        BatchScaling,
        BatchScalingArgs,
        QueueAuthentication,
        QueueAuthenticationArgs,
    )
    from inference_platform.components.batch.monitoring import BatchMonitoring, BatchMonitoringArgs
    from inference_platform.components.batch.pods import LaneEnv, Shape, ShedRule, WorkerEnv
    from inference_platform.components.batch.queues import BatchQueues, BatchQueuesArgs
    from inference_platform.components.batch.scaling import QueueSignal
    from inference_platform.components.batch.signals import LaneWatch
    from inference_platform.components.batch.workloads import (
        BatchWorkloads,
        BatchWorkloadsArgs,
        RateLimitTarget,
        ServingTarget,
    )

__all__ = [
    "BatchBucket",
    "BatchBucketArgs",
    "BatchMonitoring",
    "BatchMonitoringArgs",
    "BatchQueues",
    "BatchQueuesArgs",
    "BatchScaling",
    "BatchScalingArgs",
    "BatchWorkloads",
    "BatchWorkloadsArgs",
    "LaneEnv",
    "LaneWatch",
    "QueueAuthentication",
    "QueueAuthenticationArgs",
    "QueueSignal",
    "RateLimitTarget",
    "ServingTarget",
    "Shape",
    "ShedRule",
    "WorkerEnv",
]

# Imported on first use (components/common/exports.py): importing this package loads no Pulumi module.
_EXPORTS = {
    "bucket": ("BatchBucket", "BatchBucketArgs"),
    "keda_objects": ("BatchScaling", "BatchScalingArgs", "QueueAuthentication", "QueueAuthenticationArgs"),
    "monitoring": ("BatchMonitoring", "BatchMonitoringArgs"),
    "pods": ("LaneEnv", "Shape", "ShedRule", "WorkerEnv"),
    "queues": ("BatchQueues", "BatchQueuesArgs"),
    "scaling": ("QueueSignal",),
    "signals": ("LaneWatch",),
    "workloads": ("BatchWorkloads", "BatchWorkloadsArgs", "RateLimitTarget", "ServingTarget"),
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
