"""What the systems downstream of the settings accept, read from their sources at the versions we pin.

A setting that passes our checks but not the consumer's fails minutes into ``pulumi up`` (a CRD's
OpenAPI maximum) or silently changes meaning (a value cast to a narrower integer). Each figure cites the
file and tag it was read from; tests/catalog/test_downstream_limits.py re-reads the vendored
extracts in tests/data/upstream/ so a version bump re-checks them.
"""

from __future__ import annotations

from typing import Final

from inference_platform.catalog.edge_charts import ENVOY_GATEWAY

UINT32_MAX: Final = 2**32 - 1
INT32_MAX: Final = 2**31 - 1

# Envoy Gateway (the pinned chart's version).
ENVOY_GATEWAY_VERSION: Final = ENVOY_GATEWAY.version
ENVOY_GATEWAY_BTP_CRD: Final = (
    "envoyproxy/gateway charts/gateway-helm/charts/crds/crds/generated/"
    "gateway.envoyproxy.io_backendtrafficpolicies.yaml at v1.9.0"
)
CIRCUIT_BREAKER_MAX: Final = UINT32_MAX
"""spec.circuitBreaker.maxConnections / maxPendingRequests / maxParallelRequests: integer, format int64,
minimum 0, maximum 4294967295 (ENVOY_GATEWAY_BTP_CRD)."""
RATE_LIMIT_REQUESTS_MAX: Final = UINT32_MAX
"""spec.rateLimit.global.rules[].limit.requests: integer, minimum 0, maximum 4294967295; the translator
hands it to Envoy's ``requests_per_unit`` (uint32: internal/xds/translator/ratelimit.go at v1.9.0)."""
RATE_LIMIT_RULES_MAX: Final = 256
"""spec.rateLimit.global.rules: maxItems 256 (ENVOY_GATEWAY_BTP_CRD). The gateway renders one rule per
client, so a stack has at most this many edge clients."""
DURATION_PATTERN: Final = r"^([0-9]{1,5}(h|m|s|ms)){1,4}$"
"""Envoy Gateway's Duration (timeout.http.connectionIdleTimeout, ClientTrafficPolicy idle timeouts): at
most five digits per unit (ENVOY_GATEWAY_BTP_CRD)."""

# AWS Application Load Balancer.
ALB_IDLE_TIMEOUT_SECONDS: Final = (1, 4000)
"""``idle_timeout.timeout_seconds``: "The valid range is 1-4000 seconds" (botocore 1.44.8
data/elbv2/2015-12-01/service-2.json, LoadBalancerAttribute.Key documentation)."""

# KEDA 2.20.2 (kedacore/keda config/crd/bases/keda.sh_scaledobjects.yaml at v2.20.2).
KEDA_VERSION: Final = "v2.20.2"
KEDA_REPLICA_COUNT_MAX: Final = INT32_MAX
"""spec.minReplicaCount / maxReplicaCount / pollingInterval: integer, format int32."""
KEDA_THRESHOLD_MAX: Final = (2**63 - 1) / 1000
"""A Prometheus trigger's ``threshold`` is a float64 (pkg/scalers/prometheus_scaler.go) made a milli-unit
Quantity (pkg/scalers/scaler.go GetMetricTargetMili); beyond int64 milli-units the HPA target is not the
number written. NaN, Inf and negatives become 0 there."""
KEDA_THRESHOLD_MIN: Final = 0.001
"""The same milli-unit Quantity has no unit below 1m: GetMetricTargetMili (pkg/scalers/scaler.go at
v2.20.2) builds it with quantityFromFloat64, ``resource.MustParse(fmt.Sprintf("%.3f", value))``, so a
threshold under 0.001 rounds to 3 decimals and becomes a target of 0 (0.0004 -> "0.000"), which the HPA
cannot scale to."""

# Kubernetes HorizontalPodAutoscaler behaviour (autoscaling/v2 validation, repeated in KEDA's CRD
# descriptions: stabilizationWindowSeconds 0-3600, periodSeconds 1-1800).
HPA_WINDOW_SECONDS_MAX: Final = 3600
HPA_PERIOD_SECONDS_MAX: Final = 1800

# AWS WAFv2 (botocore 1.44.8 data/wafv2/2019-07-29/service-2.json).
WAF_RATE_LIMIT: Final = (10, 2_000_000_000)
"""RateBasedStatement.Limit: shape RateLimit, min 10, max 2000000000."""
WAF_WINDOWS_SECONDS: Final = (60, 120, 300, 600)
"""RateBasedStatement.EvaluationWindowSec: "Valid settings are 60, 120, 300, and 600"."""
