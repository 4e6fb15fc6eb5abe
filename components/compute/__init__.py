"""Where pods run: managed node groups, Karpenter and its NodePools, the Cluster Autoscaler, and the
accelerator device software (GPU Operator, Neuron, EFA). Pools are data (``PoolSpec``), not code.

This module is the area's public surface; the modules beside it hold the pieces and private helpers.
"""

from typing import TYPE_CHECKING

from inference_platform.components.common.exports import lazy_exports

if TYPE_CHECKING:
    from inference_platform.catalog.pool_profile import PoolProfile, PoolShard, PoolSpec, Taint, profile
    from inference_platform.components.compute.accelerator_software import AcceleratorSoftware, AcceleratorSoftwareArgs
    from inference_platform.components.compute.cluster_autoscaler import ClusterAutoscaler, ClusterAutoscalerArgs
    from inference_platform.components.compute.karpenter import Karpenter, KarpenterArgs
    from inference_platform.components.compute.karpenter_node_pool import KarpenterNodePool, KarpenterNodePoolArgs
    from inference_platform.components.compute.node_pool import NodePool, NodePoolArgs

__all__ = [
    "AcceleratorSoftware",
    "AcceleratorSoftwareArgs",
    "ClusterAutoscaler",
    "ClusterAutoscalerArgs",
    "Karpenter",
    "KarpenterArgs",
    "KarpenterNodePool",
    "KarpenterNodePoolArgs",
    "NodePool",
    "NodePoolArgs",
    "PoolProfile",
    "PoolShard",
    "PoolSpec",
    "Taint",
    "profile",
]

# Imported on first use (components/common/exports.py): importing this package loads no Pulumi module.
_EXPORTS = {
    "accelerator_software": ("AcceleratorSoftware", "AcceleratorSoftwareArgs"),
    "cluster_autoscaler": ("ClusterAutoscaler", "ClusterAutoscalerArgs"),
    "karpenter": ("Karpenter", "KarpenterArgs"),
    "karpenter_node_pool": ("KarpenterNodePool", "KarpenterNodePoolArgs"),
    "node_pool": ("NodePool", "NodePoolArgs"),
    "inference_platform.catalog.pool_profile": ("PoolProfile", "PoolShard", "PoolSpec", "Taint", "profile"),
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
