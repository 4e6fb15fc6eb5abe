"""Issue 18 §1: settings values that are not what they look like are refused at their root
(settings/base.py), for every number of every section, nested sections included.

The walk below finds every model reachable from ``SECTIONS`` and every int/float field in it, so a key
added tomorrow is covered without a new test."""

from __future__ import annotations

import math
import typing
from typing import Any

import pytest
from pydantic import BaseModel, RootModel

from inference_platform.settings import SECTIONS, SettingsError, load_settings
from inference_platform.settings.base import Section

TAGS = {"owner": "team", "costCenter": "cc-1"}


def load(values, region="us-east-1", stack="s"):
    return load_settings({"tags": TAGS, **values}, project="p", stack=stack, region=region)


def problems(values, region="us-east-1"):
    with pytest.raises(SettingsError) as err:
        load(values, region)
    return {p.path: p.message for p in err.value.problems}


def _members(annotation: Any) -> list[Any]:
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _members(typing.get_args(annotation)[0])
    if origin is typing.Union or type(annotation).__name__ == "UnionType":
        return [m for a in typing.get_args(annotation) for m in _members(a)]
    return [annotation]


def _models(model: type[BaseModel], seen: dict[type[BaseModel], None]) -> None:
    if model in seen:
        return
    seen[model] = None
    for field in model.model_fields.values():
        stack = [field.annotation]
        while stack:
            ann = stack.pop()
            for m in _members(ann):
                if isinstance(m, type) and issubclass(m, BaseModel):
                    _models(m, seen)
                stack += [a for a in typing.get_args(m) if typing.get_origin(m) is not None]


def all_models() -> list[type[BaseModel]]:
    seen: dict[type[BaseModel], None] = {}
    for section in SECTIONS:
        _models(section, seen)
    return list(seen)


def number_fields(kind: type) -> list[tuple[type[BaseModel], str, Any]]:
    """(model, key, a value holding ``bad`` where the number goes) for every field that takes ``kind``."""
    out = []
    for model in all_models():
        if issubclass(model, RootModel):
            continue
        for name, field in model.model_fields.items():
            key = field.alias or name
            for m in _members(field.annotation):
                origin = typing.get_origin(m)
                args = typing.get_args(m)
                if m is kind:
                    out.append((model, key, None))
                elif origin in (list, tuple) and args and kind in _members(args[0]):
                    out.append((model, key, "list"))
                elif origin is dict and args and kind in _members(args[-1]):
                    out.append((model, key, "dict"))
    return out


def _wrap(shape: str | None, bad: Any) -> Any:
    return {"list": [bad], "dict": {"k": bad}, None: bad}[shape]


def _errors_at(model: type[BaseModel], key: str, value: Any) -> list[dict[str, Any]]:
    try:
        model.model_validate({key: value})
    except Exception as err:  # pydantic.ValidationError
        return [e for e in err.errors() if e["loc"][:1] == (key,) and e["type"] != "missing"]  # type: ignore[attr-defined]
    return []


def test_every_settings_model_is_a_section_and_refuses_non_finite_numbers():
    models = all_models()
    assert len(models) > 40, models  # the walk found the nested sections
    for model in models:
        if issubclass(model, RootModel):
            continue
        assert issubclass(model, Section), f"{model.__name__} does not inherit Section's config"
        assert model.model_config.get("allow_inf_nan") is False, model.__name__


FLOATS = number_fields(float)
INTS = number_fields(int)


def test_the_walk_finds_the_numbers_of_the_issue():
    floats = {(m.__name__, k) for m, k, _ in FLOATS}
    ints = {(m.__name__, k) for m, k, _ in INTS}
    assert ("AutoscalingSettings", "targetRequestsPerReplica") in floats
    assert ("CapacitySettings", "tokensPerDay") in floats
    assert ("AlertSettings", "queueSeconds") in floats
    assert ("EdgeSettings", "idleTimeoutSeconds") in ints
    assert ("TierSettings", "requestsPerMinute") in ints
    assert len(FLOATS) > 20 and len(INTS) > 40


@pytest.mark.parametrize("bad", [math.inf, -math.inf, math.nan, "inf", "nan"])
@pytest.mark.parametrize(("model", "key", "shape"), FLOATS, ids=[f"{m.__name__}.{k}" for m, k, _ in FLOATS])
def test_every_float_refuses_inf_and_nan(model, key, shape, bad):
    assert _errors_at(model, key, _wrap(shape, bad)), f"{model.__name__}.{key} accepted {bad!r}"


@pytest.mark.parametrize("bad", [True, False])
@pytest.mark.parametrize(
    ("model", "key", "shape"), INTS + FLOATS, ids=[f"{m.__name__}.{k}" for m, k, _ in INTS + FLOATS]
)
def test_every_number_refuses_booleans(model, key, shape, bad):
    found = _errors_at(model, key, _wrap(shape, bad))
    assert found, f"{model.__name__}.{key} accepted {bad!r}"
    assert "boolean" in found[0]["msg"], found


