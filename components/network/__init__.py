"""The VPC, its subnets, routes and flow logs, the security groups and the interface endpoints.

This module is the area's public surface; the modules beside it hold the pieces and private helpers.
"""

from components.network.endpoints import InterfaceEndpoints, InterfaceEndpointsArgs
from components.network.security_groups import SecurityGroups, SecurityGroupsArgs
from components.network.vpc import FlowLogsArgs, Network, NetworkArgs

__all__ = [
    "FlowLogsArgs",
    "InterfaceEndpoints",
    "InterfaceEndpointsArgs",
    "Network",
    "NetworkArgs",
    "SecurityGroups",
    "SecurityGroupsArgs",
]
