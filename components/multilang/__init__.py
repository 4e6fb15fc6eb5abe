"""The main components for every Pulumi language: typed facades (TypedDict Args the Pulumi SDK can turn into
a schema) over Network, Cluster, NodePool, ModelStore, InferenceService, EdgeGateway and PublicEndpoint, hosted as the
source-based component package in provider/ (docs/components-from-other-languages.md).

The TypedDicts repeat their components' field lists on purpose (``duplicates`` pairs them): the SDK reads a
schema from source, the annotations and the docstring after each key (inspect.getsource in
pulumi.provider.experimental.analyzer), so they cannot be generated from the dataclasses at run time; the
Construct tests hold each facade to its component.

A facade adds one level to its component's URNs (``inference-platform:index:Network$inference:network:Network``)
and changes nothing of the Python program's. This module is the area's public surface.
"""

from typing import TYPE_CHECKING

from inference_platform.components.common.exports import lazy_exports

if TYPE_CHECKING:
    from inference_platform.components.multilang.cluster import Cluster, ClusterArgs, SupportType
    from inference_platform.components.multilang.edge_gateway import (
        CircuitBreaker,
        Client,
        EdgeGateway,
        EdgeGatewayArgs,
        Endpoint,
        PathMatch,
        RouteGroup,
        Tier,
    )
    from inference_platform.components.multilang.inference_service import (
        InferenceService,
        InferenceServiceArgs,
        ModelSourceKind,
        Toleration,
    )
    from inference_platform.components.multilang.model_store import (
        ColdStorageClass,
        ModelStore,
        ModelStoreArgs,
        ModelStoreLifecycle,
    )
    from inference_platform.components.multilang.network import NatGateways, Network, NetworkArgs
    from inference_platform.components.multilang.node_pool import (
        AmiFamily,
        NodePool,
        NodePoolArgs,
        NodePoolSpec,
    )
    from inference_platform.components.multilang.public_endpoint import PublicEndpoint, PublicEndpointArgs, Waf

__all__ = [
    "AmiFamily",
    "CircuitBreaker",
    "Client",
    "Cluster",
    "ClusterArgs",
    "ColdStorageClass",
    "EdgeGateway",
    "EdgeGatewayArgs",
    "Endpoint",
    "InferenceService",
    "InferenceServiceArgs",
    "ModelSourceKind",
    "ModelStore",
    "ModelStoreArgs",
    "ModelStoreLifecycle",
    "NatGateways",
    "Network",
    "NetworkArgs",
    "NodePool",
    "NodePoolArgs",
    "NodePoolSpec",
    "PathMatch",
    "PublicEndpoint",
    "PublicEndpointArgs",
    "RouteGroup",
    "SupportType",
    "Tier",
    "Toleration",
    "Waf",
]

# Imported on first use (components/common/exports.py): importing this package loads no Pulumi module.
_EXPORTS = {
    "cluster": ("Cluster", "ClusterArgs", "SupportType"),
    "edge_gateway": (
        "CircuitBreaker",
        "Client",
        "EdgeGateway",
        "EdgeGatewayArgs",
        "Endpoint",
        "PathMatch",
        "RouteGroup",
        "Tier",
    ),
    "inference_service": ("InferenceService", "InferenceServiceArgs", "ModelSourceKind", "Toleration"),
    "model_store": ("ColdStorageClass", "ModelStore", "ModelStoreArgs", "ModelStoreLifecycle"),
    "network": ("NatGateways", "Network", "NetworkArgs"),
    "node_pool": ("AmiFamily", "NodePool", "NodePoolArgs", "NodePoolSpec"),
    "public_endpoint": ("PublicEndpoint", "PublicEndpointArgs", "Waf"),
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
