"""Edge rules: passing and failing fixtures for the ALB class, the web ACL, direct exposure of inference,
authenticated routes and the rate-limit store."""

from __future__ import annotations

import pulumi_aws as aws
import pulumi_kubernetes as k8s

GOOD_ATTRIBUTES = {
    "access_logs.s3.enabled": "true",
    "access_logs.s3.bucket": "logs",
    "routing.http.drop_invalid_header_fields.enabled": "true",
    "deletion_protection.enabled": "true",
}
GOOD_PARAMS = {
    "scheme": "internet-facing",
    "sslPolicy": "ELBSecurityPolicy-TLS13-1-2-Res-2021-06",
    "certificateArn": ["arn:aws:acm:us-west-2:123456789012:certificate/x"],
    "wafv2AclArn": "arn:aws:wafv2:us-west-2:123456789012:regional/webacl/edge/x",
}
GOOD_ANNOTATIONS = {
    "alb.ingress.kubernetes.io/listen-ports": '[{"HTTPS": 443}, {"HTTP": 80}]',
    "alb.ingress.kubernetes.io/ssl-redirect": "443",
}


def _alb(params=None, attributes=None, annotations=None, with_params=True):
    def program():
        attrs = {**GOOD_ATTRIBUTES, **(attributes or {})}
        spec = {
            **GOOD_PARAMS,
            **(params or {}),
            "loadBalancerAttributes": [{"key": k, "value": v} for k, v in attrs.items()],
        }
        if with_params:
            k8s.apiextensions.CustomResource(
                "params", api_version="elbv2.k8s.aws/v1beta1", kind="IngressClassParams",
                metadata={"name": "edge"}, spec={k: v for k, v in spec.items() if v is not None},
            )  # fmt: skip
        k8s.networking.v1.IngressClass(
            "class", metadata={"name": "edge"},
            spec={"controller": "ingress.k8s.aws/alb",
                  "parameters": {"apiGroup": "elbv2.k8s.aws", "kind": "IngressClassParams", "name": "edge"}},
        )  # fmt: skip
        k8s.networking.v1.Ingress(
            "ingress",
            metadata={"name": "edge-http", "namespace": "envoy-gateway-system",
                      "annotations": {**GOOD_ANNOTATIONS, **(annotations or {})}},
            spec={"ingressClassName": "edge", "defaultBackend": {"service": {"name": "gw", "port": {"number": 8080}}}},
        )  # fmt: skip

    return program


def test_a_pinned_tls13_alb_with_waf_and_logs_passes(violations):
    assert violations(_alb(), "edge-alb-hardened", {"production": True}) == []
    # Development may leave deletion protection off; an internal ALB is not judged.
    assert violations(_alb(attributes={"deletion_protection.enabled": "false"}), "edge-alb-hardened") == []
    assert violations(_alb(params={"scheme": "internal", "wafv2AclArn": None}), "edge-alb-hardened") == []


def test_an_unhardened_internet_facing_alb_fails_naming_each_gap(violations):
    found = violations(
        _alb(
            params={"sslPolicy": "ELBSecurityPolicy-2016-08", "wafv2AclArn": None, "certificateArn": None},
            attributes={
                "access_logs.s3.enabled": "false",
                "routing.http.drop_invalid_header_fields.enabled": "false",
                "deletion_protection.enabled": "false",
            },
            annotations={
                "alb.ingress.kubernetes.io/ssl-redirect": None,
                "alb.ingress.kubernetes.io/wafv2-acl-arn": "none",
            },
        ),
        "edge-alb-hardened",
        {"production": True},
    )
    text = "\n".join(v.message for v in found)
    for words in ("not TLS 1.3", "no certificateArn", "no wafv2AclArn", "access logs are off",
                  "invalid header fields", "deletion protection", "without redirecting", "detaches the WAF"):  # fmt: skip
        assert words in text, text
    assert "no IngressClassParams" in violations(_alb(with_params=False), "edge-alb-hardened")[0].message


def test_http_only_listeners_fail(violations):
    found = violations(
        _alb(annotations={"alb.ingress.kubernetes.io/listen-ports": '[{"HTTP": 80}]'}), "edge-alb-hardened"
    )
    assert any("without HTTPS" in v.message for v in found)


def _acl(*, managed=True, ip_limit=100):
    def program():
        visibility = {"cloudwatch_metrics_enabled": True, "metric_name": "m", "sampled_requests_enabled": True}
        rules = []
        if managed:
            rules.append({"name": "common", "priority": 0, "override_action": {"none": {}}, "visibility_config": visibility,
                          "statement": {"managed_rule_group_statement": {"vendor_name": "AWS", "name": "AWSManagedRulesCommonRuleSet"}}})  # fmt: skip
        if ip_limit is not None:
            rules.append({"name": "ip", "priority": 1, "action": {"block": {}}, "visibility_config": visibility,
                          "statement": {"rate_based_statement": {"limit": ip_limit, "aggregate_key_type": "IP"}}})  # fmt: skip
        aws.wafv2.WebAcl(
            "acl", scope="REGIONAL", default_action={"allow": {}}, rules=rules, visibility_config=visibility
        )

    return program


