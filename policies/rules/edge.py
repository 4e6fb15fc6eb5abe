"""Edge rules: the only way from the internet to Triton is the hardened ALB, then the authenticated gateway.

- ``edge-alb-hardened``: every internet-facing ALB (an IngressClassParams of the AWS Load Balancer
  Controller with scheme internet-facing) pins a TLS 1.3 policy, a certificate, a WAFv2 web ACL, access
  logs and dropping of invalid headers (deletion protection too, in production); every Ingress of such a
  class listens on HTTPS, with HTTP only when it redirects to 443.
- ``edge-web-acl-guards``: every WAFv2 web ACL evaluates at least one AWS managed rule group and a
  rate-based rule per source IP of at least AWS's minimum (10).
- ``inference-not-exposed-directly``: no ``LoadBalancer`` or ``NodePort`` Service in an inference
  namespace (a Service selects pods of its own namespace only), and the gateway's own Envoy Service (EnvoyProxy) is ClusterIP:
  the ALB, through the gateway, is the only way in.
- ``inference-routes-authenticated``: every HTTPRoute/GRPCRoute whose backends are in an inference
  namespace is targeted by a SecurityPolicy with an authentication method (apiKeyAuth, jwt, oidc,
  basicAuth or extAuth).
- ``rate-limit-store-encrypted``: an ElastiCache replication group encrypts at rest with a customer key,
  requires TLS in transit and an AUTH token.
- ``acm-certificate-dns-validated``: an ACM certificate is DNS-validated (renews itself; e-mail validation
  waits for a person) with a key of at least RSA 2048 or an EC P-256/P-384 key.
- ``reference-grants-scoped``: a ReferenceGrant into an inference namespace names the one Service it
  opens and the namespace it opens it to (no wildcard grants to every Service or namespace).
"""

from __future__ import annotations

from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    PolicyConfigSchema,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)

from policies.props import as_list, get

INGRESS_CLASS_PARAMS = "kubernetes:elbv2.k8s.aws/v1beta1:IngressClassParams"
INGRESS_CLASS = "kubernetes:networking.k8s.io/v1:IngressClass"
INGRESS = "kubernetes:networking.k8s.io/v1:Ingress"
SERVICE = "kubernetes:core/v1:Service"
ENVOY_PROXY = "kubernetes:gateway.envoyproxy.io/v1alpha1:EnvoyProxy"
SECURITY_POLICY = "kubernetes:gateway.envoyproxy.io/v1alpha1:SecurityPolicy"
ROUTES = ("kubernetes:gateway.networking.k8s.io/v1:HTTPRoute", "kubernetes:gateway.networking.k8s.io/v1:GRPCRoute")
WEB_ACL = "aws:wafv2/webAcl:WebAcl"
REPLICATION_GROUP = "aws:elasticache/replicationGroup:ReplicationGroup"
CERTIFICATE = "aws:acm/certificate:Certificate"
REFERENCE_GRANT = "kubernetes:gateway.networking.k8s.io/v1beta1:ReferenceGrant"
CERTIFICATE_KEY_ALGORITHMS = ("RSA_2048", "RSA_3072", "RSA_4096", "EC_prime256v1", "EC_secp384r1")
ALB_CONTROLLER = "ingress.k8s.aws/alb"
ALB = "alb.ingress.kubernetes.io/"
TLS13_POLICY_PREFIXES = ("ELBSecurityPolicy-TLS13-1-2-", "ELBSecurityPolicy-TLS13-1-3-")
AUTH_METHODS = ("apiKeyAuth", "jwt", "oidc", "basicAuth", "extAuth")
INFERENCE_NAMESPACES = ["inference"]
WAF_MIN_RATE_LIMIT = 10


def _attributes(params: Any) -> dict[str, str]:
    return {str(get(a, "key")): str(get(a, "value")) for a in as_list(get(params, "spec.loadBalancerAttributes"))}


