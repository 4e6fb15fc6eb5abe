"""The Envoy Gateway side of the edge for other Pulumi languages: API keys per client, per-client rate limits
in Redis, the circuit breaker and the OpenAI route table (components.edge.EdgeGateway)."""

# Annotations stay real types (no ``from __future__ import annotations``): the provider's analyzer reads them.
from enum import Enum
from typing import NotRequired, TypedDict

import pulumi

from inference_platform.catalog.edge_routing import Routing as _Routing
from inference_platform.components.common.errors import ComponentArgsError
from inference_platform.components.common.resource_options import own_depends_on
from inference_platform.components.edge import Backend as _Backend
from inference_platform.components.edge import CircuitBreaker as _CircuitBreaker
from inference_platform.components.edge import Client as _Client
from inference_platform.components.edge import EdgeGateway as _EdgeGateway
from inference_platform.components.edge import EdgeGatewayArgs as _EdgeGatewayArgs
from inference_platform.components.edge import EdgePolicy as _EdgePolicy
from inference_platform.components.edge import Endpoint as _Endpoint
from inference_platform.components.edge import GatewayTarget as _GatewayTarget
from inference_platform.components.edge import RouteGroup as _RouteGroup
from inference_platform.components.edge import Tier as _Tier
from inference_platform.components.multilang.options import inner_options, kubernetes_provider, supplied


class Tier(TypedDict):
    """A service level clients are given by name."""

    name: str
    """The name clients' ``tier`` refers to."""
    requests_per_minute: int
    """Above 0. Requests one client of the tier may start per minute (a token bucket in Redis)."""
    concurrent_streams: int
    """Above 0. Streams one client of the tier is promised at once (the circuit breaker's parallel-request
    budget defaults to their sum over clients)."""


class Client(TypedDict):
    """One API consumer: its key lives in Secrets Manager (one secret per client, generated here)."""

    client_id: str
    """Forwarded upstream in ``clientIdHeader`` and the key of its rate-limit bucket."""
    tier: str
    """The ``name`` of one of ``tiers``."""


class CircuitBreaker(TypedDict):
    """Upper bounds on what the gateway holds open toward the serving pods; beyond them it answers 503 at once."""

    max_connections: NotRequired[int]
    """Default 1024. Connections to all backend replicas together."""
    max_pending_requests: NotRequired[int]
    """Default 64. Requests waiting for a connection."""
    max_parallel_requests: NotRequired[int]
    """Default: the sum of the clients' concurrent streams (at least 1). Requests in flight to the backends."""


class PathMatch(Enum):
    """How an endpoint's path is matched."""

    EXACT = "Exact"
    """The path and nothing else."""
    PATH_PREFIX = "PathPrefix"
    """The path and everything below it (whole segments)."""


class RoutingMode(Enum):
    """How the OpenAI routes pick a replica (the settings' edge.routing; docs/edge.md explains each mode)."""

    ENVOY = "envoy"
    """Prefix affinity: a hash of the prompt's first tokens, Envoy's consistent hash bounded by the load."""
    INFERENCE_POOL = "inference-pool"
    """llm-d's endpoint picker (prefix-cache, queue and KV-cache scorers), fail-open to least request."""
    ROUND_ROBIN = "round-robin"
    """Every replica in turn."""


class Routing(TypedDict):
    """How the gateway picks a serving replica for each OpenAI request (the settings' ``edge.routing``)."""

    mode: RoutingMode
    """``envoy``, ``inference-pool`` or ``round-robin``."""
    prefix_tokens: NotRequired[int]
    """Default 256 (``envoy``). Tokens' worth of prompt hashed into the affinity key; shorter prompts get none."""
    per_tenant: NotRequired[bool]
    """Default false (``envoy``). Salt the key with the caller's credential: prefix reuse only within one client."""
    load_bound_percent: NotRequired[int]
    """Default 150, 100-1000 (``envoy``). A replica takes a hashed request only while it holds at most this share
    (in percent) of the average requests in flight."""


class Endpoint(TypedDict):
    """One admitted request line."""

    method: str
    """HTTP method, e.g. ``POST``."""
    path: str
    """Absolute path, e.g. ``/v1/files``."""
    match: NotRequired[PathMatch]
    """Default ``Exact``."""


