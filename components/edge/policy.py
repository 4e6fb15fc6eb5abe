"""What the gateway enforces in front of Triton, as plain data: clients, tiers, timeouts, protection.

Both renderings read this one object: the Gateway API / Envoy Gateway objects the cluster applies
(``gateway_api``) and the Envoy bootstrap that proves the same behaviour on a developer machine
(``inference_platform.inferctl.serving.edge_envoy``). No Pulumi, no I/O.

The public API is an allow-list (``public_http_endpoints``, ``GRPC_METHODS``): the inference and health
endpoints a client needs, of the models clients call (the ensemble and ``tensorrt_llm_bls``), and
nothing else of Triton's API (logging, trace settings, statistics, the repository and its load/unload,
shared memory, configs, the raw LLM step and the pre/post-processing models). Everything else is
refused at the gateway with 404 (no route). Over gRPC the model name travels in the protobuf body, so
the gateway restricts gRPC by method only: ModelInfer/ModelStreamInfer/ModelReady/ModelMetadata reach
whichever model the request names.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from inference_platform.components.catalog.serving_contract import LIVE_PATH, PUBLIC_MODELS, READY_PATH

DEFAULT_API_KEY_HEADER = "x-api-key"
DEFAULT_CLIENT_ID_HEADER = "x-client-id"
DEFAULT_IDLE_TIMEOUT_SECONDS = 600
DEFAULT_MAX_CONNECTIONS = 1024
DEFAULT_MAX_PENDING_REQUESTS = 64
DEFAULT_MAX_PARALLEL_REQUESTS = 256
DEFAULT_RETRIES = 2
# Retried only when no byte reached Triton: a generation is not idempotent (it costs GPU time and a
# retried stream would repeat tokens the client already has).
RETRY_ON = ("connect-failure", "reset-before-request")
# Seconds a client is told to wait when the gateway sheds load (circuit breaker open).
OVERLOAD_RETRY_AFTER_SECONDS = 1
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
# of ``\uXXXX``, a newline as 2). REQUEST_ENVELOPE_BYTES covers everything besides the prompt: the JSON or
# KServe tensor envelope, sampling parameters, stop/bad words and a guided-decoding schema or grammar.
# A prompt that fits maxInputLen always fits; a body beyond it cannot be a valid request and is refused
# with 413 before Triton sees a byte (dev 4096 tokens: 192 KiB; the finding sent 10 and 50 MiB).
UTF8_BYTES_PER_TOKEN = 16
JSON_ESCAPE_FACTOR = 2
JSON_BYTES_PER_TOKEN = UTF8_BYTES_PER_TOKEN * JSON_ESCAPE_FACTOR
REQUEST_ENVELOPE_BYTES = 64 * 1024
# serving.maxInputLen's default (infra/settings/serving.py), for policies built without serving settings.
DEFAULT_MAX_INPUT_TOKENS = 4096
# Envoy's buffer filter takes max_request_bytes as a uint32 (envoy.extensions.filters.http.buffer.v3.Buffer),
# and Envoy Gateway v1.9.0 refuses a requestBuffer.limit above math.MaxUint32.
MAX_REQUEST_BYTES_LIMIT = 2**32 - 1
# How long a client may take to send its request headers (from their first byte to their last); beyond it the
# connection is closed (a slow-header connection held open costs a connection slot forever otherwise). A
# client, or the ALB in front, sends its headers at once; 10 s is generous for any real one.
DEFAULT_REQUEST_HEADERS_TIMEOUT_SECONDS = 10
# Ambiguous credentials (issue 18 §4): Envoy's api_key_auth reads the first of several API-key headers, so
# "valid key, then anything" passed, and what reaches a later hop depends on which value it reads. A request
# with more than one credential header is refused with 400 before authentication runs, by a Lua filter both
# renderings place before api_key_auth (Envoy Gateway: an EnvoyExtensionPolicy's Lua, moved before
# api_key_auth by the EnvoyProxy's filterOrder). Only the API-key header is a credential here: the gateway
# extracts the key from it alone (``Authorization`` is not read, and passes to Triton like any header).
AMBIGUOUS_CREDENTIALS_STATUS = 400
LUA_FILTER = "envoy.filters.http.lua"
API_KEY_AUTH_FILTER = "envoy.filters.http.api_key_auth"
# Triton's HTTP endpoints a client needs (KServe v2 + the generate extension): per public model, POST
# inference and GET metadata/readiness; server liveness/readiness.
MODEL_POST_ENDPOINTS = ("generate", "generate_stream", "infer")
MODEL_GET_ENDPOINTS = ("", "ready")
HEALTH_PATHS = (LIVE_PATH, READY_PATH)
GRPC_SERVICE = "inference.GRPCInferenceService"
GRPC_METHODS = ("ModelInfer", "ModelStreamInfer", "ModelMetadata", "ModelReady", "ServerLive", "ServerReady")
"""The gRPC methods of ``GRPC_SERVICE`` the gateway admits (the model is named in the body, not the path)."""


@dataclass(frozen=True, order=True)
class Endpoint:
    """One admitted HTTP request line: an exact path (no prefix) and its method."""

    method: str
    path: str


def public_http_endpoints(models: tuple[str, ...] = PUBLIC_MODELS) -> tuple[Endpoint, ...]:
    """Every HTTP method + exact path the gateway admits: the health endpoints, then each model's."""
    out = [Endpoint("GET", path) for path in HEALTH_PATHS]
    for model in models:
        if not model or "/" in model or model != model.strip():
            raise ValueError(f"public model name {model!r} cannot be part of a path")
        base = f"/v2/models/{model}"
        out += [Endpoint("POST", f"{base}/{kind}") for kind in MODEL_POST_ENDPOINTS]
        out += [Endpoint("GET", f"{base}/{kind}" if kind else base) for kind in MODEL_GET_ENDPOINTS]
    return tuple(out)


