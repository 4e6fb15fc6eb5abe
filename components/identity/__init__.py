"""IAM roles: the node role and EKS Pod Identity roles for workloads.

This module is the area's public surface; the modules beside it hold the pieces and private helpers.
"""

from components.identity.node_role import NodeRole, NodeRoleArgs
from components.identity.pod_identity import PodIdentityRole, PodIdentityRoleArgs

__all__ = [
    "NodeRole",
    "NodeRoleArgs",
    "PodIdentityRole",
    "PodIdentityRoleArgs",
]
