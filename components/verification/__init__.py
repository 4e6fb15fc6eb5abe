"""Checks of a rollout in the cluster: the post-rollout verification Job (``inferctl verify``, awaited by
``pulumi up``) and the optional distributed load test (Locust master Job + worker Indexed Job on the
system nodes).

This module is the area's public surface; the modules beside it hold the pieces and private helpers.
"""

from typing import TYPE_CHECKING

from inference_platform.components.common.exports import lazy_exports

if TYPE_CHECKING:
    from inference_platform.components.verification.load_test import LoadTest, LoadTestArgs
    from inference_platform.components.verification.pods import PodShape
    from inference_platform.components.verification.verification_job import (
        InClusterTarget,
        VerificationJob,
        VerificationJobArgs,
    )

__all__ = [
    "InClusterTarget",
    "LoadTest",
    "LoadTestArgs",
    "PodShape",
    "VerificationJob",
    "VerificationJobArgs",
]

# Imported on first use (components/common/exports.py): importing this package loads no Pulumi module.
_EXPORTS = {
    "load_test": ("LoadTest", "LoadTestArgs"),
    "pods": ("PodShape",),
    "verification_job": ("InClusterTarget", "VerificationJob", "VerificationJobArgs"),
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