def request_body_limit(max_input_tokens: int) -> int:
    """The largest request body, in bytes, a prompt of ``max_input_tokens`` tokens needs (formula above)."""
    if max_input_tokens < 1:
        raise ValueError(f"max_input_tokens must be >= 1, got {max_input_tokens}")
    return min(MAX_REQUEST_BYTES_LIMIT, max_input_tokens * JSON_BYTES_PER_TOKEN + REQUEST_ENVELOPE_BYTES)


def duplicate_credentials_lua(header: str) -> str:
    """The Lua script (Envoy's Lua filter API, ``headers():getNumValues``) refusing a request that carries
    ``header`` more than once; the same text in both renderings."""
    if not header or not all(c.isalnum() or c == "-" for c in header):
        raise ValueError(f"credential header {header!r} is not a plain header name")
    return (
        f"-- Refuse ambiguous credentials: more than one {header} header (issue 18 §4).\n"
        "function envoy_on_request(handle)\n"
        f'  if handle:headers():getNumValues("{header}") > 1 then\n'
        f'    handle:respond({{[":status"] = "{AMBIGUOUS_CREDENTIALS_STATUS}", ["content-type"] = "text/plain"}},\n'
        f'      "ambiguous credentials: more than one {header} header\\n")\n'
        "  end\n"
        "end\n"
    )


def public_grpc_paths(methods: tuple[str, ...] = GRPC_METHODS) -> tuple[str, ...]:
    """The admitted gRPC request paths, ``/<service>/<method>``."""
    return tuple(f"/{GRPC_SERVICE}/{method}" for method in methods)


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
    """Upper bounds on what the gateway holds open towards Triton; beyond them it answers 503 at once."""

    max_connections: int = DEFAULT_MAX_CONNECTIONS
    """Default 1024. Connections to all Triton replicas together."""
    max_pending_requests: int = DEFAULT_MAX_PENDING_REQUESTS
    """Default 64. Requests waiting for a connection; more get 503 instead of a growing queue."""
    max_parallel_requests: int | None = None
    """Default: the sum of the clients' concurrent streams (at least 1). Requests in flight to Triton."""


@dataclass(frozen=True, kw_only=True)
class EdgePolicy:
    """What the gateway enforces, as plain data: clients and authentication, timeouts, circuit breaking, retries,
    body limits and routes."""

    clients: tuple[Client, ...]
    """Empty only when authentication is off (then nobody is rate limited per client)."""
    auth_enabled: bool = True
    """Default ``true``. Reject requests without a known API key (401)."""
    api_key_header: str = DEFAULT_API_KEY_HEADER
    """Default ``x-api-key``. Where clients put the key (HTTP header and gRPC metadata)."""
    client_id_header: str = DEFAULT_CLIENT_ID_HEADER
    """Default ``x-client-id``. Where the gateway tells Triton (and the rate limiter) who called."""
    idle_timeout_seconds: int = DEFAULT_IDLE_TIMEOUT_SECONDS
    """Default 600, the ALB idle timeout: a stream may be silent this long (a long prefill)."""
    circuit_breaker: CircuitBreaker = field(default_factory=CircuitBreaker)
    retries: int = DEFAULT_RETRIES
    """Default 2. Retries, only on connect failure or reset before the request was sent."""
    public_models: tuple[str, ...] = PUBLIC_MODELS
    """Default ``ensemble`` and ``tensorrt_llm_bls``. The models whose inference, metadata and readiness
    endpoints the gateway admits; every other path of Triton's API is refused."""
    max_request_bytes: int = field(default_factory=lambda: request_body_limit(DEFAULT_MAX_INPUT_TOKENS))
    """Default ``request_body_limit(4096)`` (196,608). Largest HTTP request body; beyond it 413 before Triton.
    gRPC is not buffered (ModelStreamInfer keeps its request stream open), so the limit is HTTP's."""
    request_headers_timeout_seconds: int = DEFAULT_REQUEST_HEADERS_TIMEOUT_SECONDS
    """Default 10. Time from the first byte of a request's headers to the last; beyond it the connection is
    closed (Envoy answers 408 when it still can)."""

    @property
    def http_endpoints(self) -> tuple[Endpoint, ...]:
        """What both renderings admit over HTTP (``public_http_endpoints`` of the public models)."""
        return public_http_endpoints(self.public_models)

    @property
    def grpc_methods(self) -> tuple[str, ...]:
        """What both renderings admit over gRPC: methods of ``GRPC_SERVICE`` (any model)."""
        return GRPC_METHODS

    @property
    def grpc_paths(self) -> tuple[str, ...]:
        return public_grpc_paths(self.grpc_methods)

    @property
    def credential_lua(self) -> str | None:
        """The duplicate-credential refusal both renderings run before api_key_auth; None without auth."""
        return duplicate_credentials_lua(self.api_key_header) if self.auth_enabled else None

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