def test_a_web_acl_with_managed_groups_and_an_ip_rate_rule_passes(violations):
    assert violations(_acl(), "edge-web-acl-guards") == []


def test_a_web_acl_without_guards_fails(violations):
    assert [v.message.split(";")[0] for v in violations(_acl(managed=False, ip_limit=None), "edge-web-acl-guards")] == [
        "the default action allows and no rule blocks: every request passes",
        "no AWS managed rule group",
        "no rate-based rule per source IP",
    ]
    assert "below AWS's minimum" in violations(_acl(ip_limit=5), "edge-web-acl-guards")[0].message


def _services(kind="ClusterIP", namespace="inference", envoy_service="ClusterIP"):
    def program():
        k8s.core.v1.Service(
            "triton", metadata={"name": "triton", "namespace": namespace},
            spec={"type": kind, "selector": {"app.kubernetes.io/name": "triton"}, "ports": [{"port": 8000}]},
        )  # fmt: skip
        k8s.apiextensions.CustomResource(
            "proxy", api_version="gateway.envoyproxy.io/v1alpha1", kind="EnvoyProxy",
            metadata={"name": "edge-proxy", "namespace": "envoy-gateway-system"},
            spec={"provider": {"type": "Kubernetes", "kubernetes": {"envoyService": {"type": envoy_service}}}},
        )  # fmt: skip

    return program


def test_cluster_ip_services_pass(violations):
    assert violations(_services(), "inference-not-exposed-directly") == []
    # A LoadBalancer outside the inference namespaces cannot select inference pods.
    assert violations(_services(kind="LoadBalancer", namespace="tools"), "inference-not-exposed-directly") == []


def test_load_balancer_or_node_port_to_inference_fails(violations):
    for kind in ("LoadBalancer", "NodePort"):
        (found,) = violations(_services(kind=kind), "inference-not-exposed-directly")
        assert f"is {kind}" in found.message
    (found,) = violations(_services(envoy_service="LoadBalancer"), "inference-not-exposed-directly")
    assert "EnvoyProxy edge-proxy" in found.message


