"""The downstream limits (catalog/downstream_limits.py) agree with the upstream sources they
cite, vendored as extracts in tests/data/upstream/ (read from envoyproxy/gateway v1.9.0 and kedacore/keda
v2.20.2 CRDs; botocore from the installed package)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import botocore.session

from inference_platform.catalog import downstream_limits as limits
from inference_platform.catalog.edge_charts import ENVOY_GATEWAY

UPSTREAM = Path(__file__).resolve().parents[1] / "data" / "upstream"


def test_envoy_gateway_limits_match_its_crd_at_the_pinned_version():
    crd = json.loads((UPSTREAM / "envoy_gateway_v1.9.0_backendtrafficpolicy_limits.json").read_text())
    assert ENVOY_GATEWAY.version == limits.ENVOY_GATEWAY_VERSION == "v1.9.0" and "/v1.9.0/" in crd["source"]
    for key in ("maxConnections", "maxPendingRequests", "maxParallelRequests"):
        assert crd["spec.circuitBreaker"][key]["maximum"] == limits.CIRCUIT_BREAKER_MAX
        assert crd["spec.circuitBreaker"][key]["minimum"] == 0
    assert crd["spec.rateLimit.global.rules[].limit.requests"]["maximum"] == limits.RATE_LIMIT_REQUESTS_MAX
    assert crd["spec.rateLimit.global.rules"]["maxItems"] == limits.RATE_LIMIT_RULES_MAX
    assert crd["spec.timeout.http.connectionIdleTimeout"]["pattern"] == limits.DURATION_PATTERN
    # The longest idle timeout ALB takes still renders as an Envoy Gateway duration.
    assert re.fullmatch(limits.DURATION_PATTERN, f"{limits.ALB_IDLE_TIMEOUT_SECONDS[1]}s")


def test_keda_limits_match_its_crd():
    crd = json.loads((UPSTREAM / "keda_v2.20.2_scaledobject_limits.json").read_text())
    assert "/v2.20.2/" in crd["source"] and limits.KEDA_VERSION == "v2.20.2"
    for key in ("minReplicaCount", "maxReplicaCount", "pollingInterval"):
        assert crd[f"spec.{key}"]["format"] == "int32"
    assert limits.KEDA_REPLICA_COUNT_MAX == 2**31 - 1


def test_aws_limits_match_botocore():
    session = botocore.session.get_session()
    elbv2 = session.get_service_model("elbv2")
    doc = elbv2.shape_for("LoadBalancerAttribute").members["Key"].documentation
    low, high = limits.ALB_IDLE_TIMEOUT_SECONDS
    assert (
        f"idle_timeout.timeout_seconds</code> - The idle timeout value, in seconds. The valid range is {low}-{high}"
        in doc
    )
    waf = session.get_service_model("wafv2")
    rate = waf.shape_for("RateLimit").metadata
    assert (rate["min"], rate["max"]) == limits.WAF_RATE_LIMIT
    window = waf.shape_for("RateBasedStatement").members["EvaluationWindowSec"].documentation
    assert "Valid settings are 60, 120, 300, and 600" in window
