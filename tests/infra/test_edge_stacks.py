"""The edge in every shipped stack: ALB class pinned by IngressClassParams, Ingresses, WAF, the gateway's
Gateway API / Envoy Gateway objects, client credentials, the rate-limit store and Triton's NetworkPolicy.
Built-in kinds validate strictly against the Kubernetes schema (1.36 and 1.33); custom resources hold
the fields their CRDs require."""

from __future__ import annotations

import json

import kubernetes_validate
import pytest
import yaml

from inference_platform.offline_plan.manifests import write_manifests
from tests.conftest import STACKS

VERSIONS = ("1.36", "1.33")
# Required by the CRDs: Gateway API v1 (standard channel), Envoy Gateway v1.9.0 (gateway.envoyproxy.io),
# the AWS Load Balancer Controller v3.5.0 (elbv2.k8s.aws) and the Secrets Store CSI driver.
CUSTOM_REQUIRED = {
    ("gateway.networking.k8s.io/v1", "GatewayClass"): ("spec.controllerName",),
    ("gateway.networking.k8s.io/v1", "Gateway"): ("spec.gatewayClassName", "spec.listeners"),
    ("gateway.networking.k8s.io/v1", "HTTPRoute"): ("spec.parentRefs", "spec.rules"),
    ("gateway.networking.k8s.io/v1beta1", "ReferenceGrant"): ("spec.from", "spec.to"),
    ("gateway.envoyproxy.io/v1alpha1", "EnvoyProxy"): ("spec.provider.type",),
    ("gateway.envoyproxy.io/v1alpha1", "SecurityPolicy"): ("spec.targetRefs", "spec.apiKeyAuth.credentialRefs"),
    ("gateway.envoyproxy.io/v1alpha1", "BackendTrafficPolicy"): ("spec.targetRefs",),
    ("gateway.envoyproxy.io/v1alpha1", "ClientTrafficPolicy"): ("spec.targetRefs",),
    ("gateway.envoyproxy.io/v1alpha1", "EnvoyExtensionPolicy"): ("spec.targetRefs", "spec.lua"),
    ("elbv2.k8s.aws/v1beta1", "IngressClassParams"): ("spec.scheme", "spec.sslPolicy", "spec.wafv2AclArn"),
    ("secrets-store.csi.x-k8s.io/v1", "SecretProviderClass"): ("spec.provider", "spec.parameters"),
}


def edge_objects(resources):
    return [
        r
        for r in resources
        if r.type.startswith("kubernetes:")
        and not r.type.startswith("kubernetes:helm")
        and "inference:edge:" in (r.parent or "")
    ]


def dig(doc, path):
    for part in path.split("."):
        doc = doc[part]
    return doc


@pytest.mark.parametrize("stack", STACKS)
def test_every_stack_has_the_edge_and_its_manifests_validate(stack_plan, stack, tmp_path):
    plan = stack_plan(stack)
    paths = write_manifests(edge_objects(plan.run.resources), tmp_path)
    kinds = []
    for path in paths:
        doc = yaml.safe_load(path.read_text())
        kinds.append(doc["kind"])
        key = (doc["apiVersion"], doc["kind"])
        if key in CUSTOM_REQUIRED:
            for field in CUSTOM_REQUIRED[key]:
                assert dig(doc, field), f"{path.name}: {field} is required"
            continue
        assert "." not in doc["apiVersion"].split("/")[0] or doc["apiVersion"].startswith(
            ("apps/", "networking.k8s.io/")
        ), f"{path.name}: custom resource without required-field checks"
        for version in VERSIONS:
            kubernetes_validate.validate(doc, version, strict=True)
    assert "GRPCRoute" not in kinds, stack  # issue 20: KServe v2 (gRPC included) is not public
    for kind in (
        "Gateway",
        "HTTPRoute",
        "SecurityPolicy",
        "BackendTrafficPolicy",
        "Ingress",
        "IngressClass",
    ):
        assert kind in kinds, (stack, kind)
    assert [v for v in plan.violations if v.level == "mandatory"] == []


