"""The serving contract: what the rollout (inference_platform.components.serving) and the image (inference_image) must agree on.

Ports, health and metrics paths, header names and mount paths. Both sides import this one module, so
neither imports the other; it stays import-free so CLI parsers can use it cheaply.
"""

from pathlib import Path

HTTP_PORT = 8000
GRPC_PORT = 8001
METRICS_PORT = 8002
POD_ADDRESS = "0.0.0.0"
LOOPBACK = "127.0.0.1"
LIVE_PATH = "/v2/health/live"
READY_PATH = "/v2/health/ready"
METRICS_PATH = "/metrics"
OPENAI_PORT = 9000
"""The OpenAI-compatible server in the serving pod (Triton's own OpenAI frontend listens here by default): the
only port the public edge routes to; Triton's KServe v2 ports stay inside the cluster."""
EDGE_UPSTREAM_IDLE_SECONDS = 60
"""How long the edge keeps an idle connection to a replica's OpenAI server before closing it (Envoy Gateway v1.9.0
BackendTrafficPolicy ``timeout.http.connectionIdleTimeout``, "Default: 1 hour", api/v1alpha1/timeout_types.go;
Envoy's cluster ``common_http_protocol_options.idle_timeout`` locally)."""
OPENAI_KEEPALIVE_SECONDS = 75
"""How long the OpenAI server keeps an idle connection open (uvicorn's ``timeout_keep_alive``, 5 s by default in
uvicorn 0.55.0 ``config.py``). Longer than ``EDGE_UPSTREAM_IDLE_SECONDS`` so the edge always closes first: a server
that closes an idle connection just as the edge sends the next request on it resets a request that has already left,
which Envoy answers 503 (``upstream_reset_before_response_started{connection_termination}``) and, rightly, does not
retry (``catalog.edge_policy.RETRY_ON``: a generation is retried only when no byte reached a server). With the 5 s
default and Envoy Gateway's hour, every connection idle for about 5 s was exposed to that race (the server closing
at 5 s is shown by tests/inferctl/serving/test_server_keepalive.py). 15 s apart: both sides time idleness on their
own timers."""
OPENAI_HEALTH_PATH = "/health"
"""GET; 200 only when the engine can generate. Public at the edge beside the OpenAI routes."""
READINESS_DEADLINE_ENV = "INFERENCE_READINESS_DEADLINE_SECONDS"
"""Seconds the health endpoint's 1-token generation may take (inference_image/readiness.py); the rollout sets it
below the readiness probe's timeout (components/serving/pod.py)."""
OPENAI_LIVE_PATH = "/live"
"""GET; 200 while the server, Triton and the model's process answer and the engine is not stalled with work
(inference_image/liveness.py). The pod's liveness probe; never routed by the edge."""
OPENAI_METRICS_PATH = "/metrics"
"""GET; the server's Prometheus metrics (vLLM's names) and the engine's relayed gauges. Never routed by the edge."""
REQUEST_ID_HEADER = "x-request-id"
"""Taken from the client when it is a plain token (else made), echoed, sent to Triton as the request id, logged."""
SERVED_MODEL_HEADER = "x-inference-served-model"
"""On every answer of the OpenAI server: the model that answered (its ``serving.model``), which differs from the
request's ``model`` when the edge fell back to another model (``models.fallbacks``)."""
CLIENT_ID_HEADER = "x-client-id"
"""Who called, as the edge says (catalog/edge_policy.py DEFAULT_CLIENT_ID_HEADER): labels the server's metrics."""
LIVENESS_STALL_ENV = "INFERENCE_LIVENESS_STALL_SECONDS"
"""Seconds the engine may hold requests without progress before liveness fails (the rollout sets it)."""
OPENAI_MODELS_PATH = "/v1/models"
OPENAI_CHAT_PATH = "/v1/chat/completions"
OPENAI_COMPLETIONS_PATH = "/v1/completions"
# tritonserver checks a --grpc-restricted-protocol header under this prefix (HTTP: the bare name).
GRPC_RESTRICTED_HEADER_PREFIX = "triton-grpc-protocol-"
MODELS_DIR = Path("/models")
"""Engine in ``<MODELS_DIR>/engine``, tokenizer in ``<MODELS_DIR>/tokenizer``."""
REPOSITORY_DIR = Path("/tmp/inferctl/model_repository")
"""Rendered model repository; owned by the entrypoint and replaced on every start."""
SERVER_COMPONENT = "inference-server"
"""``app.kubernetes.io/component`` of a pod that serves the OpenAI port: a single-node replica's pod, a multi-node
replica's leader (its workers are ``inference-worker``). The endpoint picker selects by it
(``catalog.endpoint_picker.SERVER_POD_LABELS``)."""

TTFT_HISTOGRAM_FAMILY = "nv_inference_first_response_histogram_ms"
"""Triton's time-to-first-response histogram (``--metrics-config histogram_latencies=true``)."""
TTFT_BUCKETS_MS = (25, 50, 100, 200, 300, 500, 750, 1000, 1500, 2000, 3000, 5000, 10000, 30000, 60000)
"""Bucket bounds of that histogram for LLM serving. Triton's defaults (100, 500, 2000, 5000 ms) cannot
resolve a p95 between 500 ms and 2 s, where TTFT SLOs live; the stack's own SLO values are added too, so
an alert at the SLO reads an exact bucket instead of an interpolation."""

USAGE_METER_HEADER = "x-inference-meter"
"""Set by the edge on every request it passes to the OpenAI server (value ``USAGE_METER_RUNNING``), whatever the
client sent: it asks the server to report a stream's running usage (issue 30). Envoy Gateway runs every Lua
filter before api_key_auth and the request buffer (the EnvoyProxy's filterOrder, ``internal/xds/translator/
httpfilters.go`` v1.9.0), where a Lua ``body()`` is held to the connection's 32 KiB buffer limit, so the edge asks
by header instead of rewriting ``stream_options.include_usage`` into the body as Envoy AI Gateway does."""
USAGE_METER_RUNNING = "running"
USAGE_COMMENT_PREFIX = ": usage "
"""Asked by ``USAGE_METER_HEADER``, a stream carries its cumulative usage so far in an SSE comment line
(``: usage {"prompt_tokens":P,"completion_tokens":C,"total_tokens":T,"cached_tokens":K}``) before each event that
adds tokens and before its last event or error event. SSE clients ignore comment lines (WHATWG HTML, "Server-sent
events", parsing: a line starting with a colon is ignored); the edge reads them (the running count an aborted
stream is charged) and removes them, so a client sees exactly the stream it asked for."""
