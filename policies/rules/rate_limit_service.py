"""Rate-limit service rule: Envoy Gateway's generated rate-limit Deployment must be one the API server accepts.

- ``rate-limit-service-startable``: an Envoy Gateway Helm Release (chart ``gateway-helm``) whose
  ``config.envoyGateway.rateLimit.backend.redis.tls`` is set without ``certificateRef`` also supplies a
  volume named ``redis-certs`` in ``provider.kubernetes.rateLimitDeployment.pod.volumes``.

Why: Envoy Gateway v1.9.0 mounts ``redis-certs`` into its rate-limit container whenever ``redis.tls`` is
set, but adds that volume to the pod only with ``tls.certificateRef``
(``internal/infrastructure/kubernetes/ratelimit/resource.go``). The Deployment is then refused, there is
no rate-limit service, and the proxies fail open (no per-client limit) or closed (every request a 500).
Pinned in tests/components/edge/test_envoy_gateway_upstream.py.
"""

from __future__ import annotations

from pulumi_policy import EnforcementLevel, ResourceValidationArgs

from inference_platform.policies.callbacks import ReportViolation, ResourceValidationPolicy
from inference_platform.policies.props import as_list, get
from inference_platform.policies.rules.helm import HELM_INSTALLS

RELEASE = "kubernetes:helm.sh/v3:Release"
ENVOY_GATEWAY_CHART = "gateway-helm"
REDIS_CERTS_VOLUME = "redis-certs"


def _startable(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type not in HELM_INSTALLS:
        return
    if str(get(args.props, "chart") or "").rstrip("/").rsplit("/", 1)[-1] != ENVOY_GATEWAY_CHART:
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


POLICIES = [
    ResourceValidationPolicy(
        name="rate-limit-service-startable",
        description="Envoy Gateway with Redis TLS and no certificateRef supplies the redis-certs volume its "
        "rate-limit container mounts.",
        validate=_startable,
        enforcement_level=EnforcementLevel.MANDATORY,
    ),
]