def test_the_serving_pods_admit_only_their_openai_port_from_the_gateway(stack_plan):
    resources = stack_plan("dev").run.resources
    policies = [r for r in resources if r.type == "kubernetes:networking.k8s.io/v1:NetworkPolicy"]
    rollout = next(p for p in policies if "InferenceService" in (p.parent or ""))
    sources = [peer for rule in rollout.inputs["spec"].get("ingress", []) for peer in rule.get("from", [])]
    assert not any("ipBlock" in peer for peer in sources), "behind the edge no CIDR reaches Triton directly"
    edge = next(p for p in policies if p.inputs["metadata"]["name"] == "from-edge-gateway")
    (rule,) = edge.inputs["spec"]["ingress"]
    (peer,) = rule["from"]
    assert peer["namespaceSelector"]["matchLabels"] == {"kubernetes.io/metadata.name": "envoy-gateway-system"}
    assert peer["podSelector"]["matchLabels"] == {"inference.platform/edge-gateway": "inference-edge"}
    # The OpenAI server's port only: Triton's KServe v2 ports are not the gateway's to reach.
    assert [p["port"] for p in rule["ports"]] == [9000]


@pytest.mark.parametrize(
    ("stack", "protected", "store"), [("dev", "false", "inCluster"), ("prod", "true", "elasticache")]
)
def test_production_protects_the_alb_and_keeps_counters_in_elasticache(stack_plan, stack, protected, store):
    plan = stack_plan(stack)
    params = next(r for r in plan.run.resources if r.type.endswith(":IngressClassParams"))
    attributes = {a["key"]: a["value"] for a in params.inputs["spec"]["loadBalancerAttributes"]}
    assert attributes["deletion_protection.enabled"] == protected
    assert attributes["idle_timeout.timeout_seconds"] == "600"
    assert attributes["routing.http.drop_invalid_header_fields.enabled"] == "true"
    assert attributes["access_logs.s3.enabled"] == "true" and attributes["access_logs.s3.bucket"]
    assert params.inputs["spec"]["sslPolicy"] == "ELBSecurityPolicy-TLS13-1-2-Res-2021-06"
    assert plan.run.outputs["edge"]["rateLimitStore"] == store
    elasticache = [r for r in plan.run.resources if r.type == "aws:elasticache/replicationGroup:ReplicationGroup"]
    assert len(elasticache) == (1 if store == "elasticache" else 0)


def test_prod_clients_and_tiers_reach_the_gateway_and_no_key_is_in_any_manifest(stack_plan):
    resources = stack_plan("prod").run.resources
    backend = next(r for r in resources if r.type.endswith(":BackendTrafficPolicy"))
    rules = backend.inputs["spec"]["rateLimit"]["global"]["rules"]
    limits = {r["clientSelectors"][0]["headers"][0]["value"]: r["limit"]["requests"] for r in rules if "cost" not in r}
    assert limits == {"batch": 300, "chat": 1200}
    assert backend.inputs["spec"]["circuitBreaker"]["maxParallelRequests"] == 64 + 16
    secrets = [
        r
        for r in resources
        if r.type == "aws:secretsmanager/secretVersion:SecretVersion" and "inference:edge:" in (r.parent or "")
    ]
    assert len(secrets) == 3  # two clients and the Redis AUTH token
    manifests = json.dumps([r.inputs for r in edge_objects(resources)])
    for version in secrets:
        value = version.inputs["secretString"]
        assert isinstance(value, dict) and "value" in value  # kept secret in state
        assert str(value["value"]) not in manifests


