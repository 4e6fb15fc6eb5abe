"""The gateway in the cluster as Gateway API and Envoy Gateway objects, rendered from the edge policy.

Plain dicts (what ``kubectl apply`` and pulumi-kubernetes ``CustomResource`` take), so they are
checked here without a cluster: a ``Gateway`` behind the ALB, an ``HTTPRoute`` and a ``GRPCRoute``
to Triton's Service, and the Envoy Gateway policies attached to them:

- the routes admit only the edge policy's allow-list: ``Exact`` path + method matches of the public
  models' inference, metadata and readiness endpoints and the health endpoints (HTTPRoute), and
  ``Exact`` service + method matches of the admitted gRPC methods (GRPCRoute). Anything else matches no
  route and Envoy answers 404. (Gateway API v1.6.1 as bundled by Envoy Gateway v1.9.0: a rule without
  matches, or a match without a path, is ``PathPrefix /``; a GRPCRoute match naming only the service is
  a prefix over all its methods.)

- ``SecurityPolicy.apiKeyAuth``: keys from an Opaque Secret (one data key per client id, synced
  from Secrets Manager by the CSI driver), client id forwarded, key stripped (``sanitize``);
- ``BackendTrafficPolicy`` on the Gateway (so on both routes): a global rate limit per client id
  (Redis-backed, one bucket per client across HTTP and gRPC), circuit breaking, passive health checks
  (outlier detection), retries only before any byte was sent;
- a second ``BackendTrafficPolicy`` on the HTTPRoute only, merged into the Gateway's (``mergeType``): the
  request-body limit (``requestBuffer``, 413 beyond it). Not on the GRPCRoute: Envoy Gateway documents
  request buffering as incompatible with gRPC streaming (a ModelStreamInfer request stream stays open), and
  one policy applies to all its targets, so the limit needs its own policy; merged rather than a second
  route-level policy because a route takes one route-level policy, and the rate-limit rules must stay in
  one policy to share their bucket (``shared``);
- an ``EnvoyExtensionPolicy`` on both routes: a Lua script refusing a request with more than one API-key
  header (400), which the ``EnvoyProxy``'s ``filterOrder`` runs before api_key_auth (Envoy Gateway's
  default order puts Lua after it, where ``sanitize`` has already removed every copy of the header, and
  api_key_auth itself reads only the first). Chosen over the alternatives at v1.9.0: route header matches
  see each value alone (no way to count them), the SecurityPolicy's authorization (RBAC) runs after
  api_key_auth, and an EnvoyPatchPolicy depends on generated xDS names and must be enabled gateway-wide;
  filterOrder and Lua are both documented API;
- ``ClientTrafficPolicy``: connection and stream idle timeouts equal to the ALB idle timeout, and a
  request-headers timeout (``requestHeadersReceivedTimeout``: a slow-header connection is closed).

``inference_platform.inferctl.serving.edge_envoy`` renders the same policy as an Envoy bootstrap for the local proof;
``gateway_summary`` and its ``bootstrap_summary`` read both back for the agreement test.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from inference_platform.components.edge.policy import (
    API_KEY_AUTH_FILTER,
    GRPC_SERVICE,
    LUA_FILTER,
    OUTLIER_BASE_EJECTION_SECONDS,
    OUTLIER_CONSECUTIVE_5XX,
    OUTLIER_INTERVAL_SECONDS,
    OUTLIER_MAX_EJECTION_PERCENT,
    OVERLOAD_RETRY_AFTER_SECONDS,
    RETRY_ON,
    EdgePolicy,
)

GATEWAY_API = "gateway.networking.k8s.io/v1"
GATEWAY_GROUP = "gateway.networking.k8s.io"
ENVOY_GATEWAY_API = "gateway.envoyproxy.io/v1alpha1"
DEFAULT_GATEWAY_CLASS = "envoy-gateway"
DEFAULT_LISTENER_PORT = 8080
# Label on the Envoy proxy pods: what Triton's NetworkPolicy admits.
PROXY_LABEL = "inference.platform/edge-gateway"
Manifest = dict[str, Any]


@dataclass(frozen=True, kw_only=True)
class GatewayTarget:
    """Where the gateway runs and what it routes to."""

    namespace: str
    """Required. Namespace of the Gateway, its routes, policies and credentials (Envoy Gateway's own, where
    its Envoy proxies run and the ALB's Ingresses point)."""
    name: str
    """Required. Name of the Gateway; routes and policies are ``<name>-<role>``."""
    service: str
    """Required. Triton's Service."""
    service_namespace: str
    """Required. Triton's namespace; a ReferenceGrant there lets the routes reach the Service."""
    http_port: int
    """Required. The Service's HTTP port."""
    grpc_port: int
    """Required. The Service's gRPC port."""
    credentials_secret: str
    """Required. Opaque Secret holding ``<client id>: <API key>`` (synced from Secrets Manager)."""
    hostname: str | None = None
    """Default: any. The API hostname the routes answer for (``edge.domain``)."""
    gateway_class: str = DEFAULT_GATEWAY_CLASS
    """Default ``envoy-gateway``. The GatewayClass of the Envoy Gateway install."""
    listener_port: int = DEFAULT_LISTENER_PORT
    """Default 8080. Port the ALB's target group sends to (TLS ends at the ALB)."""
    proxy_service: str = ""
    """Default ``<name>``. Name of the Envoy proxies' ClusterIP Service (the Ingress backend)."""
    proxy_replicas: int = 2
    """Default 2. Envoy proxy pods (the ALB balances over them)."""

    @property
    def envoy_service(self) -> str:
        return self.proxy_service or self.name


def render_gateway_objects(policy: EdgePolicy, target: GatewayTarget) -> list[Manifest]:
    """Gateway, routes and policies, in the order they can be applied."""
    http_route = f"{target.name}-http"
    grpc_route = f"{target.name}-grpc"
    routes = [_ref("HTTPRoute", http_route), _ref("GRPCRoute", grpc_route)]
    objects = [
        _envoy_proxy(target),
        _gateway(target),
        _http_route(policy, target, http_route),
        _grpc_route(policy, target, grpc_route),
        _client_traffic_policy(policy, target),
        _backend_traffic_policy(policy, target),
        _request_body_policy(policy, target, routes[0]),
    ]
    if policy.auth_enabled:
        objects.append(_security_policy(policy, target, routes))
        objects.append(_credential_check(policy, target, routes))
    if target.service_namespace != target.namespace:
        objects.append(_reference_grant(target))
    return objects


def gateway_summary(objects: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Clients, limits, timeouts and circuit-breaker limits read back from rendered objects (the same
    keys as ``inference_platform.inferctl.serving.edge_envoy.bootstrap_summary``)."""
    objects = list(objects)
    by_kind = {o["kind"]: o for o in objects if o["kind"] not in ("ReferenceGrant", "BackendTrafficPolicy")}
    policies = [o["spec"] for o in objects if o["kind"] == "BackendTrafficPolicy"]
    # The Gateway's policy, and what the route-level ones merged into it add per route kind.
    (backend,) = [p for p in policies if "mergeType" not in p]
    merged = {ref["kind"]: p for p in policies if "mergeType" in p for ref in p["targetRefs"]}
    security = by_kind.get("SecurityPolicy")
    client = by_kind["ClientTrafficPolicy"]["spec"]
    extension = by_kind.get("EnvoyExtensionPolicy")
    lua = extension["spec"]["lua"][0]["inline"] if extension else None
    order = by_kind["EnvoyProxy"]["spec"].get("filterOrder", [])
    rules = backend.get("rateLimit", {}).get("global", {}).get("rules", [])
    per_client = {}
    for rule in rules:
        header = rule["clientSelectors"][0]["headers"][0]
        assert rule["limit"]["unit"] == "Minute"
        per_client[header["value"]] = rule["limit"]["requests"]
    route_timeouts = {backend["timeout"]["http"]["requestTimeout"]} | {
        rule["timeouts"]["request"]
        for kind in ("HTTPRoute", "GRPCRoute")
        for rule in by_kind[kind]["spec"]["rules"]
        if "timeouts" in rule
    }
    cb = backend["circuitBreaker"]
    return {
        "clients": sorted(per_client) if security else [],
        "client_id_header": security["spec"]["apiKeyAuth"]["forwardClientIDHeader"] if security else None,
        "requests_per_minute": per_client,
        "http_endpoints": sorted(
            _http_match(match)
            for rule in by_kind["HTTPRoute"]["spec"]["rules"]
            for match in rule.get("matches") or [{}]
        ),
        "grpc_paths": sorted(
            _grpc_match(match)
            for rule in by_kind["GRPCRoute"]["spec"]["rules"]
            for match in rule.get("matches") or [{}]
        ),
        "stream_idle_timeout": client["timeout"]["http"]["streamIdleTimeout"],
        "connection_idle_timeout": backend["timeout"]["http"]["connectionIdleTimeout"],
        "route_timeouts": sorted(route_timeouts),
        "request_headers_timeout": client["timeout"]["http"]["requestHeadersReceivedTimeout"],
        "credential_lua": lua,
        "credential_lua_before_auth": bool(lua and security)
        and {"name": LUA_FILTER, "before": API_KEY_AUTH_FILTER} in order,
        "max_request_bytes": {
            name: _buffer_limit(merged.get(kind, backend))
            for name, kind in (("http", "HTTPRoute"), ("grpc", "GRPCRoute"))
        },
        "retry_on": sorted({",".join(backend["retry"]["retryOn"]["triggers"])}),
        "max_connections": cb["maxConnections"],
        "max_pending_requests": cb["maxPendingRequests"],
        "max_parallel_requests": cb["maxParallelRequests"],
        "overload_retry_after": next(
            h["value"]
            for o in backend["responseOverride"]
            for h in o["response"]["header"]["set"]
            if h["name"] == "retry-after"
        ),
    }


def _buffer_limit(spec: Mapping[str, Any]) -> int | None:
    """``requestBuffer.limit`` of a BackendTrafficPolicy spec in bytes (we render plain byte counts)."""
    limit = spec.get("requestBuffer", {}).get("limit")
    return int(limit) if limit is not None else None


def _http_match(match: Mapping[str, Any]) -> tuple[str, str]:
    """(method or ``*``, ``<type> <value>``) of one HTTPRoute match, with Gateway API's defaults: no path is
    ``PathPrefix /``, a path without a type is ``PathPrefix``."""
    path = match.get("path") or {}
    return match.get("method", "*"), f"{path.get('type', 'PathPrefix')} {path.get('value', '/')}"


def _grpc_match(match: Mapping[str, Any]) -> str:
    """What one GRPCRoute match admits, the way Envoy Gateway v1.9.0 translates it
    (``internal/gatewayapi/route.go``, ``processGRPCRouteMethodExact``): service and method give the exact
    path, a service alone a prefix over all its methods, a method alone a suffix, no method match every
    path."""
    method = match.get("method")
    if not method:
        return "PathPrefix /"
    service, name = method.get("service"), method.get("method")
    if method.get("type", "Exact") != "Exact":
        return f"RegularExpression /{service or '*'}/{name or '*'}"
    if service and name:
        return f"Exact /{service}/{name}"
    return f"Prefix /{service}" if service else f"Suffix /{name}"


def _envoy_proxy(target: GatewayTarget) -> Manifest:
    """The proxies' own shape: a ClusterIP Service with a fixed name (the Ingress backend; never a
    LoadBalancer or NodePort: the ALB is the only way in), hardened pods."""
    return {
        "apiVersion": ENVOY_GATEWAY_API,
        "kind": "EnvoyProxy",
        "metadata": _meta(target, f"{target.name}-proxy"),
        "spec": {
            "provider": {
                "type": "Kubernetes",
                "kubernetes": {
                    "envoyService": {"name": target.envoy_service, "type": "ClusterIP"},
                    "envoyDeployment": {
                        "replicas": target.proxy_replicas,
                        "pod": {"labels": {PROXY_LABEL: target.name}},
                    },
                },
            },
            # The duplicate-credential Lua must see the key headers before api_key_auth strips them
            # (api/v1alpha1/envoyproxy_types.go FilterOrder, internal/xds/translator/httpfilters.go v1.9.0).
            "filterOrder": [{"name": LUA_FILTER, "before": API_KEY_AUTH_FILTER}],
        },
    }


def _reference_grant(target: GatewayTarget) -> Manifest:
    return {
        "apiVersion": "gateway.networking.k8s.io/v1beta1",
        "kind": "ReferenceGrant",
        "metadata": {
            "name": f"{target.name}-routes",
            "namespace": target.service_namespace,
            "labels": {"app.kubernetes.io/part-of": "inference-edge"},
        },
        "spec": {
            "from": [
                {"group": GATEWAY_GROUP, "kind": kind, "namespace": target.namespace}
                for kind in ("HTTPRoute", "GRPCRoute")
            ],
            "to": [{"group": "", "kind": "Service", "name": target.service}],
        },
    }


def _backend(target: GatewayTarget, port: int) -> dict[str, Any]:
    ref: dict[str, Any] = {"name": target.service, "port": port}
    if target.service_namespace != target.namespace:
        ref["namespace"] = target.service_namespace
    return ref


def _gateway(target: GatewayTarget) -> Manifest:
    listener: dict[str, Any] = {
        "name": "http",
        "protocol": "HTTP",
        "port": target.listener_port,
        "allowedRoutes": {"namespaces": {"from": "Same"}},
    }
    if target.hostname:
        listener["hostname"] = target.hostname
    return {
        "apiVersion": GATEWAY_API,
        "kind": "Gateway",
        "metadata": _meta(target, target.name),
        "spec": {
            "gatewayClassName": target.gateway_class,
            "listeners": [listener],
            "infrastructure": {
                "parametersRef": {
                    "group": "gateway.envoyproxy.io",
                    "kind": "EnvoyProxy",
                    "name": f"{target.name}-proxy",
                }
            },
        },
    }


def _http_route(policy: EdgePolicy, target: GatewayTarget, name: str) -> Manifest:
    spec: dict[str, Any] = {
        "parentRefs": [{"name": target.name, "sectionName": "http"}],
        "rules": [
            {
                "matches": [
                    {"path": {"type": "Exact", "value": e.path}, "method": e.method} for e in policy.http_endpoints
                ],
                "backendRefs": [_backend(target, target.http_port)],
                # Gateway API's zero duration disables the whole-request clock: a stream ends when the
                # model stops; silence is bounded by the stream idle timeout instead.
                "timeouts": {"request": "0s"},
            }
        ],
    }
    if target.hostname:
        spec["hostnames"] = [target.hostname]
    return {"apiVersion": GATEWAY_API, "kind": "HTTPRoute", "metadata": _meta(target, name), "spec": spec}


def _grpc_route(policy: EdgePolicy, target: GatewayTarget, name: str) -> Manifest:
    spec: dict[str, Any] = {
        "parentRefs": [{"name": target.name, "sectionName": "http"}],
        "rules": [
            {
                "matches": [
                    {"method": {"type": "Exact", "service": GRPC_SERVICE, "method": method}}
                    for method in policy.grpc_methods
                ],
                "backendRefs": [_backend(target, target.grpc_port)],
            }
        ],
    }
    if target.hostname:
        spec["hostnames"] = [target.hostname]
    return {"apiVersion": GATEWAY_API, "kind": "GRPCRoute", "metadata": _meta(target, name), "spec": spec}


def _security_policy(policy: EdgePolicy, target: GatewayTarget, routes: list[dict[str, str]]) -> Manifest:
    return {
        "apiVersion": ENVOY_GATEWAY_API,
        "kind": "SecurityPolicy",
        "metadata": _meta(target, f"{target.name}-api-keys"),
        "spec": {
            "targetRefs": routes,
            "apiKeyAuth": {
                "credentialRefs": [{"group": "", "kind": "Secret", "name": target.credentials_secret}],
                "extractFrom": [{"headers": [policy.api_key_header]}],
                "forwardClientIDHeader": policy.client_id_header,
                "sanitize": True,
            },
        },
    }


def _credential_check(policy: EdgePolicy, target: GatewayTarget, routes: list[dict[str, str]]) -> Manifest:
    """The duplicate-credential refusal on both routes (the script of ``EdgePolicy.credential_lua``)."""
    return {
        "apiVersion": ENVOY_GATEWAY_API,
        "kind": "EnvoyExtensionPolicy",
        "metadata": _meta(target, f"{target.name}-credentials"),
        "spec": {"targetRefs": routes, "lua": [{"type": "Inline", "inline": policy.credential_lua}]},
    }


def _backend_traffic_policy(policy: EdgePolicy, target: GatewayTarget) -> Manifest:
    cb = policy.circuit_breaker
    spec: dict[str, Any] = {
        # The Gateway: both routes, and the parent the HTTPRoute's body-limit policy merges into.
        "targetRefs": [{"group": GATEWAY_GROUP, "kind": "Gateway", "name": target.name}],
        "circuitBreaker": {
            "maxConnections": cb.max_connections,
            "maxPendingRequests": cb.max_pending_requests,
            "maxParallelRequests": policy.parallel_requests,
        },
        "healthCheck": {
            "passive": {
                "consecutive5XxErrors": OUTLIER_CONSECUTIVE_5XX,
                "interval": f"{OUTLIER_INTERVAL_SECONDS}s",
                "baseEjectionTime": f"{OUTLIER_BASE_EJECTION_SECONDS}s",
                "maxEjectionPercent": OUTLIER_MAX_EJECTION_PERCENT,
            }
        },
        "retry": {"numRetries": policy.retries, "retryOn": {"triggers": list(RETRY_ON)}},
        # Envoy's own 503 when the circuit breaker is open (it marks it x-envoy-overloaded) tells the
        # client when to come back, like the local Envoy's local-reply mapper on the UO flag.
        "responseOverride": [
            {
                "match": {
                    "statusCodes": [{"type": "Value", "value": 503}],
                    "responseHeaders": [{"name": "x-envoy-overloaded", "value": {"type": "Exact", "value": "true"}}],
                },
                "source": "Local",
                "response": {"header": {"set": [{"name": "retry-after", "value": str(OVERLOAD_RETRY_AFTER_SECONDS)}]}},
            }
        ],
        # "0s" turns Envoy's 15 s default route timeout off for gRPC too (GRPCRoute has no timeouts).
        "timeout": {"http": {"connectionIdleTimeout": f"{policy.idle_timeout_seconds}s", "requestTimeout": "0s"}},
    }
    if policy.clients:
        spec["rateLimit"] = {
            "type": "Global",
            "global": {
                "rules": [
                    {
                        "clientSelectors": [
                            {"headers": [{"name": policy.client_id_header, "type": "Exact", "value": c.client_id}]}
                        ],
                        "limit": {"requests": c.tier.requests_per_minute, "unit": "Minute"},
                        # One bucket per client across both routes (Envoy Gateway's default is one per
                        # route: HTTP and gRPC would each get the full limit).
                        "shared": True,
                    }
                    for c in policy.clients
                ]
            },
        }
    return {
        "apiVersion": ENVOY_GATEWAY_API,
        "kind": "BackendTrafficPolicy",
        "metadata": _meta(target, f"{target.name}-backend"),
        "spec": spec,
    }


def _request_body_policy(policy: EdgePolicy, target: GatewayTarget, http_route: dict[str, str]) -> Manifest:
    """The HTTP request-body limit, merged into the Gateway's BackendTrafficPolicy for the HTTPRoute only.

    Envoy Gateway v1.9.0 translates ``requestBuffer.limit`` into an ``envoy.filters.http.buffer`` filter,
    disabled at the listener and enabled per route with ``max_request_bytes``
    (``internal/xds/translator/request_buffer.go``): a body beyond it, sized or chunked, is 413. A plain byte
    count (the CRD's pattern takes digits with an optional suffix)."""
    return {
        "apiVersion": ENVOY_GATEWAY_API,
        "kind": "BackendTrafficPolicy",
        "metadata": _meta(target, f"{target.name}-http-body"),
        "spec": {
            "targetRefs": [http_route],
            "mergeType": "StrategicMerge",
            "requestBuffer": {"limit": str(policy.max_request_bytes)},
        },
    }


def _client_traffic_policy(policy: EdgePolicy, target: GatewayTarget) -> Manifest:
    idle = f"{policy.idle_timeout_seconds}s"
    return {
        "apiVersion": ENVOY_GATEWAY_API,
        "kind": "ClientTrafficPolicy",
        "metadata": _meta(target, f"{target.name}-client"),
        "spec": {
            "targetRefs": [{"group": GATEWAY_GROUP, "kind": "Gateway", "name": target.name}],
            # Envoy Gateway's defaults (and Envoy AI Gateway's implicit 60 s) would cut a silent prefill.
            "timeout": {
                "http": {
                    "idleTimeout": idle,
                    "streamIdleTimeout": idle,
                    # HCM request_headers_timeout (internal/xds/translator/listener.go v1.9.0). Not
                    # requestReceivedTimeout: that is request_timeout, the whole request's clock.
                    "requestHeadersReceivedTimeout": f"{policy.request_headers_timeout_seconds}s",
                }
            },
            "headers": {"withUnderscoresAction": "RejectRequest"},
        },
    }


def _ref(kind: str, name: str) -> dict[str, str]:
    return {"group": GATEWAY_GROUP, "kind": kind, "name": name}


def _meta(target: GatewayTarget, name: str) -> dict[str, Any]:
    return {"name": name, "namespace": target.namespace, "labels": {"app.kubernetes.io/part-of": "inference-edge"}}
