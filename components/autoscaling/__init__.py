"""Autoscaling of the inference workloads on the LLM's own signals (``inference:autoscaling``).

KEDA (from its pinned chart) and one ScaledObject per workload (KEDA creates the autoscaling/v2 HPA):
Prometheus triggers on requests in flight or NVIDIA's queue/compute ratio and on KV-cache use, HPA
behaviour that scales up fast and down slowly, and a night schedule that lowers the floor and ceiling; standby
placeholders that hold a replica's room on the serving pool so a scale-up need not wait for a node.
The spec is pure (``scaled_object``); the night schedule, the default targets and the HPA behaviour live
below the components, in ``inference_platform.planners`` (``night_schedule``, ``scaling``), which the settings share.

This module is the area's public surface; the modules beside it hold the pieces.
"""

from typing import TYPE_CHECKING

from inference_platform.components.common.exports import lazy_exports

if TYPE_CHECKING:
    from inference_platform.components.autoscaling.keda import Keda, KedaArgs
    from inference_platform.components.autoscaling.scaled_object import ScaleTarget, ScalingPolicy
    from inference_platform.components.autoscaling.scaled_workload import ScaledWorkload, ScaledWorkloadArgs
    from inference_platform.components.autoscaling.standby import Standby, StandbyArgs
    from inference_platform.planners.night_schedule import NightSchedule, ReplicaBounds, replica_bounds
    from inference_platform.planners.scaling import Behaviour

__all__ = [
    "Behaviour",
    "Keda",
    "KedaArgs",
    "NightSchedule",
    "ReplicaBounds",
    "ScaleTarget",
    "ScaledWorkload",
    "ScaledWorkloadArgs",
    "ScalingPolicy",
    "Standby",
    "StandbyArgs",
    "replica_bounds",
]

# Imported on first use (components/common/exports.py): importing this package loads no Pulumi module.
_EXPORTS = {
    "keda": ("Keda", "KedaArgs"),
    "scaled_object": ("ScaleTarget", "ScalingPolicy"),
    "inference_platform.planners.scaling": ("Behaviour",),
    "scaled_workload": ("ScaledWorkload", "ScaledWorkloadArgs"),
    "standby": ("Standby", "StandbyArgs"),
    "inference_platform.planners.night_schedule": ("NightSchedule", "ReplicaBounds", "replica_bounds"),
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
