"""The gateway's side of ``edge.routing: inference-pool`` (issue 29, Path B): the objects that put llm-d's endpoint
picker between Envoy Gateway and the replicas (``catalog.endpoint_picker`` says why each is what it is), and the
edge's EnvoyExtensionPolicies, which the picker shares with token metering (issue 30).

- The edge's EnvoyExtensionPolicies. Envoy Gateway v1.9.0 attaches one EnvoyExtensionPolicy to a route: a second
  one on the same route is Conflicted and does nothing ("Unable to target HTTPRoute <name>, another
  EnvoyExtensionPolicy has already attached to it", internal/gatewayapi/envoyextensionpolicy.go
  ``resolveEnvoyExtensionPolicyRouteTargetRef``). So everything the OpenAI route runs is in one policy,
  ``<gateway>-credentials`` (its name is its URN): the edge's Lua (``EdgePolicy.edge_lua``: the duplicate-credential
  check, then the affinity key or the picker's header strip), then the model routing script
  (``model_routing.with_model_routing``, at ``model_routing.routing_index``), then the token metering script, then
  the ``extProc`` to the picker (Envoy Gateway builds one Lua filter per ``lua`` entry in list order, ``buildLuas``,
  and orders them 13+i: the list is the order). That policy targets the OpenAI route alone, always: the metering
  script, the model routing script (it reads every POST body) and the picker are for it only. The other route groups
  (the batch lane's Files and Batches API, whose bodies hold ``usage`` keys) get the edge's own Lua from
  ``<gateway>-credentials-other-routes``. The pack's ``envoy-gateway-one-policy-per-target`` and
  ``gateway_api.gateway_summary`` refuse two policies of a kind on one target (``catalog.envoy_gateway_policies``).
- An EnvoyPatchPolicy ``<gateway>-picker-no-wait`` (``catalog.endpoint_picker.no_wait_patch``).
- A ReferenceGrant in the serving namespace letting the gateway's EnvoyExtensionPolicies reach the picker's
  Service.

The HTTP filters then run in this order on a request to the OpenAI route (Envoy Gateway v1.9.0
internal/xds/translator/httpfilters.go: Lua 13+i in the policy's order, ext_proc 100+i, the global rate limit 303,
router 310; the EnvoyProxy's ``filterOrder`` moves every Lua before api_key_auth (7) and, with the picker, the
rate limit before ext_proc): the credential check, the affinity key (envoy) or the destination-header strip
(inference-pool), the token metering script (sets the meter and period headers; reads the answer's usage), api_key_auth,
the request buffer, the global rate limit (requests per minute and the token limits' check), the picker's ext_proc,
the router. So a request refused by a limit is never scheduled by the picker, the picker's header cannot come from
a client, and the token charge (the rate limit's stream-done descriptors) reads what the metering script wrote.
tests/components/edge/test_filter_order.py derives the order from both renderings.

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
    metering: str | None = None,
) -> list[Manifest]:
    """The edge's EnvoyExtensionPolicies; ``routes`` is ``[(route group key, HTTPRoute targetRef)]``, ``metering``
    the token metering script when the OpenAI route is metered. The one named ``<gateway>-credentials`` targets the
    OpenAI route alone and comes last; no route is the target of two."""
    scripts = [{"type": "Inline", "inline": script} for script in policy.edge_lua]
    picked = policy.routing.mode == "inference-pool"
    inference = [ref for key, ref in routes if key == INFERENCE_ROUTES]
    others = [ref for key, ref in routes if key != INFERENCE_ROUTES]
    out = []
    if others and scripts:
        out.append(_extension(namespace, f"{gateway}-credentials-other-routes", {"targetRefs": others, "lua": scripts}))
    spec: dict[str, Any] = {"targetRefs": inference}
    lua = scripts + ([{"type": "Inline", "inline": metering}] if metering is not None else [])
    if lua:
        spec["lua"] = lua
    if picked:
        spec["extProc"] = [picker.ext_proc(service_namespace)]
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