def test_one_ingress_carries_the_openai_api_and_no_grpc_is_public(stack_plan):
    resources = stack_plan("dev").run.resources
    ingresses = {r.inputs["metadata"]["name"]: r.inputs for r in resources if r.type.endswith("v1:Ingress")}
    # Issue 20: the gRPC Ingress (KServe v2 ModelInfer reached every model) is gone.
    assert set(ingresses) == {"edge-http"}
    http = ingresses["edge-http"]
    annotations = http["metadata"]["annotations"]
    assert annotations["alb.ingress.kubernetes.io/backend-protocol-version"] == "HTTP1"
    paths = {(p["path"], p["pathType"]) for rule in http["spec"]["rules"] for p in rule["http"]["paths"]}
    assert paths == {("/v1", "Prefix"), ("/health", "Exact")}
    # Awaited on create (the ALB's name) and on delete (tests/infra/test_replacement.py).
    assert annotations["pulumi.com/waitFor"] == "jsonpath={.status.loadBalancer.ingress[0].hostname}"
    lb_sg = next(
        r for r in resources if r.type == "aws:ec2/securityGroup:SecurityGroup" and r.name == "security-groups-lb"
    )
    for ingress in ingresses.values():
        annotations = ingress["metadata"]["annotations"]
        assert annotations["alb.ingress.kubernetes.io/target-type"] == "ip"
        assert annotations["alb.ingress.kubernetes.io/security-groups"] == lb_sg.id
        assert json.loads(annotations["alb.ingress.kubernetes.io/listen-ports"]) == [{"HTTPS": 443}, {"HTTP": 80}]
        assert annotations["alb.ingress.kubernetes.io/ssl-redirect"] == "443"


def test_the_rate_limit_service_reaches_elasticache_over_tls_with_the_synced_auth_token(stack_plan):
    resources = stack_plan("prod").run.resources
    release = next(r for r in resources if r.type.endswith("v3:Release") and r.inputs.get("name") == "envoy-gateway")
    gateway = release.inputs["values"]["config"]["envoyGateway"]
    env = {e["name"]: e for e in gateway["provider"]["kubernetes"]["rateLimitDeployment"]["container"]["env"]}
    assert set(env) == {"REDIS_AUTH"}
    assert env["REDIS_AUTH"]["valueFrom"]["secretKeyRef"] == {"name": "ratelimit-redis-auth", "key": "token"}
    redis = gateway["rateLimit"]["backend"]["redis"]
    assert redis["url"].endswith(".cache.amazonaws.com:6379") and redis["tls"] == {}  # REDIS_TLS=true
    spc = next(
        r for r in resources if r.type.endswith(":SecretProviderClass") and "inference:edge:" in (r.parent or "")
    )
    synced = {s["secretName"]: [d["key"] for d in s["data"]] for s in spc.inputs["spec"]["secretObjects"]}
    assert synced == {"inference-api-keys": ["batch", "chat"], "ratelimit-redis-auth": ["token"]}
    dev = stack_plan("dev").run.resources
    dev_release = next(r for r in dev if r.type.endswith("v3:Release") and r.inputs.get("name") == "envoy-gateway")
    assert "provider" not in dev_release.inputs["values"]["config"]["envoyGateway"]  # in-cluster: no TLS, no AUTH


def test_the_log_bucket_admits_the_albs_access_logs_under_its_prefix(stack_plan):
    resources = stack_plan("dev").run.resources
    policy = next(
        r for r in resources if r.type == "aws:s3/bucketPolicy:BucketPolicy" and r.name.endswith("logs-policy")
    )
    statements = json.loads(policy.inputs["policy"])["Statement"]
    (alb,) = [s for s in statements if s.get("Sid") == "AllowLoadBalancerAccessLogs"]
    assert alb["Principal"] == {"AWS": "arn:aws:iam::797873946194:root"}  # us-west-2's ELB account
    assert alb["Resource"].endswith("/alb/AWSLogs/123456789012/*")
    params = next(r for r in resources if r.type.endswith(":IngressClassParams"))
    attributes = {a["key"]: a["value"] for a in params.inputs["spec"]["loadBalancerAttributes"]}
    assert attributes["access_logs.s3.prefix"] == "alb"