@pytest.mark.parametrize(
    ("values", "path", "words"),
    [
        ({"autoscaling": {"targetRequestsPerReplica": math.inf}}, "autoscaling.targetRequestsPerReplica",
         ["got inf", "finite"]),
        ({"observability": {"alerts": {"queueSeconds": math.inf}}}, "observability.alerts.queueSeconds", ["finite"]),
        ({"observability": {"alerts": {"waitingPerReplica": math.inf}}}, "observability.alerts.waitingPerReplica",
         ["finite"]),
        ({"capacity": {"tokensPerDay": math.inf}}, "capacity.tokensPerDay", ["finite"]),
        ({"capacity": {"tokensPerDay": math.nan}}, "capacity.tokensPerDay", ["finite"]),
        ({"capacity": {"tokensPerDay": "nan"}}, "capacity.tokensPerDay", ["finite"]),
        ({"edge": {"idleTimeoutSeconds": True}}, "edge.idleTimeoutSeconds", ["got True", "boolean true"]),
        ({"edge": {"rateLimits": {"tiers": {"standard": {"requestsPerMinute": True}}}}},
         "edge.rateLimits.tiers.standard.requestsPerMinute", ["boolean true"]),
        ({"edge": {"waf": {"windowSeconds": True}}}, "edge.waf.windowSeconds", ["boolean"]),  # Literal[60, ...]
        ({"nodePools": {"gpu": {"instanceTypes": ["g6.xlarge"], "maxSize": True}}}, "nodePools.gpu.maxSize",
         ["boolean"]),
    ],
)  # fmt: skip
def test_issue_examples_name_the_key(values, path, words):
    found = problems(values)
    assert list(found) == [path], found  # one bad value, one problem
    assert all(w in found[path] for w in words), found[path]


def test_finite_numbers_and_real_booleans_still_pass():
    settings = load(
        {
            "edge": {"idleTimeoutSeconds": 600, "redirectHttp": True, "waf": {"windowSeconds": 60}},
            "autoscaling": {"targetRequestsPerReplica": 6.5, "enabled": True},
            "observability": {"alerts": {"queueSeconds": "2.5"}},  # `pulumi config set --path` writes strings
        }
    )
    assert settings.edge.idle_timeout_seconds == 600
    assert settings.edge.waf.window_seconds == 60
    assert settings.autoscaling.target_requests_per_replica == 6.5
    assert settings.observability.alerts.queue_seconds == 2.5


URL_KEYS = [("verification", "url"), ("verification", "prometheusUrl"), ("loadTest", "url")]


@pytest.mark.parametrize(("section", "key"), URL_KEYS)
@pytest.mark.parametrize(
    ("url", "words"),
    [
        ("https://api.example.com\r\nX-Injected: 1", ["'\\r'"]),
        ("https://api.example.com\n", ["'\\n'"]),  # not stripped away: checked as written
        ("https://api.example.com/`id`", ["'`'"]),
        ("https://api.example.com/$(id)", ["'$'"]),
        ("https://api.example.com;reboot", ["';'"]),
        ("https://api.example.com/a|b", ["'|'"]),
        ("https://api.example.com/%0d%0aHost:x", ["percent-encoded"]),
        ("file:///etc/passwd", ["http:// or https://"]),
        ("gopher://api.example.com", ["http:// or https://"]),
        ("HTTPS://api.example.com", ["lower-case scheme"]),
        ("https://user:secret@api.example.com", ["credentials"]),
        ("https://token@api.example.com", ["credentials"]),
        ("https:///path", ["host"]),
        ("https://exa_mple.com", ["host"]),
        ("https://api.example.com:0", ["port"]),
        ("https://api.example.com:70000", ["port"]),
        ("https://api.example.com?debug=1", ["'?'"]),
        ("https://api.example.com/#x", ["'#'"]),
        ("https://ex\u00e4mple.com", ["'\u00e4'"]),
    ],
)
def test_urls_are_parsed_strictly_naming_the_key(section, key, url, words):
    found = problems({section: {key: url}})
    path = f"{section}.{key}"
    assert path in found, found
    assert all(w in found[path] for w in words), found[path]
    assert "secret" not in found[path] or "credentials" in found[path]


@pytest.mark.parametrize(
    "url",
    [
        "https://api.example.com",
        "https://api.example.com:8443/v2",
        "http://prometheus.monitoring:9090",
        "http://kube-prometheus-stack-prometheus.monitoring.svc.cluster.local:9090/",
        "http://10.0.12.7:9090",
        "https://[2001:db8::1]:8443",
    ],
)
def test_good_urls_pass(url):
    assert load({"verification": {"url": url, "prometheusUrl": url}}).verification.prometheus_url == url


