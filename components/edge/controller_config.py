"""The Envoy Gateway controller's install values (chart gateway-helm v1.9.0 ``config.envoyGateway``): what the
cluster's controller runs with, and what the local Envoy (``inferctl.serving.edge_envoy``) is held to.

Pure (no Pulumi), so the local rig imports the very function the cluster installs with; ``EdgeGateway``
(``components.edge.gateway``) passes the Redis URL as a Pulumi input nested in these values, so only the URL is
unknown during a preview and the pack can still read the switches.

- Extension APIs: exactly the gated features the gateway's own objects use are switched on
  (``catalog.envoy_gateway_gates.enabling_values``; the duplicate-credential EnvoyExtensionPolicy is Lua, which
  v1.9.0 leaves off by default and then answers every targeted route with a 500).
- Rate limits: the Redis backend, ``failClosed`` and the rate-limit service's ``timeout``. Unset, Envoy's
  ratelimit filter waits 20 ms (``api/v1alpha1/envoygateway_types.go`` ``RateLimit.Timeout``: "If not set,
  timeout is 20ms"); with ``failClosed`` every slower answer is a 500 for a client within its limit
  (``catalog.edge_policy.RATE_LIMIT_SERVICE_TIMEOUT_MS`` says why the default is 100 ms).

Two more Envoy Gateway v1.9.0 facts shape the rate-limit install (pinned, with file and tag, in
tests/components/edge/test_envoy_gateway_upstream.py):

- ``rateLimit.backend.redis.tls`` without ``certificateRef`` makes Envoy Gateway mount a ``redis-certs``
  volume into its rate-limit container but add no such volume to the pod
  (``internal/infrastructure/kubernetes/ratelimit/resource.go``): the API server rejects the Deployment
  and there is no rate-limit service at all. ``certificateRef`` is the wrong cure: it names a *client*
  certificate and key (``kubernetes.io/tls``, passed as ``REDIS_TLS_CLIENT_CERT``/``_KEY``), and
  ElastiCache authenticates clients by the AUTH token, not by certificate; its server certificate is
  Amazon-issued and checked against the image's system roots. So the missing volume is supplied as an
  empty directory through the typed ``provider.kubernetes.rateLimitDeployment.pod.volumes`` (merged by
  name into the generated pod); nothing reads it, since no client certificate is configured.
- The rate-limit filter fails open unless ``rateLimit.failClosed`` is set
  (``internal/xds/translator/ratelimit.go`` sets ``failure_mode_deny`` only then); the field is
  gateway-wide (``api/v1alpha1/envoygateway_types.go``), BackendTrafficPolicy has none.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from inference_platform.catalog.edge_policy import RATE_LIMIT_SERVICE_TIMEOUT_MS, EdgePolicy
from inference_platform.catalog.envoy_gateway_gates import enabling_values, features_used, merged_config
from inference_platform.components.edge.gateway_api import Backend, GatewayTarget, render_gateway_objects

# The volume Envoy Gateway v1.9.0 mounts into its rate-limit container whenever redis.tls is set.
REDIS_CERTS_VOLUME = "redis-certs"
# The Secret the credentials' CSI sync writes the Redis AUTH token into, and its key.
REDIS_AUTH_SECRET = "ratelimit-redis-auth"
REDIS_AUTH_KEY = "token"


def controller_values(
    redis_url: Any,
    *,
    tls: bool = False,
    auth: bool = False,
    fail_closed: bool = False,
    rate_limit_timeout_ms: int = RATE_LIMIT_SERVICE_TIMEOUT_MS,
    features: Iterable[str] = (),
) -> dict[str, Any]:
    """Chart v1.9.0 values. ``redis_url`` (``host:port``; a string or a Pulumi input) backs the global rate
    limits; ``redis.tls`` (no client certificate) makes Envoy Gateway start its rate-limit service with
    ``REDIS_TLS=true``, and the ``redis-certs`` volume its container then mounts is supplied here (the module
    docstring says why); the AUTH token reaches it as ``REDIS_AUTH`` through
    ``provider.kubernetes.rateLimitDeployment.container.env`` (how Envoy Gateway's own tests pass it,
    internal/infrastructure/kubernetes/ratelimit), from the Secret the credentials' CSI sync writes, never from
    these values. ``fail_closed`` is ``rateLimit.failClosed``, ``rate_limit_timeout_ms`` its ``timeout``;
    ``features`` are the gated features (``catalog.envoy_gateway_gates``) the gateway's objects use."""
    redis: dict[str, Any] = {"url": redis_url}
    if tls:
        redis["tls"] = {}
    envoy_gateway: dict[str, Any] = {
        "rateLimit": {
            "backend": {"type": "Redis", "redis": redis},
            "timeout": f"{rate_limit_timeout_ms}ms",
            "failClosed": fail_closed,
        },
        "extensionApis": enabling_values(features).get("extensionApis", {}),
    }
    deployment: dict[str, Any] = {}
    if tls:
        deployment["pod"] = {"volumes": [{"name": REDIS_CERTS_VOLUME, "emptyDir": {}}]}
    if auth:
        env = [
            {"name": "REDIS_AUTH", "valueFrom": {"secretKeyRef": {"name": REDIS_AUTH_SECRET, "key": REDIS_AUTH_KEY}}}
        ]
        deployment["container"] = {"env": env}
    if deployment:
        envoy_gateway["provider"] = {"type": "Kubernetes", "kubernetes": {"rateLimitDeployment": deployment}}
    return {"config": {"envoyGateway": envoy_gateway}, "deployment": {"replicas": 2}}


def cluster_controller_config(policy: EdgePolicy) -> dict[str, Any]:
    """The EnvoyGateway configuration the cluster's controller runs for ``policy`` (``EdgeGateway``'s values,
    merged over the chart's defaults): what the local Envoy is held to. The gated features depend on the objects'
    kinds and fields, not on their names, so a nominal target stands in for the stack's."""
    target = GatewayTarget(
        namespace="edge",
        name="edge",
        service="openai",
        service_namespace="serving",
        port=1,
        credentials_secret="keys",
        backends=tuple(Backend(key=g.key, service=g.key, namespace="serving", port=1) for g in policy.extra_routes),
    )
    values = controller_values("redis:6379", features=features_used(render_gateway_objects(policy, target)))
    return merged_config(values["config"]["envoyGateway"])