def test_the_waf_counts_rather_than_blocks_prompts_over_8_kb_and_external_dns_keeps_to_the_zone(stack_plan):
    resources = stack_plan("prod").run.resources
    (acl,) = [r for r in resources if r.type == "aws:wafv2/webAcl:WebAcl"]
    common = next(r for r in acl.inputs["rules"] if r["name"] == "AWSManagedRulesCommonRuleSet")
    overrides = common["statement"]["managedRuleGroupStatement"]["ruleActionOverrides"]
    # Issue 28 R3: every body rule counts (prompts quote HTML, paths, URLs, metadata addresses, exploit strings).
    assert overrides == [
        {"name": rule, "actionToUse": {"count": {}}}
        for rule in ("SizeRestrictions_BODY", "CrossSiteScripting_BODY", "GenericLFI_BODY", "GenericRFI_BODY",
                     "EC2MetaDataSSRF_BODY")
    ]  # fmt: skip
    bad_inputs = next(r for r in acl.inputs["rules"] if r["name"] == "AWSManagedRulesKnownBadInputsRuleSet")
    assert [o["name"] for o in bad_inputs["statement"]["managedRuleGroupStatement"]["ruleActionOverrides"]] == [
        "JavaDeserializationRCE_BODY",
        "Log4JRCE_BODY",
    ]
    # Every other rule of the groups still blocks (no override) and the groups themselves act.
    assert common["overrideAction"] == {"none": {}} and bad_inputs["overrideAction"] == {"none": {}}
    limits = {r["name"]: r["statement"].get("rateBasedStatement", {}).get("limit") for r in acl.inputs["rules"]}
    assert limits["rate-per-ip"] == 3000 and limits["rate-per-api-key"] == 6000
    # The same keys sent as Authorization: Bearer are counted by their own rule (a header rule skips requests
    # without the header).
    assert limits["rate-per-bearer-key"] == 6000
    keys = {
        r["name"]: r["statement"]["rateBasedStatement"]["customKeys"][0]["header"]["name"]
        for r in acl.inputs["rules"]
        if r["name"].startswith("rate-per-") and r["name"] != "rate-per-ip"
    }
    assert keys == {"rate-per-api-key": "x-api-key", "rate-per-bearer-key": "authorization"}
    dns = next(r for r in resources if r.type.endswith("v3:Release") and r.inputs.get("name") == "external-dns")
    values = dns.inputs["values"]
    assert values["domainFilters"] == ["example.com"] and values["policy"] == "upsert-only"
    assert "--zone-id-filter=Z0EXAMPLEPRODZONE0001" in values["extraArgs"]
    npu = stack_plan("npu").run.resources  # an existing certificate and no zone: no ExternalDNS
    assert not [r for r in npu if r.type.endswith("v3:Release") and r.inputs.get("name") == "external-dns"]
    assert not [r for r in npu if r.type == "aws:acm/certificate:Certificate"]


@pytest.mark.parametrize(("stack", "max_input_len"), [("dev", 4096), ("prod", 8192), ("npu", 2048)])
def test_each_stack_limits_http_bodies_from_its_max_input_len_and_times_out_slow_headers(
    stack_plan, stack, max_input_len
):
    """Issue 18 §4: the cluster's limits follow serving.maxInputLen (catalog/edge_policy.py formula)."""
    from inference_platform.catalog.edge_policy import request_body_limit

    resources = stack_plan(stack).run.resources
    body = next(r for r in resources if r.type.endswith(":BackendTrafficPolicy") and "mergeType" in r.inputs["spec"])
    assert body.inputs["spec"]["requestBuffer"]["limit"] == str(request_body_limit(max_input_len))
    assert [ref["kind"] for ref in body.inputs["spec"]["targetRefs"]] == ["HTTPRoute"]
    client = next(r for r in resources if r.type.endswith(":ClientTrafficPolicy"))
    assert client.inputs["spec"]["timeout"]["http"]["requestHeadersReceivedTimeout"] == "10s"
