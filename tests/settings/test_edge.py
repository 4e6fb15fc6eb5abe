"""Edge settings: hostname, certificate, TLS policy, timeouts, WAF, auth and rate limits; every bad value
is refused naming its key, and ``inferctl plan`` exits 2 on them."""

from __future__ import annotations

import pytest
import yaml

from inference_platform.settings import SettingsError, load_settings

TAGS = {"owner": "team", "costCenter": "cc-1"}
ZONE = {"domain": "api.dev.example.com", "hostedZoneId": "Z0123456789ABCDEFGHIJ", "hostedZoneName": "example.com"}
CERT = "arn:aws:acm:{region}:123456789012:certificate/0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b"


def load(edge, *, environment="development", region="us-west-2"):
    return load_settings(
        {"tags": TAGS, "environment": environment, "edge": edge}, project="p", stack="s", region=region
    ).edge


def problems(edge, **kw):
    with pytest.raises(SettingsError) as err:
        load(edge, **kw)
    return {p.path: p.message for p in err.value.problems}


def test_defaults_are_secure_and_sized_for_long_streams():
    edge = load({})
    assert edge.tls_policy == "ELBSecurityPolicy-TLS13-1-2-Res-2021-06" and edge.idle_timeout_seconds == 600
    assert edge.auth.enabled and edge.waf.enabled and edge.waf.ip_rate_limit >= 10
    assert edge.redis.resolved_mode("production") == "elasticache"
    assert edge.redis.resolved_mode("development") == "inCluster"
    policy = edge.policy()
    assert policy.limits() == {"default": 600}
    assert policy.parallel_requests == 16  # the default client's concurrent streams


def test_a_zone_or_a_certificate_in_the_region_makes_a_hostname():
    assert load(ZONE).domain == "api.dev.example.com"
    edge = load({"domain": "api.example.org", "certificateArn": CERT.format(region="us-west-2")})
    assert edge.certificate_arn.startswith("arn:aws:acm:us-west-2:")


@pytest.mark.parametrize(
    ("edge", "environment", "path", "words"),
    [
        ({"tlsPolicy": "ELBSecurityPolicy-2016-08"}, "development", "edge.tlsPolicy", ["2016-08", "TLS 1.3"]),
        ({"tlsPolicy": "ELBSecurityPolicy-TLS13-1-0-2021-06"}, "development", "edge.tlsPolicy", ["TLS13-1-2"]),
        ({"idleTimeoutSeconds": 0}, "development", "edge.idleTimeoutSeconds", ["got 0", "1-4000"]),
        ({"idleTimeoutSeconds": 4001}, "development", "edge.idleTimeoutSeconds", ["4001", "ALB"]),
        ({**ZONE, "domain": "API.example.com"}, "development", "edge.domain", ["API.example.com", "hostname"]),
        ({**ZONE, "domain": "*.example.com"}, "development", "edge.domain", ["hostname"]),
        ({**ZONE, "domain": "api-.example.com"}, "development", "edge.domain", ["hostname"]),
        ({**ZONE, "domain": "api.example.net"}, "development", "edge.domain", ["outside the hosted zone"]),
        ({**ZONE, "domain": "badexample.com"}, "development", "edge.domain", ["outside the hosted zone"]),
        ({"domain": "api.example.com"}, "development", "edge.domain", ["hostedZoneId", "certificateArn"]),
        ({**ZONE, "hostedZoneName": None}, "development", "edge.hostedZoneName", ["go together"]),
        ({**ZONE, "hostedZoneId": "zone-1"}, "development", "edge.hostedZoneId", ["zone-1"]),
        (
            {"domain": "api.example.com", "certificateArn": CERT.format(region="us-east-1")},
            "development",
            "edge.certificateArn",
            ["us-east-1", "us-west-2"],
        ),
        ({"domain": "api.example.com", "certificateArn": "arn:x"}, "development", "edge.certificateArn", ["arn:x"]),
        (
            {"rateLimits": {"tiers": {"standard": {"requestsPerMinute": 0}}}},
            "development",
            "edge.rateLimits.tiers.standard.requestsPerMinute",
            ["got 0", "greater than 0"],
        ),
        (
            {"rateLimits": {"tiers": {"standard": {"concurrentStreams": -1}}}},
            "development",
            "edge.rateLimits.tiers.standard.concurrentStreams",
            ["-1"],
        ),
        ({"waf": {"ipRateLimit": 9}}, "development", "edge.waf.ipRateLimit", ["got 9", "minimum", "10"]),
        ({"waf": {"apiKeyRateLimit": 5}}, "development", "edge.waf.apiKeyRateLimit", ["got 5"]),
        ({"waf": {"windowSeconds": 30}}, "development", "edge.waf.windowSeconds", ["30"]),
        ({"waf": {"managedRuleGroups": ["Common"]}}, "development", "edge.waf.managedRuleGroups[0]", ["Common"]),
        ({"waf": {"enabled": False}}, "production", "edge.waf.enabled", ["production"]),
        ({"auth": {"enabled": False}}, "production", "edge.auth.enabled", ["production requires"]),
        ({"auth": {"clients": {"team-a": {"tier": "gold"}}}}, "development", "edge.auth.clients.team-a.tier", ["gold"]),
        ({"auth": {"clients": {}}}, "development", "edge.auth.clients", ["at least one client"]),
        ({"auth": {"clients": {"Team_A": {}}}}, "development", "edge.auth.clients.Team_A", ["DNS label"]),
        ({"auth": {"header": "X-Api-Key"}}, "development", "edge.auth.header", ["X-Api-Key"]),
        ({"auth": {"clientIdHeader": "x-api-key"}}, "development", "edge.auth.clientIdHeader", ["differ"]),
        ({"circuitBreaker": {"maxPendingRequests": 0}}, "development", "edge.circuitBreaker.maxPendingRequests", []),
        ({"redis": {"mode": "memcached"}}, "development", "edge.redis.mode", ["memcached"]),
        ({"redis": {"nodeType": "t4g.small"}}, "development", "edge.redis.nodeType", ["cache."]),
        # Issue 28 R2: failing closed (production's default), the rate-limit service must have time to answer.
        (
            {"rateLimits": {"serviceTimeoutMs": 20}},
            "production",
            "edge.rateLimits.serviceTimeoutMs",
            ["got 20", "50-1000"],
        ),
        (
            {"rateLimits": {"serviceTimeoutMs": 30, "failClosed": True}},
            "development",
            "edge.rateLimits.serviceTimeoutMs",
            ["500s"],
        ),
        ({"rateLimits": {"serviceTimeoutMs": 5000}}, "development", "edge.rateLimits.serviceTimeoutMs", ["5000"]),
    ],
)
def test_each_bad_edge_value_names_its_key(edge, environment, path, words):
    found = problems(edge, environment=environment)
    assert path in found, found
    for word in words:
        assert word in found[path], found[path]


