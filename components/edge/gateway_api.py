"""The gateway in the cluster as Gateway API and Envoy Gateway objects, rendered from the edge policy.

Plain dicts (what ``kubectl apply`` and pulumi-kubernetes ``CustomResource`` take), so they are
checked here without a cluster: a ``Gateway`` behind the ALB, one ``HTTPRoute`` per route group of the
policy (the OpenAI API to the serving pods' OpenAI port; later groups to their own Services), and the Envoy
Gateway policies attached to them:

- the routes admit only the edge policy's allow-list: ``Exact`` path + method matches (``PathPrefix`` only
  where a later group asks for it). Anything else matches no route and Envoy answers 404. (Gateway API v1.6.1
  as bundled by Envoy Gateway v1.9.0: a rule without matches, or a match without a path, is ``PathPrefix
  /``.) There is no GRPCRoute: Triton's KServe v2 API, HTTP and gRPC, is not public (issue 20).

- ``SecurityPolicy.apiKeyAuth`` on every route: keys from an Opaque Secret (one data key per client id,
  synced from Secrets Manager by the CSI driver) read from the configured header, then ``Authorization``
  (Envoy's api_key_auth strips a ``Bearer `` prefix itself), client id forwarded, both headers stripped
  (``sanitize``);
- ``BackendTrafficPolicy`` on the Gateway (so on every route): a global rate limit per client id
  (Redis-backed, one bucket per client across all routes), circuit breaking, passive health checks
  (outlier detection), retries only before any byte was sent;
- one more ``BackendTrafficPolicy`` per route group with a body limit, on its HTTPRoute only, merged into the
  Gateway's (``mergeType``): the request-body limit (``requestBuffer``, 413 beyond it). Merged rather than a
  second route-level policy because a route takes one route-level policy, and the rate-limit rules must stay
  in one policy to share their bucket (``shared``); a group without a limit (a streamed upload) is not
  buffered;
- an ``EnvoyExtensionPolicy`` on every route: a Lua script refusing a request with more than one credential
  (400), which the ``EnvoyProxy``'s ``filterOrder`` runs before api_key_auth (Envoy Gateway's default order
  puts Lua after it, where ``sanitize`` has already removed every copy of the headers, and api_key_auth itself
  reads only the first). Chosen over the alternatives at v1.9.0: route header matches see each value alone
  (no way to count them), the SecurityPolicy's authorization (RBAC) runs after api_key_auth, and an
  EnvoyPatchPolicy depends on generated xDS names and must be enabled gateway-wide; filterOrder and Lua are
  both documented API. Envoy Gateway v1.9.0 attaches one policy of a kind to a target (a second is Conflicted and
  ignored: ``catalog.envoy_gateway_policies``), so the OpenAI route's policy carries every Lua of that route and its
  ``extProc`` (``inference_pool.extension_policies``), the other routes' policy the edge's own Lua; ``gateway_summary``
  refuses two policies of a kind on one target;
- ``ClientTrafficPolicy``: the stream idle timeout equal to the ALB idle timeout, the connection idle timeout
  longer than it (the ALB closes idle connections, never the proxy: ``EdgePolicy.downstream_idle_timeout_seconds``),
  and a request-headers timeout (``requestHeadersReceivedTimeout``: a slow-header connection is closed).

``inferctl.serving.edge_envoy`` renders the same policy as an Envoy bootstrap for the local proof;
``gateway_summary`` and its ``bootstrap_summary`` read both back for the agreement test.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from inference_platform.catalog.edge_policy import (
    API_KEY_AUTH_FILTER,
    INFERENCE_ROUTES,
    LUA_FILTER,
    OUTLIER_BASE_EJECTION_SECONDS,
    OUTLIER_CONSECUTIVE_5XX,
    OUTLIER_INTERVAL_SECONDS,
    OUTLIER_MAX_EJECTION_PERCENT,
    OVERLOAD_STATUS,
    RETRY_ON,
    EdgePolicy,
    RouteGroup,
)
from inference_platform.catalog.envoy_gateway_policies import conflict_problems
from inference_platform.catalog.serving_contract import EDGE_UPSTREAM_IDLE_SECONDS
from inference_platform.components.edge.error_overrides import response_overrides
from inference_platform.components.edge.inference_pool import extension_policies, filter_order, picker_objects
from inference_platform.components.edge.routing import BALANCE_FACTOR_PATH, bounded_load_patch, load_balancer
from inference_platform.components.edge.token_limits import token_rules
from inference_platform.components.edge.token_metering import is_metering_lua, metering_lua

GATEWAY_API = "gateway.networking.k8s.io/v1"
GATEWAY_GROUP = "gateway.networking.k8s.io"
ENVOY_GATEWAY_API = "gateway.envoyproxy.io/v1alpha1"
DEFAULT_GATEWAY_CLASS = "envoy-gateway"
DEFAULT_LISTENER_PORT = 8080
# Label on the Envoy proxy pods: what the serving pods' NetworkPolicy admits.
PROXY_LABEL = "inference.platform/edge-gateway"
Manifest = dict[str, Any]


@dataclass(frozen=True, kw_only=True)
class Backend:
    """The Service one extra route group goes to."""

    key: str
    """Required. The ``RouteGroup.key`` it serves."""
    service: str
    """Required."""
    namespace: str
    """Required. A namespace other than the gateway's gets a ReferenceGrant."""
    port: int
    """Required."""