def test_a_load_test_without_an_edge_or_url_is_named_not_a_program_error():
    found = problems({"loadTest": {"enabled": True}})
    assert "edge.domain is unset" in found["loadTest.url"], found


@pytest.mark.parametrize(
    ("values", "path", "words"),
    [
        # Envoy Gateway v1.9.0's CRD maximum for the circuit breaker and the rate limit (uint32).
        ({"edge": {"circuitBreaker": {"maxConnections": 2**32}}}, "edge.circuitBreaker.maxConnections",
         ["4294967295"]),
        ({"edge": {"circuitBreaker": {"maxParallelRequests": 2**32}}}, "edge.circuitBreaker.maxParallelRequests",
         ["4294967295"]),
        ({"edge": {"rateLimits": {"tiers": {"standard": {"requestsPerMinute": 2**32}}}}},
         "edge.rateLimits.tiers.standard.requestsPerMinute", ["4294967295"]),
        ({"edge": {"rateLimits": {"tiers": {"standard": {"concurrentStreams": 2**31}}}, "auth": {"clients": {
            "a": {}, "b": {}, "c": {}}}}}, "edge.circuitBreaker.maxParallelRequests", ["6442450944", "4294967295"]),
        ({"edge": {"auth": {"clients": {f"c{i}": {} for i in range(257)}}}}, "edge.auth.clients",
         ["257 clients", "at most 256"]),
        ({"edge": {"idleTimeoutSeconds": 4001}}, "edge.idleTimeoutSeconds", ["1-4000"]),
        ({"edge": {"waf": {"ipRateLimit": 2_000_000_001}}}, "edge.waf.ipRateLimit", ["10-2000000000"]),
        # KEDA's threshold becomes a milli-unit quantity; integers without their own bound stop at int32.
        ({"autoscaling": {"targetRequestsPerReplica": 1e300}}, "autoscaling.targetRequestsPerReplica",
         ["less than or equal"]),
        ({"verification": {"maxRequests": 10**30}}, "verification.maxRequests", ["2147483647"]),
        ({"loadTest": {"workers": 2**31}}, "loadTest.workers", ["2147483647"]),
        ({"capacity": {"tokensPerDay": 1e300}}, "capacity.tokensPerDay", ["1000000000000000000"]),
    ],
)  # fmt: skip
def test_numbers_stop_where_their_consumer_stops(values, path, words):
    found = problems(values)
    assert path in found, found
    assert all(w in found[path] for w in words), found[path]


def test_the_largest_values_the_consumers_take_pass():
    edge = load(
        {
            "edge": {
                "idleTimeoutSeconds": 4000,
                "circuitBreaker": {"maxConnections": 2**32 - 1, "maxParallelRequests": 2**32 - 1},
                "rateLimits": {"tiers": {"standard": {"requestsPerMinute": 2**32 - 1}}},
                "auth": {"clients": {f"c{i}": {} for i in range(256)}},
            }
        }
    ).edge
    assert edge.rate_limits.tiers["standard"].requests_per_minute == 2**32 - 1
    assert len(edge.auth.clients) == 256


CERT = "arn:{partition}:acm:{region}:123456789012:certificate/0123abcd-0123-4567-89ab-0123456789ab"
DOMAIN = {"domain": "api.example.com"}


