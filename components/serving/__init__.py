"""The inference rollout: the image repository, the workload namespace, the serving controllers
(LeaderWorkerSet), the inference service with its pods, multi-node launch and placement.

This module is the area's public surface; the modules beside it hold the pieces and private helpers.
"""

from typing import TYPE_CHECKING

from inference_platform.components.common.exports import lazy_exports

if TYPE_CHECKING:
    from inference_platform.components.serving.controllers import ServingControllers, ServingControllersArgs
    from inference_platform.components.serving.image_repository import ImageRepository, ImageRepositoryArgs
    from inference_platform.components.serving.inference_service import Exposure, InferenceService, InferenceServiceArgs
    from inference_platform.components.serving.pod import Drain, ModelSource, Placement, Probes, Resources, SecretMount
    from inference_platform.components.serving.serving_config import ServingConfig, ServingDocument
    from inference_platform.components.serving.workload_namespace import WorkloadNamespace, WorkloadNamespaceArgs

__all__ = [
    "Drain",
    "Exposure",
    "ImageRepository",
    "ImageRepositoryArgs",
    "InferenceService",
    "InferenceServiceArgs",
    "ModelSource",
    "Placement",
    "Probes",
    "Resources",
    "SecretMount",
    "ServingConfig",
    "ServingControllers",
    "ServingControllersArgs",
    "ServingDocument",
    "WorkloadNamespace",
    "WorkloadNamespaceArgs",
]

# Imported on first use (components/common/exports.py): importing this package loads no Pulumi module.
_EXPORTS = {
    "controllers": ("ServingControllers", "ServingControllersArgs"),
    "image_repository": ("ImageRepository", "ImageRepositoryArgs"),
    "inference_service": ("Exposure", "InferenceService", "InferenceServiceArgs"),
    "pod": ("Drain", "ModelSource", "Placement", "Probes", "Resources", "SecretMount"),
    "serving_config": ("ServingConfig", "ServingDocument"),
    "workload_namespace": ("WorkloadNamespace", "WorkloadNamespaceArgs"),
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