@dataclass(frozen=True, kw_only=True)
class GatewayTarget:
    """Where the gateway runs and what it routes to."""

    namespace: str
    """Required. Namespace of the Gateway, its routes, policies and credentials (Envoy Gateway's own, where
    its Envoy proxies run and the ALB's Ingresses point)."""
    name: str
    """Required. Name of the Gateway; routes and policies are ``<name>-<role>``."""
    service: str
    """Required. The serving pods' Service."""
    service_namespace: str
    """Required. Its namespace; a ReferenceGrant there lets the routes reach the Service."""
    port: int
    """Required. The Service's OpenAI port (``serving_contract.OPENAI_PORT``): the inference group's backend."""
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
    backends: tuple[Backend, ...] = ()
    """Default none. The Service of each of the policy's ``extra_routes`` (matched by ``key``)."""

    @property
    def envoy_service(self) -> str:
        return self.proxy_service or self.name


def render_gateway_objects(policy: EdgePolicy, target: GatewayTarget) -> list[Manifest]:
    """Gateway, routes and policies, in the order they can be applied."""
    backends = _backends(policy, target)
    routes = [(group, route_name(target.name, group.key)) for group in policy.route_groups]
    refs = [_ref("HTTPRoute", name) for _, name in routes]
    objects = [
        _envoy_proxy(target, policy),
        _gateway(target),
        *(_http_route(group, target, name, backends[group.key]) for group, name in routes),
        _client_traffic_policy(policy, target),
        _backend_traffic_policy(policy, target),
        *(
            _request_body_policy(policy, group, target, name)
            for group, name in routes
            if group.max_request_bytes is not None
        ),
    ]
    if policy.auth_enabled:
        objects.append(_security_policy(policy, target, refs))
    if policy.edge_lua or policy.routing.mode == "inference-pool" or policy.metered:
        keyed = [(group.key, _ref("HTTPRoute", name)) for group, name in routes]
        objects += extension_policies(
            policy,
            namespace=target.namespace,
            gateway=target.name,
            service_namespace=target.service_namespace,
            routes=keyed,
            metering=metering_lua(policy.tokens.weights) if policy.metered else None,
        )
    objects += _bounded_load(policy, target)
    objects += _reference_grants(target, list(backends.values()))
    objects += picker_objects(
        policy,
        namespace=target.namespace,
        gateway=target.name,
        listener="http",
        service_namespace=target.service_namespace,
    )
    return objects


def route_name(gateway: str, key: str) -> str:
    """``<gateway>-http`` for the OpenAI API (the name it has always had: its URN), ``<gateway>-<key>`` else."""
    return f"{gateway}-http" if key == INFERENCE_ROUTES else f"{gateway}-{key}"


