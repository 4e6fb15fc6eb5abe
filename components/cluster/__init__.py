"""The EKS control plane and its managed add-ons.

This module is the area's public surface; the modules beside it hold the pieces and private helpers.
"""

from typing import TYPE_CHECKING

from inference_platform.components.common.exports import lazy_exports

if TYPE_CHECKING:
    from inference_platform.components.cluster.addons import (
        AddonIdentity,
        AddonSpec,
        ClusterAddons,
        ClusterAddonsArgs,
        addon_versions,
    )
    from inference_platform.components.cluster.eks_cluster import Cluster, ClusterArgs

__all__ = [
    "AddonIdentity",
    "AddonSpec",
    "Cluster",
    "ClusterAddons",
    "ClusterAddonsArgs",
    "ClusterArgs",
    "addon_versions",
]

# Imported on first use (components/common/exports.py): importing this package loads no Pulumi module.
_EXPORTS = {
    "addons": ("AddonIdentity", "AddonSpec", "ClusterAddons", "ClusterAddonsArgs", "addon_versions"),
    "eks_cluster": ("Cluster", "ClusterArgs"),
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