def _routes(*, auth=True, target_grpc=True):
    def program():
        for kind in ("HTTPRoute", "GRPCRoute"):
            k8s.apiextensions.CustomResource(
                kind.lower(), api_version="gateway.networking.k8s.io/v1", kind=kind,
                metadata={"name": f"edge-{kind.lower()}", "namespace": "envoy-gateway-system"},
                spec={"parentRefs": [{"name": "edge"}],
                      "rules": [{"backendRefs": [{"name": "triton", "namespace": "inference", "port": 8000}]}]},
            )  # fmt: skip
        targets = [{"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "name": "edge-httproute"}]
        if target_grpc:
            targets.append({"group": "gateway.networking.k8s.io", "kind": "GRPCRoute", "name": "edge-grpcroute"})
        spec = {"targetRefs": targets}
        if auth:
            spec["apiKeyAuth"] = {
                "credentialRefs": [{"name": "keys"}],
                "extractFrom": [{"headers": ["x-api-key", "authorization"]}],
                "sanitize": True,
            }
        k8s.apiextensions.CustomResource(
            "security", api_version="gateway.envoyproxy.io/v1alpha1", kind="SecurityPolicy",
            metadata={"name": "edge-api-keys", "namespace": "envoy-gateway-system"}, spec=spec,
        )  # fmt: skip

    return program


def test_routes_under_an_api_key_policy_pass(violations):
    assert violations(_routes(), "inference-routes-authenticated") == []


def test_a_route_without_authentication_fails(violations):
    (found,) = violations(_routes(target_grpc=False), "inference-routes-authenticated")
    assert "GRPCRoute envoy-gateway-system/edge-grpcroute" in found.message
    # A SecurityPolicy without any authentication method protects nothing.
    assert len(violations(_routes(auth=False), "inference-routes-authenticated")) == 2


def _redis(**overrides):
    def program():
        settings = {
            "description": "counters", "engine": "valkey", "node_type": "cache.t4g.small", "num_cache_clusters": 2,
            "at_rest_encryption_enabled": True, "kms_key_id": "arn:aws:kms:us-west-2:123456789012:key/k",
            "transit_encryption_enabled": True, "transit_encryption_mode": "required", "auth_token": "x" * 32,
        }  # fmt: skip
        settings.update(overrides)
        aws.elasticache.ReplicationGroup("redis", **{k: v for k, v in settings.items() if v is not None})

    return program


def test_an_encrypted_authenticated_store_passes(violations):
    assert violations(_redis(), "rate-limit-store-encrypted") == []


def test_a_plaintext_store_fails(violations):
    found = violations(
        _redis(kms_key_id=None, transit_encryption_mode="preferred", auth_token=None), "rate-limit-store-encrypted"
    )
    assert [v.message.split(";")[0] for v in found] == [
        "not encrypted at rest with a customer-managed key",
        "TLS in transit is not required",
        "no AUTH token",
    ]


def _certificate(**overrides):
    def program():
        settings = {"domain_name": "api.example.com", "validation_method": "DNS", "key_algorithm": "EC_prime256v1"}
        settings.update(overrides)
        aws.acm.Certificate("cert", **{k: v for k, v in settings.items() if v is not None})

    return program


def test_a_dns_validated_ec_certificate_passes(violations):
    assert violations(_certificate(), "acm-certificate-dns-validated") == []
    assert violations(_certificate(key_algorithm=None), "acm-certificate-dns-validated") == []  # RSA_2048


def test_email_validation_and_weak_keys_fail(violations):
    found = violations(
        _certificate(validation_method="EMAIL", key_algorithm="RSA_1024"), "acm-certificate-dns-validated"
    )
    assert [v.message.split(";")[0].split(":")[0] for v in found] == [
        "validationMethod is 'EMAIL'",
        "keyAlgorithm RSA_1024 is not one of RSA_2048, RSA_3072, RSA_4096, EC_prime256v1, EC_secp384r1",
    ]


def _grant(to_name="triton", from_namespace="envoy-gateway-system"):
    def program():
        k8s.apiextensions.CustomResource(
            "grant", api_version="gateway.networking.k8s.io/v1beta1", kind="ReferenceGrant",
            metadata={"name": "edge-routes", "namespace": "inference"},
            spec={"from": [{"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "namespace": from_namespace}],
                  "to": [{"group": "", "kind": "Service", **({"name": to_name} if to_name else {})}]},
        )  # fmt: skip

    return program


def test_a_grant_naming_the_service_and_namespace_passes(violations):
    assert violations(_grant(), "reference-grants-scoped") == []


def test_a_grant_to_every_service_fails(violations):
    (found,) = violations(_grant(to_name=None), "reference-grants-scoped")
    assert "opens every Service" in found.message


PROMPTS = "edge-waf-prompts-not-blocked"


def _prompts_acl(overrides):
    def program():
        import pulumi_aws as aws

        rules = []
        for i, (group, counted) in enumerate(overrides.items()):
            statement = {"vendor_name": "AWS", "name": group}
            if counted:
                statement["rule_action_overrides"] = [{"name": r, "action_to_use": {"count": {}}} for r in counted]
            rules.append({"name": group, "priority": i, "override_action": {"none": {}},
                          "statement": {"managed_rule_group_statement": statement},
                          "visibility_config": {"cloudwatch_metrics_enabled": True, "metric_name": group,
                                                "sampled_requests_enabled": True}})  # fmt: skip
        aws.wafv2.WebAcl("acl", scope="REGIONAL", default_action={"allow": {}}, rules=rules,
                         visibility_config={"cloudwatch_metrics_enabled": True, "metric_name": "acl",
                                            "sampled_requests_enabled": True})  # fmt: skip

    return program


def test_a_core_rule_set_counting_only_the_size_rule_fails_naming_the_body_rules_that_block(violations):
    """What components/edge/public_endpoint.py rendered before issue 28."""
    (found,) = violations(_prompts_acl({"AWSManagedRulesCommonRuleSet": ["SizeRestrictions_BODY"]}), PROMPTS)
    assert "CrossSiteScripting_BODY, GenericLFI_BODY, GenericRFI_BODY, EC2MetaDataSSRF_BODY" in found.message
    assert "403" in found.message


def test_counting_every_body_rule_passes_and_unrelated_groups_are_not_judged(violations):
    from inference_platform.catalog.waf_body_rules import BODY_RULES

    assert violations(_prompts_acl({g: list(r) for g, r in BODY_RULES.items()}), PROMPTS) == []
    assert violations(_prompts_acl({"AWSManagedRulesAmazonIpReputationList": []}), PROMPTS) == []
    (found,) = violations(
        _prompts_acl({"AWSManagedRulesKnownBadInputsRuleSet": ["JavaDeserializationRCE_BODY"]}), PROMPTS
    )
    assert "Log4JRCE_BODY" in found.message