def gateway_summary(objects: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Clients, routes, limits, timeouts and circuit-breaker limits read back from rendered objects (the same
    keys as ``inference_platform.inferctl.serving.edge_envoy.bootstrap_summary``)."""
    objects = list(objects)
    # What the cluster's controller would ignore, neither rendering may run (catalog.envoy_gateway_policies).
    conflicts = conflict_problems(objects)
    if conflicts:
        raise ValueError("the cluster's Envoy Gateway would ignore a policy: " + "; ".join(conflicts))
    single = ("ReferenceGrant", "BackendTrafficPolicy", "HTTPRoute", "EnvoyExtensionPolicy")
    by_kind = {o["kind"]: o for o in objects if o["kind"] not in single}
    policies = [o["spec"] for o in objects if o["kind"] == "BackendTrafficPolicy"]
    # The Gateway's policy, and the body limits the route-level ones merged into it add per route.
    (backend,) = [p for p in policies if "mergeType" not in p]
    merged = {ref["name"]: p for p in policies if "mergeType" in p for ref in p["targetRefs"]}
    gateway = by_kind["Gateway"]["metadata"]["name"]
    http_routes = {o["metadata"]["name"]: o["spec"] for o in objects if o["kind"] == "HTTPRoute"}
    security = by_kind.get("SecurityPolicy")
    client = by_kind["ClientTrafficPolicy"]["spec"]
    extension = next((o for o in objects if o["metadata"]["name"] == f"{gateway}-credentials"), None)
    scripts = _lua_scripts(extension) if extension else []
    lua = scripts[0] if scripts and security else None
    inference_lb = merged.get(route_name(gateway, INFERENCE_ROUTES), {}).get("loadBalancer", {})
    patches = [p for o in objects if o["kind"] == "EnvoyPatchPolicy" for p in o["spec"]["jsonPatches"]]
    # Token metering (issue 30): the script in the inference route's policy, and the routes whose policy runs it.
    metered = [o for o in objects if o["kind"] == "EnvoyExtensionPolicy" and any(map(is_metering_lua, _lua_scripts(o)))]
    metering = next((s for o in metered for s in _lua_scripts(o) if is_metering_lua(s)), None)
    order = by_kind["EnvoyProxy"]["spec"].get("filterOrder", [])
    rules = backend.get("rateLimit", {}).get("global", {}).get("rules", [])
    per_client = {}
    for rule in rules:
        header = rule["clientSelectors"][0]["headers"][0]
        if "cost" in rule:  # a token limit (token_limits.token_rules; compared with the service's own config)
            continue
        assert rule["limit"]["unit"] == "Minute"
        per_client[header["value"]] = rule["limit"]["requests"]
    route_timeouts = {backend["timeout"]["http"]["requestTimeout"]} | {
        rule["timeouts"]["request"] for spec in http_routes.values() for rule in spec["rules"] if "timeouts" in rule
    }
    routes: dict[str, dict[str, Any]] = {
        _group_key(gateway, name): {
            "endpoints": sorted(_http_match(m) for rule in spec["rules"] for m in rule.get("matches") or [{}]),
            "max_request_bytes": _buffer_limit(merged.get(name, backend)),
        }
        for name, spec in http_routes.items()
    }
    cb = backend["circuitBreaker"]
    return {
        "clients": sorted(per_client) if security else [],
        "client_id_header": security["spec"]["apiKeyAuth"]["forwardClientIDHeader"] if security else None,
        "credential_headers": (
            [h for source in security["spec"]["apiKeyAuth"]["extractFrom"] for h in source.get("headers", [])]
            if security
            else []
        ),
        "credentials_stripped": bool(security and security["spec"]["apiKeyAuth"].get("sanitize")),
        # The route groups (keys) authenticated: every one, or a group would be open.
        "secured_routes": sorted(_group_key(gateway, r["name"]) for r in security["spec"]["targetRefs"])
        if security
        else [],
        "requests_per_minute": per_client,
        "metering_lua": metering,
        "metered_routes": sorted(_group_key(gateway, r["name"]) for o in metered for r in o["spec"]["targetRefs"]),
        "routes": routes,
        "http_endpoints": sorted(e for route in routes.values() for e in route["endpoints"]),
        "stream_idle_timeout": client["timeout"]["http"]["streamIdleTimeout"],
        "downstream_idle_timeout": client["timeout"]["http"]["idleTimeout"],
        "connection_idle_timeout": backend["timeout"]["http"]["connectionIdleTimeout"],
        "route_timeouts": sorted(route_timeouts),
        "request_headers_timeout": client["timeout"]["http"]["requestHeadersReceivedTimeout"],
        "credential_lua": lua,
        # Routing (issue 29): every Lua script in order, the inference route's balancer, its hash header, bound.
        "edge_lua": scripts,
        "load_balancer": inference_lb.get("type", "LeastRequest"),
        "hash_headers": [h["name"] for h in inference_lb.get("consistentHash", {}).get("headers", [])],
        "hash_balance_factor": next(
            (
                p["operation"]["value"]["hash_balance_factor"]
                for p in patches
                if p["operation"]["path"] == BALANCE_FACTOR_PATH
            ),
            None,
        ),
        "connection_buffer_limit": int(client.get("connection", {}).get("bufferLimit", 32768)),
        "credential_lua_before_auth": bool(lua and security)
        and {"name": LUA_FILTER, "before": API_KEY_AUTH_FILTER} in order,
        "retry_on": sorted({",".join(backend["retry"]["retryOn"]["triggers"])}),
        "max_connections": cb["maxConnections"],
        "max_pending_requests": cb["maxPendingRequests"],
        "max_parallel_requests": cb["maxParallelRequests"],
        "overload_retry_after": next(
            h["value"]
            for o in backend["responseOverride"]
            if o["match"]["statusCodes"][0]["value"] == OVERLOAD_STATUS
            for h in o["response"].get("header", {}).get("set", [])
            if h["name"] == "retry-after"
        ),
        # The edge's own refusals, status -> the body a client gets (the server's own errors are not rewritten).
        "error_bodies": {
            o["match"]["statusCodes"][0]["value"]: o["response"]["body"]["inline"]
            for o in backend["responseOverride"]
            if o.get("source") == "Local"
        },
    }


def _group_key(gateway: str, route: str) -> str:
    return INFERENCE_ROUTES if route == f"{gateway}-http" else route.removeprefix(f"{gateway}-")


def _buffer_limit(spec: Mapping[str, Any]) -> int | None:
    """``requestBuffer.limit`` of a BackendTrafficPolicy spec in bytes (we render plain byte counts)."""
    limit = spec.get("requestBuffer", {}).get("limit")
    return int(limit) if limit is not None else None


def _http_match(match: Mapping[str, Any]) -> tuple[str, str]:
    """(method or ``*``, ``<type> <value>``) of one HTTPRoute match, with Gateway API's defaults: no path is
    ``PathPrefix /``, a path without a type is ``PathPrefix``."""
    path = match.get("path") or {}
    return match.get("method", "*"), f"{path.get('type', 'PathPrefix')} {path.get('value', '/')}"


def _backends(policy: EdgePolicy, target: GatewayTarget) -> dict[str, Backend]:
    """Each route group's Service: the serving pods' for the OpenAI API, ``target.backends`` for the rest."""
    found = {b.key: b for b in target.backends}
    missing = sorted(g.key for g in policy.extra_routes if g.key not in found)
    if missing:
        raise ValueError(f"no backend for route group(s) {', '.join(missing)}")
    inference = Backend(
        key=INFERENCE_ROUTES, service=target.service, namespace=target.service_namespace, port=target.port
    )
    return {INFERENCE_ROUTES: inference, **{g.key: found[g.key] for g in policy.extra_routes}}


def _envoy_proxy(target: GatewayTarget, policy: EdgePolicy) -> Manifest:
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
            "filterOrder": [{"name": LUA_FILTER, "before": API_KEY_AUTH_FILTER}, *filter_order(policy)],
        },
    }


def _reference_grants(target: GatewayTarget, backends: list[Backend]) -> list[Manifest]:
    """One ReferenceGrant per backend namespace other than the gateway's, naming exactly its Services. The
    serving namespace's keeps its name ``<gateway>-routes`` (its URN)."""
    by_namespace: dict[str, list[str]] = {}
    for b in backends:
        if b.namespace != target.namespace:
            by_namespace.setdefault(b.namespace, [])
            if b.service not in by_namespace[b.namespace]:
                by_namespace[b.namespace].append(b.service)
    return [
        {
            "apiVersion": "gateway.networking.k8s.io/v1beta1",
            "kind": "ReferenceGrant",
            "metadata": {
                "name": f"{target.name}-routes" if ns == target.service_namespace else f"{target.name}-routes-{ns}",
                "namespace": ns,
                "labels": {"app.kubernetes.io/part-of": "inference-edge"},
            },
            "spec": {
                "from": [{"group": GATEWAY_GROUP, "kind": "HTTPRoute", "namespace": target.namespace}],
                "to": [{"group": "", "kind": "Service", "name": service} for service in services],
            },
        }
        for ns, services in by_namespace.items()
    ]


def _backend_ref(target: GatewayTarget, backend: Backend) -> dict[str, Any]:
    ref: dict[str, Any] = {"name": backend.service, "port": backend.port}
    if backend.namespace != target.namespace:
        ref["namespace"] = backend.namespace
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


def _http_route(group: RouteGroup, target: GatewayTarget, name: str, backend: Backend) -> Manifest:
    spec: dict[str, Any] = {
        "parentRefs": [{"name": target.name, "sectionName": "http"}],
        "rules": [
            {
                "matches": [{"path": {"type": e.match, "value": e.path}, "method": e.method} for e in group.endpoints],
                "backendRefs": [_backend_ref(target, backend)],
                # Gateway API's zero duration disables the whole-request clock: a stream ends when the
                # model stops; silence is bounded by the stream idle timeout instead.
                "timeouts": {"request": "0s"},
            }
        ],
    }
    if target.hostname:
        spec["hostnames"] = [target.hostname]
    return {"apiVersion": GATEWAY_API, "kind": "HTTPRoute", "metadata": _meta(target, name), "spec": spec}


def _security_policy(policy: EdgePolicy, target: GatewayTarget, routes: list[dict[str, str]]) -> Manifest:
    return {
        "apiVersion": ENVOY_GATEWAY_API,
        "kind": "SecurityPolicy",
        "metadata": _meta(target, f"{target.name}-api-keys"),
        "spec": {
            "targetRefs": routes,
            "apiKeyAuth": {
                "credentialRefs": [{"group": "", "kind": "Secret", "name": target.credentials_secret}],
                # In this order: the configured header, then Authorization (Envoy strips "Bearer " itself);
                # sanitize removes both before the server (internal/xds/translator/api_key_auth.go v1.9.0).
                "extractFrom": [{"headers": list(policy.credential_headers)}],
                "forwardClientIDHeader": policy.client_id_header,
                "sanitize": True,
            },
        },
    }


def _bounded_load(policy: EdgePolicy, target: GatewayTarget) -> list[Manifest]:
    """The load bound on the inference route's consistent hash (``components.edge.routing``), ``envoy`` mode."""
    spec = bounded_load_patch(
        policy.routing, namespace=target.namespace, gateway=target.name, route=route_name(target.name, INFERENCE_ROUTES)
    )
    if spec is None:
        return []
    return [
        {
            "apiVersion": ENVOY_GATEWAY_API,
            "kind": "EnvoyPatchPolicy",
            "metadata": _meta(target, f"{target.name}-bounded-load"),
            "spec": spec,
        }
    ]


def _lua_scripts(extension: Mapping[str, Any]) -> list[str]:
    return [entry["inline"] for entry in extension["spec"].get("lua", [])]


def _backend_traffic_policy(policy: EdgePolicy, target: GatewayTarget) -> Manifest:
    cb = policy.circuit_breaker
    spec: dict[str, Any] = {
        # The Gateway: every route, and the parent the routes' body-limit policies merge into.
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
        # The edge's own refusals in OpenAI's error shape (source Local: Envoy's replies only, never the
        # server's, which are OpenAI-shaped already). Envoy's 503 when the circuit breaker is open (it marks it
        # x-envoy-overloaded) also tells the client when to come back; the 429 carries the rate limiter's headers
        # and names the limit from the metadata its Lua leaves (components.edge.error_overrides).
        "responseOverride": response_overrides(policy),
        # "0s" turns Envoy's 15 s default route timeout off (the routes' own timeouts say the same). An idle
        # connection to a replica is closed by the edge before the server would (catalog.serving_contract).
        "timeout": {"http": {"connectionIdleTimeout": f"{EDGE_UPSTREAM_IDLE_SECONDS}s", "requestTimeout": "0s"}},
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
                        # One bucket per client across all routes (Envoy Gateway's default is one per
                        # route: each route group would get the full limit).
                        "shared": True,
                    }
                    for c in policy.clients
                ]
                # Token limits: checked on the request, charged from the answer's usage (issue 30).
                + token_rules(policy)
            },
        }
    return {
        "apiVersion": ENVOY_GATEWAY_API,
        "kind": "BackendTrafficPolicy",
        "metadata": _meta(target, f"{target.name}-backend"),
        "spec": spec,
    }