def _alb_hardened(args: StackValidationArgs, report: ReportViolation) -> None:
    production = bool(args.get_config().get("production", False))
    params_by_name = {
        get(r.props, "metadata.name"): r for r in args.resources if r.resource_type == INGRESS_CLASS_PARAMS
    }
    public_classes = set()
    for resource in args.resources:
        if resource.resource_type != INGRESS_CLASS or get(resource.props, "spec.controller") != ALB_CONTROLLER:
            continue
        params = params_by_name.get(get(resource.props, "spec.parameters.name"))
        name = get(resource.props, "metadata.name")
        if params is None:
            report(f"IngressClass {name}: no IngressClassParams pins its load balancer's settings", resource.urn)
            continue
        if get(params.props, "spec.scheme") != "internet-facing":
            continue
        public_classes.add(name)
        at = f"IngressClassParams {get(params.props, 'metadata.name')}"
        policy = str(get(params.props, "spec.sslPolicy") or "")
        if not policy.startswith(TLS13_POLICY_PREFIXES):
            report(f"{at}: sslPolicy {policy or '(unset: ELBSecurityPolicy-2016-08)'} is not TLS 1.3", params.urn)
        if not as_list(get(params.props, "spec.certificateArn")):
            report(f"{at}: no certificateArn (HTTPS needs one)", params.urn)
        if not get(params.props, "spec.wafv2AclArn"):
            report(f"{at}: no wafv2AclArn (an internet-facing ALB needs the WAF, pinned here)", params.urn)
        attributes = _attributes(params.props)
        if attributes.get("access_logs.s3.enabled") != "true" or not attributes.get("access_logs.s3.bucket"):
            report(f"{at}: access logs are off", params.urn)
        if attributes.get("routing.http.drop_invalid_header_fields.enabled") != "true":
            report(f"{at}: invalid header fields are not dropped", params.urn)
        if production and attributes.get("deletion_protection.enabled") != "true":
            report(f"{at}: deletion protection is off in production", params.urn)
    for resource in args.resources:
        if resource.resource_type != INGRESS or get(resource.props, "spec.ingressClassName") not in public_classes:
            continue
        annotations = dict(get(resource.props, "metadata.annotations") or {})
        at = f"Ingress {get(resource.props, 'metadata.namespace')}/{get(resource.props, 'metadata.name')}"
        listen = str(annotations.get(f"{ALB}listen-ports", ""))
        if "HTTPS" not in listen:
            report(f"{at}: listens without HTTPS ({listen or 'default: HTTP 80 only'})", resource.urn)
        plain_http = '"HTTP"' in listen or "'HTTP'" in listen
        if plain_http and str(annotations.get(f"{ALB}ssl-redirect", "")) != "443":
            report(f"{at}: listens on HTTP without redirecting to 443", resource.urn)
        if annotations.get(f"{ALB}wafv2-acl-arn") == "none":
            report(f"{at}: detaches the WAF (wafv2-acl-arn: none)", resource.urn)


