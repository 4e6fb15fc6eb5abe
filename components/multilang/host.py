"""The component provider other Pulumi languages use: the facades of this area, hosted by the Pulumi SDK's
``component_provider_host`` (provider/__main__.py runs :func:`main` when the engine starts the plugin).

The SDK infers the schema from the facades' annotations (pulumi.provider.experimental.analyzer, pulumi
3.272.0): a TypedDict ``args`` per component, its keys' docstrings as descriptions, ``NotRequired`` keys
optional, Enums as enum types. provider/schema.json holds that schema, regenerated with ``python -m
inference_platform.components.multilang.schema`` (tests/components/multilang/test_schema.py fails while it
is stale).
"""

from __future__ import annotations

from importlib.metadata import version

import pulumi

from inference_platform.components.multilang.cluster import Cluster
from inference_platform.components.multilang.edge_gateway import EdgeGateway
from inference_platform.components.multilang.inference_service import InferenceService
from inference_platform.components.multilang.model_store import ModelStore
from inference_platform.components.multilang.network import Network
from inference_platform.components.multilang.node_pool import NodePool
from inference_platform.components.multilang.public_endpoint import PublicEndpoint

DISTRIBUTION = "inference-platform"
"""The distribution whose version the provider reports (the package version, CHANGELOG.md)."""
PACKAGE = "inference-platform"
"""The Pulumi package name: type tokens ``inference-platform:index:<Component>``, SDKs ``@pulumi/inference-platform``
(TypeScript) and ``pulumi_inference_platform`` (Python)."""
COMPONENTS: tuple[type[pulumi.ComponentResource], ...] = (
    Network,
    Cluster,
    NodePool,
    ModelStore,
    InferenceService,
    EdgeGateway,
    PublicEndpoint,
)
"""The components the provider hosts, in the order a program builds them."""


def main() -> None:
    """Serve the components over the provider gRPC interface: prints its port, as the engine expects."""
    from pulumi.provider.experimental import component_provider_host

    component_provider_host(list(COMPONENTS), PACKAGE, version=version(DISTRIBUTION))
