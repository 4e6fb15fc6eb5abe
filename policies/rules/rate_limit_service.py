"""Rate-limit service rules: Envoy Gateway's generated rate-limit Deployment must be one the API server accepts,
and failing closed must not turn the service's ordinary tail latency into 500s.

- ``rate-limit-service-startable``: an Envoy Gateway Helm Release (chart ``gateway-helm``) whose
  ``config.envoyGateway.rateLimit.backend.redis.tls`` is set without ``certificateRef`` also supplies a
  volume named ``redis-certs`` in ``provider.kubernetes.rateLimitDeployment.pod.volumes``.

Why: Envoy Gateway v1.9.0 mounts ``redis-certs`` into its rate-limit container whenever ``redis.tls`` is
set, but adds that volume to the pod only with ``tls.certificateRef``
(``internal/infrastructure/kubernetes/ratelimit/resource.go``). The Deployment is then refused, there is
no rate-limit service, and the proxies fail open (no per-client limit) or closed (every request a 500).
Pinned in tests/components/edge/test_envoy_gateway_upstream.py.

- ``rate-limit-timeout-explicit``: an Envoy Gateway release with ``rateLimit.failClosed: true`` sets
  ``rateLimit.timeout`` to at least 50 ms (``catalog.edge_policy.MIN_FAIL_CLOSED_RATE_LIMIT_TIMEOUT_MS``).

Why: unset, Envoy Gateway v1.9.0 leaves Envoy's ratelimit filter at 20 ms (``api/v1alpha1/envoygateway_types.go``
``RateLimit.Timeout``: "If not set, timeout is 20ms"), and failing closed every later answer is a 500 for a
client within its limit. The service's published tail is above that (``catalog/edge_policy.py``
``RATE_LIMIT_SERVICE_TIMEOUT_MS`` cites it).
"""

from __future__ import annotations

import re

from pulumi_policy import EnforcementLevel, ResourceValidationArgs

from inference_platform.catalog.edge_policy import (
    ENVOY_RATE_LIMIT_DEFAULT_TIMEOUT_MS,
    MIN_FAIL_CLOSED_RATE_LIMIT_TIMEOUT_MS,
)
from inference_platform.policies.callbacks import ReportViolation, ResourceValidationPolicy
from inference_platform.policies.props import as_list, get
from inference_platform.policies.rules.helm import HELM_INSTALLS

RELEASE = "kubernetes:helm.sh/v3:Release"
ENVOY_GATEWAY_CHART = "gateway-helm"
REDIS_CERTS_VOLUME = "redis-certs"
# Gateway API Duration (gwapiv1.Duration): up to four <digits><h|m|s|ms> parts, e.g. "1s", "100ms", "1m30s".
_DURATION = re.compile(r"^(?:\d{1,5}(?:h|m|s|ms)){1,4}$")
_PART = re.compile(r"(\d{1,5})(ms|h|m|s)")
_MS = {"h": 3_600_000, "m": 60_000, "s": 1_000, "ms": 1}


def duration_ms(text: str) -> int | None:
    """Milliseconds of a Gateway API Duration, None when it is not one."""
    if not _DURATION.match(text):
        return None
    return sum(int(n) * _MS[unit] for n, unit in _PART.findall(text))


def _is_envoy_gateway(args: ResourceValidationArgs) -> bool:
    return (
        args.resource_type in HELM_INSTALLS
        and str(get(args.props, "chart") or "").rstrip("/").rsplit("/", 1)[-1] == ENVOY_GATEWAY_CHART
    )


def _startable(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if not _is_envoy_gateway(args):
        return
    gateway = get(args.props, "values.config.envoyGateway") or {}
    tls = get(gateway, "rateLimit.backend.redis.tls")
    if tls is None or get(tls, "certificateRef"):
        return
    volumes = as_list(get(gateway, "provider.kubernetes.rateLimitDeployment.pod.volumes"))
    if not any(get(v, "name") == REDIS_CERTS_VOLUME for v in volumes):
        report(
            f"Release {get(args.props, 'name') or args.name}: rateLimit.backend.redis.tls without certificateRef makes "
            f"Envoy Gateway v1.9.0 mount a '{REDIS_CERTS_VOLUME}' volume it never adds, so the API server refuses "
            "the rate-limit Deployment; add it under provider.kubernetes.rateLimitDeployment.pod.volumes "
            "(an emptyDir: no client certificate is read)"
        )


def _timeout_explicit(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if not _is_envoy_gateway(args):
        return
    rate_limit = get(args.props, "values.config.envoyGateway.rateLimit") or {}
    if get(rate_limit, "failClosed") is not True:
        return
    name = get(args.props, "name") or args.name
    timeout = get(rate_limit, "timeout")
    if timeout is None:
        report(
            f"Release {name}: rateLimit.failClosed without rateLimit.timeout: Envoy waits "
            f"{ENVOY_RATE_LIMIT_DEFAULT_TIMEOUT_MS} ms for the rate-limit service and answers every later reply "
            f"with a 500; set a timeout of at least {MIN_FAIL_CLOSED_RATE_LIMIT_TIMEOUT_MS}ms (edge.rateLimits."
            "serviceTimeoutMs)"
        )
        return
    ms = duration_ms(str(timeout))
    if ms is None:
        report(f"Release {name}: rateLimit.timeout {timeout!r} is not a Gateway API duration (e.g. 100ms)")
    elif ms < MIN_FAIL_CLOSED_RATE_LIMIT_TIMEOUT_MS:
        report(
            f"Release {name}: rateLimit.timeout {timeout} with failClosed: the rate-limit service's published tail "
            f"reaches 25 ms, so answers past {ms} ms become 500s; at least {MIN_FAIL_CLOSED_RATE_LIMIT_TIMEOUT_MS}ms"
        )


POLICIES = [
    ResourceValidationPolicy(
        name="rate-limit-service-startable",
        description="Envoy Gateway with Redis TLS and no certificateRef supplies the redis-certs volume its "
        "rate-limit container mounts.",
        validate=_startable,
        enforcement_level=EnforcementLevel.MANDATORY,
    ),
    ResourceValidationPolicy(
        name="rate-limit-timeout-explicit",
        description="Envoy Gateway failing closed on its rate-limit service sets rateLimit.timeout, at least 50 ms "
        "(the default 20 ms turns the service's tail latency into 500s).",
        validate=_timeout_explicit,
        enforcement_level=EnforcementLevel.MANDATORY,
    ),
]
