"""The VPC, its subnets, routes and flow logs, the security groups and the interface endpoints.

This module is the area's public surface; the modules beside it hold the pieces and private helpers.
"""

from typing import TYPE_CHECKING

from inference_platform.components.common.exports import lazy_exports

if TYPE_CHECKING:
    from inference_platform.components.network.endpoints import InterfaceEndpoints, InterfaceEndpointsArgs
    from inference_platform.components.network.security_groups import SecurityGroups, SecurityGroupsArgs
    from inference_platform.components.network.vpc import FlowLogsArgs, Network, NetworkArgs

__all__ = [
    "FlowLogsArgs",
    "InterfaceEndpoints",
    "InterfaceEndpointsArgs",
    "Network",
    "NetworkArgs",
    "SecurityGroups",
    "SecurityGroupsArgs",
]

# Imported on first use (components/common/exports.py): importing this package loads no Pulumi module.
_EXPORTS = {
    "endpoints": ("InterfaceEndpoints", "InterfaceEndpointsArgs"),
    "security_groups": ("SecurityGroups", "SecurityGroupsArgs"),
    "vpc": ("FlowLogsArgs", "Network", "NetworkArgs"),
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