def test_a_short_rate_limit_timeout_is_fine_failing_open():
    assert load({"rateLimits": {"serviceTimeoutMs": 20}}).rate_limits.service_timeout_ms == 20
    assert load({}).rate_limits.service_timeout_ms == 100


def test_auth_off_is_allowed_in_development_and_then_nobody_is_limited_per_client():
    policy = load({"auth": {"enabled": False}}).policy()
    assert policy.clients == () and not policy.auth_enabled


def test_tiers_and_clients_become_the_gateway_policy():
    edge = load(
        {
            "auth": {"clients": {"batch": {"tier": "bulk"}, "chat": {"tier": "interactive"}}},
            "rateLimits": {
                "tiers": {
                    "interactive": {"requestsPerMinute": 120, "concurrentStreams": 8},
                    "bulk": {"requestsPerMinute": 30, "concurrentStreams": 2},
                }
            },
        }
    )
    policy = edge.policy()
    assert policy.limits() == {"batch": 30, "chat": 120}
    assert policy.parallel_requests == 10
    assert [t.name for t in policy.tiers] == ["bulk", "interactive"]


def test_plan_exits_2_naming_the_edge_key(repo, tmp_path, capsys):
    from inference_platform.inferctl.cli import main

    stack = yaml.safe_load((repo / "stacks" / "Pulumi.dev.yaml").read_text())
    stack["config"]["inference-platform:edge"] = {"tlsPolicy": "ELBSecurityPolicy-2016-08", "idleTimeoutSeconds": 0}
    stack_file = tmp_path / "Pulumi.dev.yaml"
    stack_file.write_text(yaml.safe_dump(stack))
    code = main(["plan", "--stack", "dev", "--stack-file", str(stack_file), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2
    assert "edge.tlsPolicy" in err and "edge.idleTimeoutSeconds" in err


def test_rate_limits_fail_closed_in_production_and_open_in_development_unless_set():
    # Envoy Gateway v1.9.0 fails open unless rateLimit.failClosed (tests/components/edge/test_envoy_gateway_upstream.py).
    assert load({}).rate_limits.resolved_fail_closed("production") is True
    assert load({}).rate_limits.resolved_fail_closed("development") is False
    assert load({"rateLimits": {"failClosed": False}}).rate_limits.resolved_fail_closed("production") is False
    assert load({"rateLimits": {"failClosed": True}}).rate_limits.resolved_fail_closed("development") is True


def test_a_bad_fail_closed_is_refused_naming_its_key(repo, tmp_path, capsys):
    from inference_platform.inferctl.cli import main

    assert "edge.rateLimits.failClosed" in problems({"rateLimits": {"failClosed": "sometimes"}})
    stack = yaml.safe_load((repo / "stacks" / "Pulumi.dev.yaml").read_text())
    edge = dict(stack["config"].get("inference-platform:edge") or {})
    edge["rateLimits"] = {**(edge.get("rateLimits") or {}), "failClosed": "sometimes"}
    stack["config"]["inference-platform:edge"] = edge
    stack_file = tmp_path / "Pulumi.dev.yaml"
    stack_file.write_text(yaml.safe_dump(stack))
    code = main(["plan", "--stack", "dev", "--stack-file", str(stack_file), "--out", str(tmp_path / "out")])
    assert code == 2 and "edge.rateLimits.failClosed" in capsys.readouterr().err
