"""IAM roles: the node role and EKS Pod Identity roles for workloads.

This module is the area's public surface; the modules beside it hold the pieces and private helpers.
"""

from typing import TYPE_CHECKING

from inference_platform.components.common.exports import lazy_exports

if TYPE_CHECKING:
    from inference_platform.components.identity.node_role import NodeRole, NodeRoleArgs
    from inference_platform.components.identity.pod_identity import PodIdentityRole, PodIdentityRoleArgs

__all__ = [
    "NodeRole",
    "NodeRoleArgs",
    "PodIdentityRole",
    "PodIdentityRoleArgs",
]

# Imported on first use (components/common/exports.py): importing this package loads no Pulumi module.
_EXPORTS = {
    "node_role": ("NodeRole", "NodeRoleArgs"),
    "pod_identity": ("PodIdentityRole", "PodIdentityRoleArgs"),
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