class RouteGroup(TypedDict):
    """More endpoints behind the same API keys and per-client limits, sent to their own Service (one HTTPRoute)."""

    key: str
    """Lower-case name (``[a-z0-9-]``, not ``inference``): the route is ``<gatewayName>-<key>``."""
    endpoints: list[Endpoint]
    """What the group admits, non-empty; every other path matches no route (404)."""
    max_request_bytes: NotRequired[int]
    """Default: not buffered (an upload streamed through; the backend enforces its own limit). Largest body, 413
    beyond it."""
    service: str
    """The Service the group goes to."""
    service_namespace: str
    """Its namespace (another than ``namespace`` gets a ReferenceGrant)."""
    port: int
    """Its port."""


class EdgeGatewayArgs(TypedDict):
    """Envoy Gateway in front of an InferenceService: the pinned controller chart, a GatewayClass, the Gateway
    with the OpenAI routes, API-key authentication from per-client secrets, per-client rate limits counted in
    Redis, timeouts, retries, the circuit breaker, and a NetworkPolicy admitting the serving pods' OpenAI port
    only from the gateway's Envoy proxies. Needs the cluster's Kubernetes provider as the
    ``providers: {kubernetes: ...}`` resource option; ``dependsOn`` should name the InferenceService."""

    cluster: pulumi.Input[str]
    """The Cluster's ``clusterName`` output (the credentials' Pod Identity association waits for it)."""
    namespace: str
    """Namespace of the controller, the Gateway, its routes, policies and the API-key Secret (the
    PublicEndpoint's ``namespace``)."""
    gateway_name: str
    """Name of the Gateway; its routes and policies are ``<gatewayName>-<role>``."""
    backend_service: str
    """The InferenceService's Service (its ``serviceName``; ``triton`` unless ``appName`` says otherwise)."""
    backend_namespace: str
    """The InferenceService's namespace (a ReferenceGrant there lets the routes reach the Service)."""
    backend_port: int
    """The Service's OpenAI port (9000 on an InferenceService)."""
    inference_pod_labels: dict[str, str]
    """Labels selecting the serving pods (the NetworkPolicy's subject), non-empty. An InferenceService's
    pods carry ``app.kubernetes.io/name: <serviceName>`` and ``app.kubernetes.io/instance: <its name>``."""
    credentials_secret: str
    """Name of the Opaque Secret in ``namespace`` the client keys are synced into (``<clientId>: <key>``)."""
    redis_url: pulumi.Input[str]
    """``host:port`` of the rate-limit Redis."""
    name_prefix: str
    """Physical-name prefix (the client secrets and their IAM role)."""
    kms_key_arn: pulumi.Input[str]
    """Encrypts the client keys in Secrets Manager."""
    region: str
    """AWS region of the secrets."""
    tiers: list[Tier]
    """The service levels ``clients`` name (each name once)."""
    clients: list[Client]
    """The API consumers; empty only with ``authEnabled`` false."""
    auth_enabled: NotRequired[bool]
    """Default true. Refuse requests without a known API key (401)."""
    api_key_header: NotRequired[str]
    """Default ``x-api-key``. Where clients put the key; ``Authorization: Bearer <key>`` is read after it."""
    client_id_header: NotRequired[str]
    """Default ``x-client-id``. Where the gateway tells the server (and the rate limiter) who called."""
    idle_timeout_seconds: NotRequired[int]
    """Default 600 (the ALB's idle timeout): how long a stream may be silent."""
    circuit_breaker: NotRequired[CircuitBreaker]
    """Default: the circuit breaker's own defaults."""
    retries: NotRequired[int]
    """Default 2. Retries, only on connect failure or reset before the request was sent."""
    max_request_bytes: NotRequired[int]
    """Default 196608 (4096 input tokens). Largest request body of the OpenAI routes; beyond it 413."""
    request_headers_timeout_seconds: NotRequired[int]
    """Default 10. Time from a request's first header byte to its last before the connection is closed."""
    served_models: NotRequired[list[str]]
    """Default none. Model ids the server serves: each gets an exact ``GET /v1/models/<id>`` route."""
    extra_routes: NotRequired[list[RouteGroup]]
    """Default none. More route groups beside the OpenAI routes (the batch lane's Files and Batches API)."""
    hostname: NotRequired[str]
    """Default: any. The API hostname the routes answer for (the PublicEndpoint's ``domain``)."""
    gateway_class: NotRequired[str]
    """Default ``envoy-gateway``. Name of the GatewayClass this install creates."""
    listener_port: NotRequired[int]
    """Default 8080. Port the ALB's target group sends to (the PublicEndpoint's ``backendPort``)."""
    proxy_service: NotRequired[str]
    """Default ``gatewayName``. Name of the Envoy proxies' ClusterIP Service (the PublicEndpoint's
    ``backendService``)."""
    proxy_replicas: NotRequired[int]
    """Default 2. Envoy proxy pods."""
    redis_tls: NotRequired[bool]
    """Default false. The rate-limit service talks TLS to Redis (ElastiCache requires it)."""
    rate_limit_fail_closed: NotRequired[bool]
    """Default false (fail open). True refuses requests (500) while the rate-limit service does not answer."""
    redis_auth_secret_arn: NotRequired[pulumi.Input[str]]
    """Default none. Secrets Manager secret of the Redis AUTH token (ElastiCache)."""
    partition: NotRequired[str]
    """Default ``aws``."""
    protect: NotRequired[bool]
    """Default false; production sets true (the client secrets)."""
    routing: NotRequired[Routing]
    """Default ``envoy`` mode with its defaults. How the OpenAI routes pick a replica; ``inference-pool`` installs
    llm-d's endpoint picker (pinned chart and image) for the pods ``inferencePodLabels`` selects."""
    neuron_replicas: NotRequired[bool]
    """Default false. The serving pods run the Neuron backend: ``inference-pool``'s picker reads their gauges."""


