"""The gateway target the edge tests render against: the names the shipped stacks use."""

from __future__ import annotations

from inference_platform.components.edge.gateway_api import GatewayTarget

TARGET = GatewayTarget(
    namespace="envoy-gateway-system",
    name="inference-edge",
    service="triton",
    service_namespace="inference",
    port=9000,
    credentials_secret="inference-api-keys",
)
