"""How the cluster's gateway picks a replica (``edge.routing``, issue 29), as Envoy Gateway v1.9.0 objects.

What each mode renders (``catalog.edge_routing`` says why each mode exists):

- the inference route's ``BackendTrafficPolicy.loadBalancer`` (merged into the Gateway's): ``RoundRobin``,
  ``LeastRequest`` with ``endpointOverride`` on the endpoint picker's header (``inference-pool``: least request is
  the fail-open fallback, ``components.edge.inference_pool``), or ``ConsistentHash``
  of type ``Headers`` on ``x-prefix-affinity`` (``envoy``), which Envoy Gateway renders as Maglev with only a
  table size (``internal/xds/translator/cluster.go`` v1.9.0);
- ``envoy`` only: the affinity script in the edge's one ``EnvoyExtensionPolicy`` (``EdgePolicy.edge_lua``), a
  ``ClientTrafficPolicy.connection.bufferLimit`` large enough for the script to read a whole request body (the
  EnvoyProxy's ``filterOrder`` moves every Lua filter before api_key_auth and so before the buffer filter, which
  is what otherwise raises the limit; Envoy Gateway's listener default is 32768 bytes,
  ``internal/xds/translator/listener.go``), and the load bound: an ``EnvoyPatchPolicy`` adding
  ``consistent_hashing_lb_config.hash_balance_factor`` to the route's cluster, which Envoy Gateway names
  ``httproute/<namespace>/<route>/rule/<index>`` (``internal/gatewayapi/helpers.go`` ``irRouteDestinationName``;
  the name holds while backends are not merged, ``EnvoyProxy.spec.mergeBackends`` unset, and ConsistentHash
  itself keeps a rule's backends in one cluster, ``internal/gatewayapi/route.go``). EnvoyPatchPolicy JSON patches
  address the proto field names (``internal/xds/translator/jsonpatch.go``: ``UseProtoNames: true``).

The local Envoy (``inferctl.serving.edge_envoy``) renders the same three things from the same functions' data.
"""

from __future__ import annotations

from typing import Any, Final

from inference_platform.catalog.edge_routing import AFFINITY_HEADER, MAGLEV_TABLE_SIZE, Routing
from inference_platform.catalog.endpoint_picker import DESTINATION_HEADER

CLUSTER_TYPE: Final = "type.googleapis.com/envoy.config.cluster.v3.Cluster"
# The Maglev policy Envoy Gateway renders is the cluster's only load-balancing policy (cluster.go v1.9.0).
BALANCE_FACTOR_PATH: Final = (
    "/load_balancing_policy/policies/0/typed_extension_config/typed_config/consistent_hashing_lb_config"
)
LB_TYPES: Final = {"round-robin": "RoundRobin", "inference-pool": "LeastRequest", "envoy": "ConsistentHash"}


def load_balancer(routing: Routing) -> dict[str, Any]:
    """``BackendTrafficPolicy.spec.loadBalancer`` of the inference route."""
    if routing.mode == "inference-pool":
        # The endpoint picker's pick when it gave a usable one, else least request: EndpointOverride "If the override
        # endpoints are not available, the configured load balancer policy will be used as fallback"
        # (api/v1alpha1/loadbalancer_types.go v1.9.0), rendered as Envoy's override_host policy (cluster.go).
        return {"type": "LeastRequest", "endpointOverride": {"extractFrom": [{"header": DESTINATION_HEADER}]}}
    if routing.mode != "envoy":
        return {"type": LB_TYPES[routing.mode]}
    return {
        "type": "ConsistentHash",
        "consistentHash": {"type": "Headers", "headers": [{"name": AFFINITY_HEADER}], "tableSize": MAGLEV_TABLE_SIZE},
    }


def route_cluster_name(namespace: str, route: str, rule: int = 0) -> str:
    """The Envoy cluster Envoy Gateway v1.9.0 makes for rule ``rule`` of HTTPRoute ``namespace/route``."""
    return f"httproute/{namespace}/{route}/rule/{rule}"


def bounded_load_patch(routing: Routing, *, namespace: str, gateway: str, route: str) -> dict[str, Any] | None:
    """The ``EnvoyPatchPolicy`` spec adding Envoy's bounded load to the inference route's Maglev cluster
    (``envoy`` mode only)."""
    if routing.mode != "envoy":
        return None
    return {
        "targetRef": {"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": gateway},
        "type": "JSONPatch",
        "jsonPatches": [
            {
                "type": CLUSTER_TYPE,
                "name": route_cluster_name(namespace, route),
                "operation": {
                    "op": "add",
                    "path": BALANCE_FACTOR_PATH,
                    "value": {"hash_balance_factor": routing.load_bound_percent},
                },
            }
        ],
    }
