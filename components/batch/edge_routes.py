"""The Batch API at the edge: one route group behind the synchronous API's authentication and per-client limits.

``/v1/files`` and ``/v1/batches`` (PathPrefix, segment-wise: ``/v1/filesx`` matches nothing) to the Batch API
Service, with the methods the API serves (its routes: POST/GET files, DELETE a file, GET content; POST/GET batches,
POST cancel). Not buffered: an input file of up to ``batch.maxFileBytes`` streams through Envoy and the API refuses
a larger one itself (413); buffering it whole would hold 100 MiB per upload in every proxy. The edge's rendering of
the group (HTTPRoute, ReferenceGrant in the lane's namespace, the SecurityPolicy that covers it) is
components/edge's (``EdgePolicy.extra_routes``, ``GatewayTarget.backends``).
"""

from __future__ import annotations

from inference_platform.catalog.edge_policy import Endpoint, RouteGroup
from inference_platform.components.batch import pods
from inference_platform.components.batch.workloads import DEFAULT_NAMESPACE
from inference_platform.components.edge.gateway_api import Backend

ROUTE_KEY = "batch"
FILES = "/v1/files"
BATCHES = "/v1/batches"


def route_group() -> RouteGroup:
    endpoints = tuple(
        Endpoint(method, path, "PathPrefix")
        for path, methods in ((FILES, ("GET", "POST", "DELETE")), (BATCHES, ("GET", "POST")))
        for method in methods
    )
    return RouteGroup(key=ROUTE_KEY, endpoints=endpoints, max_request_bytes=None)


def backend(namespace: str = DEFAULT_NAMESPACE) -> Backend:
    return Backend(key=ROUTE_KEY, service=pods.API, namespace=namespace, port=pods.API_PORT)
