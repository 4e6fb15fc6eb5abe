"""The gateway's side of ``edge.routing: inference-pool`` (issue 29, Path B): the objects that put llm-d's endpoint
picker between Envoy Gateway and the replicas (``catalog.endpoint_picker`` says why each is what it is).

- The edge's EnvoyExtensionPolicies. Envoy Gateway v1.9.0 attaches one EnvoyExtensionPolicy to a route (a second
  is Conflicted, internal/gatewayapi/envoyextensionpolicy.go), and the picker must see only the OpenAI API: the
  ``<gateway>-credentials`` policy (its name is its URN) then targets the inference route alone and carries the
  edge's Lua and the ``extProc`` to the picker; the other route groups (the batch lane's Files and Batches API) get
  the same Lua from ``<gateway>-credentials-other-routes``. In the other modes one policy targets every route.
- An EnvoyPatchPolicy ``<gateway>-picker-no-wait`` (``catalog.endpoint_picker.no_wait_patch``).
- A ReferenceGrant in the serving namespace letting the gateway's EnvoyExtensionPolicies reach the picker's
  Service.

The inference route's ``loadBalancer`` (``endpointOverride``) is ``components.edge.routing.load_balancer``.
"""

from __future__ import annotations

from typing import Any

from inference_platform.catalog import endpoint_picker as picker
from inference_platform.catalog.edge_policy import INFERENCE_ROUTES, EdgePolicy

ENVOY_GATEWAY_API = "gateway.envoyproxy.io/v1alpha1"
GATEWAY_GROUP = "gateway.networking.k8s.io"
Manifest = dict[str, Any]


def credentials_policy_name(gateway: str) -> str:
    return f"{gateway}-credentials"


def extension_policies(
    policy: EdgePolicy,
    *,
    namespace: str,
    gateway: str,
    service_namespace: str,
    routes: list[tuple[str, dict[str, str]]],
) -> list[Manifest]:
    """The edge's EnvoyExtensionPolicies; ``routes`` is ``[(route group key, HTTPRoute targetRef)]``. The one
    named ``<gateway>-credentials`` comes last."""
    scripts = [{"type": "Inline", "inline": script} for script in policy.edge_lua]
    every = [ref for _, ref in routes]
    if policy.routing.mode != "inference-pool":
        return [_extension(namespace, credentials_policy_name(gateway), {"targetRefs": every, "lua": scripts})]
    inference = [ref for key, ref in routes if key == INFERENCE_ROUTES]
    others = [ref for key, ref in routes if key != INFERENCE_ROUTES]
    out = []
    if others:
        out.append(_extension(namespace, f"{gateway}-credentials-other-routes", {"targetRefs": others, "lua": scripts}))
    spec: dict[str, Any] = {"targetRefs": inference, "extProc": [picker.ext_proc(service_namespace)]}
    if scripts:
        spec["lua"] = scripts
    out.append(_extension(namespace, credentials_policy_name(gateway), spec))
    return out


def picker_objects(
    policy: EdgePolicy, *, namespace: str, gateway: str, listener: str, service_namespace: str
) -> list[Manifest]:
    """The no-wait patch and the ReferenceGrant to the picker's Service (``inference-pool`` only)."""
    if policy.routing.mode != "inference-pool":
        return []
    labels = {"app.kubernetes.io/part-of": "inference-edge"}
    return [
        {
            "apiVersion": ENVOY_GATEWAY_API,
            "kind": "EnvoyPatchPolicy",
            "metadata": {"name": f"{gateway}-picker-no-wait", "namespace": namespace, "labels": labels},
            "spec": picker.no_wait_patch(
                namespace=namespace, gateway=gateway, listener=listener, policy=credentials_policy_name(gateway)
            ),
        },
        {
            "apiVersion": "gateway.networking.k8s.io/v1beta1",
            "kind": "ReferenceGrant",
            "metadata": {"name": f"{gateway}-endpoint-picker", "namespace": service_namespace, "labels": labels},
            "spec": {
                "from": [{"group": "gateway.envoyproxy.io", "kind": "EnvoyExtensionPolicy", "namespace": namespace}],
                "to": [{"group": "", "kind": "Service", "name": picker.service_name()}],
            },
        },
    ]


def filter_order(policy: EdgePolicy) -> list[dict[str, str]]:
    """EnvoyProxy ``filterOrder`` entries beyond the Lua-before-api_key_auth one: with the picker, the global rate
    limit runs before ext_proc (Envoy Gateway v1.9.0's default order puts ext_proc at 100+i, the global rate limit
    at 303: the picker would schedule, and count in its prefix and load state, requests Redis then refuses)."""
    if policy.routing.mode != "inference-pool" or not policy.clients:
        return []
    return [{"name": "envoy.filters.http.ratelimit", "before": picker.EXT_PROC_FILTER}]


def _extension(namespace: str, name: str, spec: dict[str, Any]) -> Manifest:
    return {
        "apiVersion": ENVOY_GATEWAY_API,
        "kind": "EnvoyExtensionPolicy",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app.kubernetes.io/part-of": "inference-edge"}},
        "spec": spec,
    }