class EdgeGateway(pulumi.ComponentResource):
    """Envoy Gateway with API keys, per-client rate limits and the OpenAI routes (components.edge.EdgeGateway)."""

    proxy_service: pulumi.Output[str]
    """The Envoy proxies' ClusterIP Service in ``namespace``: the PublicEndpoint's ``backendService``."""
    namespace: pulumi.Output[str]
    """The gateway's namespace."""
    client_secret_arns: pulumi.Output[dict[str, str]]
    """Client id -> ARN of the Secrets Manager secret holding its API key (empty without authentication)."""

    def __init__(self, name: str, args: EdgeGatewayArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("inference-platform:index:EdgeGateway", name, {}, opts)
        provider = kubernetes_provider("EdgeGateway", opts)
        _refuse_fractions(args)
        target = supplied(
            args,
            "namespace",
            "credentials_secret",
            "hostname",
            "gateway_class",
            "listener_port",
            "proxy_service",
            "proxy_replicas",
            gateway_name="name",
            backend_service="service",
            backend_namespace="service_namespace",
            backend_port="port",
        )
        target["backends"] = tuple(
            _Backend(key=g["key"], **supplied(g, "service", "port", service_namespace="namespace"))
            for g in args.get("extra_routes") or []
        )
        gateway = _EdgeGateway(
            name,
            _EdgeGatewayArgs(
                provider=provider,
                policy=_policy(args),
                target=_GatewayTarget(**target),
                # The caller's dependsOn (the InferenceService, system nodes): the controller and the
                # NetworkPolicy wait for it.
                depends_on=tuple(own_depends_on(opts)),
                **supplied(
                    args,
                    "cluster",
                    "inference_pod_labels",
                    "redis_url",
                    "redis_tls",
                    "rate_limit_fail_closed",
                    "redis_auth_secret_arn",
                    "name_prefix",
                    "kms_key_arn",
                    "region",
                    "partition",
                    "protect",
                    "neuron_replicas",
                ),
            ),
            inner_options(self, opts),
        )
        self.proxy_service = pulumi.Output.from_input(gateway.proxy_service)
        self.namespace = pulumi.Output.from_input(gateway.namespace)
        # from_input resolves the Outputs inside the dict (its annotation says only plain values).
        self.client_secret_arns = pulumi.Output.from_input(dict(gateway.client_secret_arns))  # type: ignore[arg-type]  # see above
        self.register_outputs({})


def _policy(args: EdgeGatewayArgs) -> _EdgePolicy:
    """The edge policy the inputs describe: clients given their tier by name (one problem per bad name)."""
    names = [t["name"] for t in args["tiers"]]
    problems = [f"tiers: {n!r} is given more than once" for n in sorted(set(names)) if names.count(n) > 1]
    problems += [
        f"clients: {c['client_id']!r} names tier {c['tier']!r}; the tiers are {sorted(set(names))}"
        for c in args["clients"]
        if c["tier"] not in names
    ]
    if problems:
        raise ComponentArgsError("EdgeGateway", problems)
    tiers = {
        t["name"]: _Tier(**supplied(t, "name", "requests_per_minute", "concurrent_streams")) for t in args["tiers"]
    }
    routing = args.get("routing")
    # Left out when not given, like the breaker: the policy's own default applies.
    routing_arg: dict[str, _Routing] = {}
    if routing:
        try:
            routing_arg["routing"] = _Routing(**supplied(routing, "mode", "prefix_tokens", "per_tenant",
                                                         "load_bound_percent"))  # fmt: skip
        except ValueError as err:  # its own bounds (catalog.edge_routing.Routing)
            raise ComponentArgsError("EdgeGateway", [f"routing: {err}"]) from None
    breaker = args.get("circuit_breaker")
    # Left out when not given, so the component's own default applies (one definition of it).
    breaker_arg: dict[str, _CircuitBreaker] = (
        {"circuit_breaker": _CircuitBreaker(**supplied(breaker, *_BREAKER))} if breaker else {}
    )
    try:
        routes = tuple(_route_group(g) for g in args.get("extra_routes") or [])
        return _EdgePolicy(
            **routing_arg,  # type: ignore[arg-type]  # as the breaker's
            extra_routes=routes,
            clients=tuple(_Client(client_id=c["client_id"], tier=tiers[c["tier"]]) for c in args["clients"]),
            **breaker_arg,  # type: ignore[arg-type]  # mypy reads ** of one typed key as every field
            **supplied(
                args,
                "auth_enabled",
                "api_key_header",
                "client_id_header",
                "idle_timeout_seconds",
                "retries",
                "max_request_bytes",
                "request_headers_timeout_seconds",
                "served_models",
            ),
        )
    except ValueError as err:  # the policy's own checks (a model id that is no path, a credential header)
        raise ComponentArgsError("EdgeGateway", [str(err)]) from None


def _route_group(group: RouteGroup) -> _RouteGroup:
    endpoints = tuple(_Endpoint(**supplied(e, "method", "path", "match")) for e in group["endpoints"])
    return _RouteGroup(
        key=group["key"],
        endpoints=endpoints,
        max_request_bytes=supplied(group, "max_request_bytes").get("max_request_bytes"),
    )


_BREAKER = ("max_connections", "max_pending_requests", "max_parallel_requests")


def _refuse_fractions(args: EdgeGatewayArgs) -> None:
    """Every number of this facade counts something: a fraction is refused naming its input (``supplied``
    makes the whole numbers the engine sends as doubles ints)."""
    found = [(key, value) for key, value in args.items() if not isinstance(value, list | dict)]
    found += [(f"tiers[{i}].{key}", value) for i, tier in enumerate(args["tiers"]) for key, value in tier.items()]
    found += [(f"circuitBreaker.{key}", value) for key, value in (args.get("circuit_breaker") or {}).items()]
    found += [(f"routing.{key}", value) for key, value in (args.get("routing") or {}).items()]
    found += [
        (f"extraRoutes[{i}].{key}", value)
        for i, group in enumerate(args.get("extra_routes") or [])
        for key, value in group.items()
        if key != "endpoints"
    ]
    problems = [
        f"{_camel(key)}: {value!r} is not a whole number"
        for key, value in found
        if isinstance(value, float) and not value.is_integer()
    ]
    if problems:
        raise ComponentArgsError("EdgeGateway", problems)


def _camel(key: str) -> str:
    head, *rest = key.split("_")
    return head + "".join(part.title() for part in rest)