def _web_acl_guards(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type != WEB_ACL:
        return
    rules = as_list(get(args.props, "rules"))
    if not any(get(r, "statement.managedRuleGroupStatement") for r in rules):
        report("no AWS managed rule group")
    ip_limits = [
        get(r, "statement.rateBasedStatement.limit")
        for r in rules
        if get(r, "statement.rateBasedStatement.aggregateKeyType") == "IP"
    ]
    if not ip_limits:
        report("no rate-based rule per source IP")
    for limit in ip_limits:
        if limit is not None and float(limit) < WAF_MIN_RATE_LIMIT:
            report(f"rate limit {limit} is below AWS's minimum {WAF_MIN_RATE_LIMIT}")


def _not_exposed(args: StackValidationArgs, report: ReportViolation) -> None:
    namespaces = set(args.get_config().get("namespaces") or INFERENCE_NAMESPACES)
    for resource in args.resources:
        if resource.resource_type == SERVICE:
            kind = get(resource.props, "spec.type", "ClusterIP")
            if kind not in ("LoadBalancer", "NodePort"):
                continue
            # A Service selects pods of its own namespace only.
            namespace = get(resource.props, "metadata.namespace", "default")
            if namespace in namespaces:
                name = get(resource.props, "metadata.name") or resource.name
                report(
                    f"Service {namespace}/{name} is {kind}: inference is reachable only through the edge", resource.urn
                )
        elif resource.resource_type == ENVOY_PROXY:
            kind = get(resource.props, "spec.provider.kubernetes.envoyService.type", "LoadBalancer")
            if kind != "ClusterIP":
                report(
                    f"EnvoyProxy {get(resource.props, 'metadata.name')}: the gateway's Service is {kind} "
                    "(Envoy Gateway's default is LoadBalancer); the ALB must be the only way in",
                    resource.urn,
                )


def _routes_authenticated(args: StackValidationArgs, report: ReportViolation) -> None:
    namespaces = set(args.get_config().get("namespaces") or INFERENCE_NAMESPACES)
    protected: set[tuple[str, str, str]] = set()
    for resource in args.resources:
        if resource.resource_type != SECURITY_POLICY:
            continue
        if not any(get(resource.props, f"spec.{m}") for m in AUTH_METHODS):
            continue
        namespace = get(resource.props, "metadata.namespace", "default")
        for ref in as_list(get(resource.props, "spec.targetRefs")):
            protected.add((str(get(ref, "kind")), namespace, str(get(ref, "name"))))
    for resource in args.resources:
        if resource.resource_type not in ROUTES:
            continue
        namespace = get(resource.props, "metadata.namespace", "default")
        backends = [
            get(ref, "namespace", namespace)
            for rule in as_list(get(resource.props, "spec.rules"))
            for ref in as_list(get(rule, "backendRefs"))
        ]
        if not any(b in namespaces for b in backends):
            continue
        kind = resource.resource_type.rsplit(":", 1)[-1]
        name = get(resource.props, "metadata.name")
        if (kind, namespace, str(name)) not in protected:
            report(
                f"{kind} {namespace}/{name} reaches inference without an authentication SecurityPolicy", resource.urn
            )


def _store_encrypted(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type != REPLICATION_GROUP:
        return
    if get(args.props, "atRestEncryptionEnabled") is not True or not get(args.props, "kmsKeyId"):
        report("not encrypted at rest with a customer-managed key")
    if (
        get(args.props, "transitEncryptionEnabled") is not True
        or get(args.props, "transitEncryptionMode") == "preferred"
    ):
        report("TLS in transit is not required")
    if not get(args.props, "authToken"):
        report("no AUTH token")


def _certificate_dns_validated(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type != CERTIFICATE or get(args.props, "certificateAuthorityArn"):
        return  # a private CA's certificate has no validation
    if get(args.props, "domainName") is None:
        return  # an imported certificate
    if get(args.props, "validationMethod") != "DNS":
        report(f"validationMethod is {get(args.props, 'validationMethod')!r}: DNS validation renews by itself")
    algorithm = get(args.props, "keyAlgorithm", "RSA_2048")
    if algorithm not in CERTIFICATE_KEY_ALGORITHMS:
        report(f"keyAlgorithm {algorithm} is not one of {', '.join(CERTIFICATE_KEY_ALGORITHMS)}")


def _reference_grants_scoped(args: StackValidationArgs, report: ReportViolation) -> None:
    namespaces = set(args.get_config().get("namespaces") or INFERENCE_NAMESPACES)
    for resource in args.resources:
        if resource.resource_type != REFERENCE_GRANT:
            continue
        namespace = get(resource.props, "metadata.namespace", "default")
        if namespace not in namespaces:
            continue
        at = f"ReferenceGrant {namespace}/{get(resource.props, 'metadata.name')}"
        for target in as_list(get(resource.props, "spec.to")):
            if not get(target, "name"):
                report(f"{at}: opens every {get(target, 'kind', '?')} of the namespace (name it)", resource.urn)
        for source in as_list(get(resource.props, "spec.from")):
            if not get(source, "namespace") or get(source, "namespace") == "*":
                report(f"{at}: grants {get(source, 'kind', '?')}s of no named namespace", resource.urn)


_NAMESPACES = {"type": "array", "items": {"type": "string"}, "default": INFERENCE_NAMESPACES}

POLICIES = [
    StackValidationPolicy(
        name="edge-alb-hardened",
        description="Internet-facing ALBs pin TLS 1.3, a certificate, the WAF, access logs and header "
        "hygiene (and deletion protection in production); HTTP only redirects.",
        validate=_alb_hardened,
        enforcement_level=EnforcementLevel.MANDATORY,
        config_schema=PolicyConfigSchema(properties={"production": {"type": "boolean", "default": False}}),
    ),
    ResourceValidationPolicy(
        name="edge-web-acl-guards",
        description="WAFv2 web ACLs use AWS managed rule groups and a per-IP rate rule >= 10.",
        validate=_web_acl_guards,
        enforcement_level=EnforcementLevel.MANDATORY,
    ),
    StackValidationPolicy(
        name="inference-not-exposed-directly",
        description="No LoadBalancer/NodePort Service reaches inference pods; the gateway's Service is ClusterIP.",
        validate=_not_exposed,
        enforcement_level=EnforcementLevel.MANDATORY,
        config_schema=PolicyConfigSchema(properties={"namespaces": _NAMESPACES}),
    ),
    StackValidationPolicy(
        name="inference-routes-authenticated",
        description="Every Gateway API route to an inference namespace has an authentication SecurityPolicy.",
        validate=_routes_authenticated,
        enforcement_level=EnforcementLevel.MANDATORY,
        config_schema=PolicyConfigSchema(properties={"namespaces": _NAMESPACES}),
    ),
    ResourceValidationPolicy(
        name="acm-certificate-dns-validated",
        description="ACM certificates are DNS-validated with RSA >= 2048 or EC P-256/P-384 keys.",
        validate=_certificate_dns_validated,
        enforcement_level=EnforcementLevel.MANDATORY,
    ),
    StackValidationPolicy(
        name="reference-grants-scoped",
        description="ReferenceGrants into inference namespaces name the Service and the source namespace.",
        validate=_reference_grants_scoped,
        enforcement_level=EnforcementLevel.MANDATORY,
        config_schema=PolicyConfigSchema(properties={"namespaces": _NAMESPACES}),
    ),
    ResourceValidationPolicy(
        name="rate-limit-store-encrypted",
        description="ElastiCache encrypts at rest with a CMK, requires TLS and an AUTH token.",
        validate=_store_encrypted,
        enforcement_level=EnforcementLevel.MANDATORY,
    ),
]