def _request_body_policy(policy: EdgePolicy, group: RouteGroup, target: GatewayTarget, route: str) -> Manifest:
    """A group's request-body limit, merged into the Gateway's BackendTrafficPolicy for its HTTPRoute only.

    Envoy Gateway v1.9.0 translates ``requestBuffer.limit`` into an ``envoy.filters.http.buffer`` filter,
    disabled at the listener and enabled per route with ``max_request_bytes``
    (``internal/xds/translator/request_buffer.go``): a body beyond it, sized or chunked, is 413. A plain byte
    count (the CRD's pattern takes digits with an optional suffix)."""
    return {
        "apiVersion": ENVOY_GATEWAY_API,
        "kind": "BackendTrafficPolicy",
        "metadata": _meta(target, f"{route}-body"),
        "spec": {
            "targetRefs": [_ref("HTTPRoute", route)],
            "mergeType": "StrategicMerge",
            "requestBuffer": {"limit": str(group.max_request_bytes)},
            # The OpenAI API's replica choice (edge.routing); the other groups keep Envoy Gateway's default.
            **({"loadBalancer": load_balancer(policy.routing)} if group.key == INFERENCE_ROUTES else {}),
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
                    # The client side is the ALB: its connections must outlive the ALB's idle timeout, or the ALB
                    # may send a request on a connection the proxy just closed and answer 502 (AWS's ALB guide).
                    "idleTimeout": f"{policy.downstream_idle_timeout_seconds}s",
                    "streamIdleTimeout": idle,
                    # HCM request_headers_timeout (internal/xds/translator/listener.go v1.9.0). Not
                    # requestReceivedTimeout: that is request_timeout, the whole request's clock.
                    "requestHeadersReceivedTimeout": f"{policy.request_headers_timeout_seconds}s",
                }
            },
            "headers": {"withUnderscoresAction": "RejectRequest"},
            # The affinity Lua reads the whole body before the buffer filter raises the stream's limit (filterOrder
            # puts every Lua first): the connection's own limit must hold the largest prompt body.
            **(
                {"connection": {"bufferLimit": str(policy.max_request_bytes)}}
                if policy.affinity_lua is not None
                else {}
            ),
        },
    }


def _ref(kind: str, name: str) -> dict[str, str]:
    return {"group": GATEWAY_GROUP, "kind": kind, "name": name}


def _meta(target: GatewayTarget, name: str) -> dict[str, Any]:
    return {"name": name, "namespace": target.namespace, "labels": {"app.kubernetes.io/part-of": "inference-edge"}}