@pytest.mark.parametrize(
    ("values", "path", "words"),
    [
        # Looks like a TLS 1.3 policy, is none.
        ({"edge": {"tlsPolicy": "ELBSecurityPolicy-TLS13-1-2-Res-2099-01"}}, "edge.tlsPolicy",
         ["not an ALB security policy", "did you mean"]),
        ({"edge": {"tlsPolicy": "ELBSecurityPolicy-TLS13-1-2-Strongest"}}, "edge.tlsPolicy", ["not an ALB"]),
        ({"edge": {"tlsPolicy": "ELBSecurityPolicy-TLS13-1-0-2021-06"}}, "edge.tlsPolicy", ["older than 1.2"]),
        ({"edge": {"tlsPolicy": "ELBSecurityPolicy-2016-08"}}, "edge.tlsPolicy", ["no TLS 1.3"]),
        # The right region in another partition.
        ({"edge": {**DOMAIN, "certificateArn": CERT.format(partition="aws-us-gov", region="us-east-1")}},
         "edge.certificateArn", ["partition 'aws-us-gov'", "'aws'"]),
        ({"edge": {**DOMAIN, "certificateArn": CERT.format(partition="aws", region="eu-west-1")}},
         "edge.certificateArn", ["eu-west-1", "us-east-1"]),
        # WAF managed rule groups that do not exist, or need configuration the edge does not render.
        ({"edge": {"waf": {"managedRuleGroups": ["AWSManagedRulesCommonRuleSett"]}}}, "edge.waf.managedRuleGroups[0]",
         ["not an AWS managed rule group", "did you mean 'AWSManagedRulesCommonRuleSet'"]),
        ({"edge": {"waf": {"managedRuleGroups": ["AWSManagedRulesLlmPromptInjectionRuleSet"]}}},
         "edge.waf.managedRuleGroups[0]", ["not an AWS managed rule group"]),
        ({"edge": {"waf": {"managedRuleGroups": ["AWSManagedRulesATPRuleSet"]}}}, "edge.waf.managedRuleGroups[0]",
         ["configuration block"]),
        # ElastiCache node types.
        ({"edge": {"redis": {"nodeType": "cache.t4g.huge"}}}, "edge.redis.nodeType",
         ["not an ElastiCache node type"]),
        ({"edge": {"redis": {"nodeType": "cache.r9g.large"}}}, "edge.redis.nodeType", ["not an ElastiCache"]),
        ({"edge": {"redis": {"nodeType": "cache.m3.large"}}}, "edge.redis.nodeType", ["previous-generation"]),
        # Time zones come from the tzdata package: a file of the planning machine is no zone.
        ({"autoscaling": {"night": {"timezone": "localtime"}}}, "autoscaling.night.timezone", ["'localtime'", "IANA"]),
        ({"autoscaling": {"night": {"timezone": "posixrules"}}}, "autoscaling.night.timezone", ["IANA"]),
        ({"autoscaling": {"night": {"timezone": "Europe/Pariss"}}}, "autoscaling.night.timezone", ["IANA"]),
        ({"autoscaling": {"night": {"timezone": "../../etc/passwd"}}}, "autoscaling.night.timezone", ["IANA"]),
    ],
)  # fmt: skip
def test_names_that_merely_look_right_are_refused(values, path, words):
    found = problems(values)
    assert path in found, found
    assert all(w in found[path] for w in words), found[path]


@pytest.mark.parametrize(
    "edge",
    [
        {"tlsPolicy": "ELBSecurityPolicy-TLS13-1-2-Res-2021-06"},
        {"tlsPolicy": "ELBSecurityPolicy-TLS13-1-2-Res-PQ-2025-09"},
        {"tlsPolicy": "ELBSecurityPolicy-TLS13-1-3-FIPS-2023-04"},
        {**DOMAIN, "certificateArn": CERT.format(partition="aws", region="us-east-1")},
        {"waf": {"managedRuleGroups": ["AWSManagedRulesCommonRuleSet", "AWSManagedRulesSQLiRuleSet"]}},
        {"redis": {"nodeType": "cache.r7g.large"}},
    ],
)
def test_real_names_pass(edge):
    assert load({"edge": edge}).edge is not None


def test_a_gov_cloud_certificate_passes_in_gov_cloud():
    arn = CERT.format(partition="aws-us-gov", region="us-gov-west-1")
    found = {p.path for p in load_settings_problems({"edge": {**DOMAIN, "certificateArn": arn}}, "us-gov-west-1")}
    assert "edge.certificateArn" not in found, found


def load_settings_problems(values, region="us-east-1"):
    try:
        load(values, region)
    except SettingsError as err:
        return err.problems
    return ()


@pytest.mark.parametrize("zone", ["UTC", "Europe/Paris", "America/New_York", "Asia/Kolkata"])
def test_iana_zones_pass(zone):
    assert load({"autoscaling": {"night": {"timezone": zone}}}).autoscaling.night.timezone == zone


def test_zones_never_come_from_the_planning_machine(monkeypatch):
    """With the host's zoneinfo holding extra files, the list and the zones read are still tzdata's."""
    import zoneinfo

    from inference_platform.catalog import time_zones

    assert "localtime" not in time_zones.names() and "Europe/Paris" in time_zones.names()
    monkeypatch.setattr(zoneinfo, "available_timezones", lambda: {"localtime", "Mars/Olympus"})
    assert not time_zones.is_zone("Mars/Olympus")
    assert time_zones.zone("Europe/Paris").key == "Europe/Paris"


BOOLS = number_fields(bool)


@pytest.mark.parametrize(("model", "key", "shape"), [b for b in BOOLS if b[2] is None],
                         ids=[f"{m.__name__}.{k}" for m, k, s in BOOLS if s is None])  # fmt: skip
def test_every_boolean_refuses_numbers(model, key, shape):
    for bad in (1, 0, 1.0):
        found = _errors_at(model, key, bad)
        assert found and "true or false" in found[0]["msg"], (model.__name__, key, bad, found)
    assert not _errors_at(model, key, True)


def test_booleans_given_as_numbers_name_the_key():
    assert problems({"edge": {"redirectHttp": 1}}) == {
        "edge.redirectHttp": "got 1; expected true or false, not a number"
    }
