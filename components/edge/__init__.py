"""The edge: what stands between the internet and Triton. The ALB (AWS Load Balancer Controller, WAF,
certificate, ExternalDNS), Envoy Gateway (API keys per client, per-client rate limits in Redis, timeouts,
circuit breaking) and the policy both the cluster rendering and the local Envoy proof read.

This module is the area's public surface; the modules beside it hold the pieces.
"""

from typing import TYPE_CHECKING

from inference_platform.components.common.exports import lazy_exports

if TYPE_CHECKING:
    from inference_platform.catalog.edge_policy import CircuitBreaker, Client, EdgePolicy, Endpoint, RouteGroup, Tier
    from inference_platform.components.edge.client_credentials import ClientCredentials, ClientCredentialsArgs
    from inference_platform.components.edge.endpoint_picker import EndpointPicker, EndpointPickerArgs
    from inference_platform.components.edge.gateway import EdgeGateway, EdgeGatewayArgs
    from inference_platform.components.edge.gateway_api import Backend, GatewayTarget, render_gateway_objects
    from inference_platform.components.edge.load_balancer_controller import (
        LoadBalancerController,
        LoadBalancerControllerArgs,
    )
    from inference_platform.components.edge.model_routing import ModelBackend, ModelRoute, ModelRouting
    from inference_platform.components.edge.public_endpoint import PublicEndpoint, PublicEndpointArgs, WafRules
    from inference_platform.components.edge.rate_limit_store import RateLimitStore, RateLimitStoreArgs

__all__ = [
    "Backend",
    "CircuitBreaker",
    "Client",
    "ClientCredentials",
    "ClientCredentialsArgs",
    "EdgeGateway",
    "EdgeGatewayArgs",
    "EdgePolicy",
    "Endpoint",
    "EndpointPicker",
    "EndpointPickerArgs",
    "GatewayTarget",
    "LoadBalancerController",
    "LoadBalancerControllerArgs",
    "ModelBackend",
    "ModelRoute",
    "ModelRouting",
    "PublicEndpoint",
    "PublicEndpointArgs",
    "RateLimitStore",
    "RateLimitStoreArgs",
    "RouteGroup",
    "Tier",
    "WafRules",
    "render_gateway_objects",
]

# Imported on first use (components/common/exports.py): importing this package loads no Pulumi module.
_EXPORTS = {
    "endpoint_picker": ("EndpointPicker", "EndpointPickerArgs"),
    "model_routing": ("ModelBackend", "ModelRoute", "ModelRouting"),
    "client_credentials": ("ClientCredentials", "ClientCredentialsArgs"),
    "gateway": ("EdgeGateway", "EdgeGatewayArgs"),
    "gateway_api": ("Backend", "GatewayTarget", "render_gateway_objects"),
    "load_balancer_controller": ("LoadBalancerController", "LoadBalancerControllerArgs"),
    "inference_platform.catalog.edge_policy": (
        "CircuitBreaker",
        "Client",
        "EdgePolicy",
        "Endpoint",
        "RouteGroup",
        "Tier",
    ),
    "public_endpoint": ("PublicEndpoint", "PublicEndpointArgs", "WafRules"),
    "rate_limit_store": ("RateLimitStore", "RateLimitStoreArgs"),
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
