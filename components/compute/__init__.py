"""Where pods run: managed node groups, Karpenter and its NodePools, the Cluster Autoscaler, and the
accelerator device software (GPU Operator, Neuron, EFA). Pools are data (``PoolSpec``), not code.

This module is the area's public surface; the modules beside it hold the pieces and private helpers.
"""

from components.compute.accelerator_software import AcceleratorSoftware, AcceleratorSoftwareArgs
from components.compute.cluster_autoscaler import ClusterAutoscaler, ClusterAutoscalerArgs
from components.compute.karpenter import Karpenter, KarpenterArgs
from components.compute.karpenter_node_pool import KarpenterNodePool, KarpenterNodePoolArgs
from components.compute.node_pool import NodePool, NodePoolArgs
from components.compute.pool_profile import PoolProfile, PoolShard, PoolSpec, Taint

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
]
