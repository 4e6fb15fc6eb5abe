"""The inference rollout: the image repository, the workload namespace, the serving controllers
(LeaderWorkerSet), the inference service with its pods, multi-node launch and placement, and the
engine-build Job.

This module is the area's public surface; the modules beside it hold the pieces and private helpers.
"""

from components.serving.controllers import ServingControllers, ServingControllersArgs
from components.serving.engine_build import EngineBuild, EngineBuildArgs
from components.serving.image_repository import ImageRepository, ImageRepositoryArgs
from components.serving.inference_service import Exposure, InferenceService, InferenceServiceArgs
from components.serving.workload_namespace import WorkloadNamespace, WorkloadNamespaceArgs

__all__ = [
    "EngineBuild",
    "EngineBuildArgs",
    "Exposure",
    "ImageRepository",
    "ImageRepositoryArgs",
    "InferenceService",
    "InferenceServiceArgs",
    "ServingControllers",
    "ServingControllersArgs",
    "WorkloadNamespace",
    "WorkloadNamespaceArgs",
]
