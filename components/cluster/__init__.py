"""The EKS control plane and its managed add-ons.

This module is the area's public surface; the modules beside it hold the pieces and private helpers.
"""

from components.cluster.addons import AddonIdentity, AddonSpec, ClusterAddons, ClusterAddonsArgs
from components.cluster.eks_cluster import Cluster, ClusterArgs

__all__ = [
    "AddonIdentity",
    "AddonSpec",
    "Cluster",
    "ClusterAddons",
    "ClusterAddonsArgs",
    "ClusterArgs",
]
