"""Edge rules: the only way from the internet to Triton is the hardened ALB, then the authenticated gateway.

- ``edge-alb-hardened``: every internet-facing ALB (an IngressClassParams of the AWS Load Balancer
  Controller with scheme internet-facing) pins a TLS 1.3 policy, a certificate, a WAFv2 web ACL, access
  logs and dropping of invalid headers (deletion protection too, in production); every Ingress of such a
  class listens on HTTPS, with HTTP only when it redirects to 443.
- ``edge-web-acl-guards``: every WAFv2 web ACL evaluates at least one AWS managed rule group and a
  rate-based rule per source IP of at least AWS's minimum (10), each of which acts (a rule whose action,
  or a rule group whose override, is ``count`` only counts), and one that allows by default has at least
  one blocking rule; a standalone ``aws:wafv2/webAclRule`` that only counts is refused too.
- ``edge-waf-prompts-not-blocked``: a web ACL that evaluates the core rule set or the known-bad-inputs group
  overrides every body rule of it (``catalog.waf_body_rules.BODY_RULES``: XSS, LFI, RFI, EC2 metadata SSRF, body
  size, Java deserialisation, Log4j) to count: each blocks legitimate prompts and batch files with a bare 403 before
  the gateway (prompts about web security quote exactly those patterns), and nothing behind the edge renders,
  opens, fetches or deserialises a body.
- ``inference-not-exposed-directly``: no ``LoadBalancer`` or ``NodePort`` Service in an inference
  namespace (a Service selects pods of its own namespace only), and the gateway's own Envoy Service (EnvoyProxy) is ClusterIP:
  the ALB, through the gateway, is the only way in.
- ``inference-routes-authenticated``: every Gateway API route (HTTPRoute, GRPCRoute, TCPRoute, TLSRoute,
  UDPRoute, of any version) whose backends are in an inference namespace is targeted by a SecurityPolicy
  with a configured authentication method: apiKeyAuth with credentialRefs, somewhere to extract the key
  from and ``sanitize`` (the key never reaches the server, issue 20), jwt with providers, oidc with a provider and client, basicAuth with users, extAuth with a backend.
  A SecurityPolicy whose method names no credentials is reported itself.
- ``rate-limit-store-encrypted``: an ElastiCache replication group encrypts at rest with a customer key,
  requires TLS in transit and an AUTH token (or RBAC user groups); a serverless cache names a customer key
  and (Redis/Valkey) a user group; a cache cluster outside a replication group is refused (the API offers
  it neither encryption at rest nor AUTH); a user needs a password or IAM authentication, and a user group
  never holds AWS's built-in ``default`` user (no password).
- ``acm-certificate-dns-validated``: an ACM certificate is DNS-validated (renews itself; e-mail validation
  waits for a person) with a key of at least RSA 2048 or an EC P-256/P-384 key; an imported certificate's
  key (``certificateBody``, else ``privateKey``, parsed as PEM) meets the same bar.
- ``reference-grants-scoped``: a ReferenceGrant into an inference namespace names the one Service it
  opens and the namespace it opens it to (no wildcard grants to every Service or namespace).
"""

from __future__ import annotations

from typing import Any

from pulumi_policy import EnforcementLevel, PolicyConfigSchema, ResourceValidationArgs, StackValidationArgs

from inference_platform.catalog.aws_names import ALB_TLS13_POLICIES
from inference_platform.catalog.waf_body_rules import BODY_RULES
from inference_platform.policies.callbacks import ReportViolation, ResourceValidationPolicy, StackValidationPolicy
from inference_platform.policies.props import as_list, get

INGRESS_CLASS_PARAMS = "kubernetes:elbv2.k8s.aws/v1beta1:IngressClassParams"
INGRESS_CLASS = "kubernetes:networking.k8s.io/v1:IngressClass"
INGRESS = "kubernetes:networking.k8s.io/v1:Ingress"
SERVICE = "kubernetes:core/v1:Service"
ENVOY_PROXY = "kubernetes:gateway.envoyproxy.io/v1alpha1:EnvoyProxy"
SECURITY_POLICY = "kubernetes:gateway.envoyproxy.io/v1alpha1:SecurityPolicy"
GATEWAY_API_GROUP = "gateway.networking.k8s.io"
ROUTE_KINDS = ("HTTPRoute", "GRPCRoute", "TCPRoute", "TLSRoute", "UDPRoute")
WEB_ACL = "aws:wafv2/webAcl:WebAcl"
WEB_ACL_RULE = "aws:wafv2/webAclRule:WebAclRule"
REPLICATION_GROUP = "aws:elasticache/replicationGroup:ReplicationGroup"
CACHE_CLUSTER = "aws:elasticache/cluster:Cluster"
SERVERLESS_CACHE = "aws:elasticache/serverlessCache:ServerlessCache"
CACHE_USER = "aws:elasticache/user:User"
CACHE_USER_GROUP = "aws:elasticache/userGroup:UserGroup"
CACHE_TYPES = (REPLICATION_GROUP, CACHE_CLUSTER, SERVERLESS_CACHE, CACHE_USER, CACHE_USER_GROUP)
# AWS's built-in user of every Redis/Valkey cache: no password ("on ~* +@all nopass").
AWS_DEFAULT_CACHE_USER = "default"
CERTIFICATE = "aws:acm/certificate:Certificate"
REFERENCE_GRANT = "kubernetes:gateway.networking.k8s.io/v1beta1:ReferenceGrant"
CERTIFICATE_KEY_ALGORITHMS = ("RSA_2048", "RSA_3072", "RSA_4096", "EC_prime256v1", "EC_secp384r1")
MIN_RSA_BITS = 2048
EC_CURVES = ("secp256r1", "secp384r1")  # P-256 and P-384: what keyAlgorithm allows (EC_prime256v1 = P-256)
ALB_CONTROLLER = "ingress.k8s.aws/alb"
ALB = "alb.ingress.kubernetes.io/"
AUTH_METHODS = ("apiKeyAuth", "jwt", "oidc", "basicAuth", "extAuth")
INFERENCE_NAMESPACES = ["inference"]
WAF_MIN_RATE_LIMIT = 10


def route_kind(resource_type: str) -> str | None:
    """The Gateway API route kind of a type token, whatever its version (v1, v1beta1, v1alpha2, v1alpha3)."""
    if not resource_type.startswith(f"kubernetes:{GATEWAY_API_GROUP}/"):
        return None
    kind = resource_type.rsplit(":", 1)[-1]
    return kind if kind in ROUTE_KINDS else None


def _method_problem(spec: Any, method: str) -> str | None:
    """Why a SecurityPolicy's authentication method authenticates no one; None when it is configured."""
    config = get(spec, method)
    if method == "apiKeyAuth":
        if not as_list(get(config, "credentialRefs")):
            return "apiKeyAuth has no credentialRefs: no key is valid, or (with an empty list) none is checked"
        if not as_list(get(config, "extractFrom")):
            return "apiKeyAuth has no extractFrom: the key is read from nowhere"
        if get(config, "sanitize") is not True:
            return "apiKeyAuth without sanitize: true forwards the client's key to the server"
    elif method == "jwt" and not as_list(get(config, "providers")):
        return "jwt has no providers"
    elif method == "oidc" and not (get(config, "provider.issuer") and get(config, "clientID")):
        return "oidc has no provider issuer or clientID"
    elif method == "basicAuth" and not get(config, "users.name"):
        return "basicAuth names no users Secret"
    elif method == "extAuth" and not (get(config, "grpc") or get(config, "http")):
        return "extAuth has no grpc or http backend"
    return None


def authenticates(spec: Any) -> bool:
    return any(get(spec, f"{m}") and _method_problem(spec, m) is None for m in AUTH_METHODS)


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
        if policy not in ALB_TLS13_POLICIES:
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


def _counts_only(rule: Any) -> bool:
    """A rule that only counts: its action is count, or (a rule group) its override action is count."""
    if get(rule, "overrideAction.count") is not None:
        return True
    action = get(rule, "action") or {}
    return get(action, "count") is not None and not any(
        get(action, k) is not None for k in ("block", "captcha", "challenge", "allow")
    )


def _blocks(rule: Any) -> bool:
    if _counts_only(rule):
        return False
    if get(rule, "statement.managedRuleGroupStatement") or get(rule, "statement.ruleGroupReferenceStatement"):
        return True  # overrideAction none: the group's own (blocking) actions apply
    return any(get(rule, f"action.{k}") is not None for k in ("block", "captcha", "challenge"))


def _web_acl_guards(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type == WEB_ACL_RULE:
        if _counts_only(args.props):
            report(f"rule {get(args.props, 'name')} only counts (action count): it blocks nothing")
        return
    if args.resource_type != WEB_ACL:
        return
    rules = as_list(get(args.props, "rules"))
    for rule in rules:
        if _counts_only(rule):
            report(f"rule {get(rule, 'name')} only counts (action or overrideAction count): it blocks nothing")
    acting = [r for r in rules if not _counts_only(r)]
    if get(args.props, "defaultAction.allow") is not None and not any(_blocks(r) for r in rules):
        report("the default action allows and no rule blocks: every request passes")
    if not any(get(r, "statement.managedRuleGroupStatement") for r in acting):
        report("no AWS managed rule group")
    ip_limits = [
        get(r, "statement.rateBasedStatement.limit")
        for r in acting
        if get(r, "statement.rateBasedStatement.aggregateKeyType") == "IP"
    ]
    if not ip_limits:
        report("no rate-based rule per source IP")
    for limit in ip_limits:
        if limit is not None and float(limit) < WAF_MIN_RATE_LIMIT:
            report(f"rate limit {limit} is below AWS's minimum {WAF_MIN_RATE_LIMIT}")


def _prompts_not_blocked(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type != WEB_ACL:
        return
    for rule in as_list(get(args.props, "rules")):
        group = get(rule, "statement.managedRuleGroupStatement")
        if not group or str(get(group, "name")) not in BODY_RULES or _counts_only(rule):
            continue
        name = str(get(group, "name"))
        counted = {
            str(get(o, "name"))
            for o in as_list(get(group, "ruleActionOverrides"))
            if get(o, "actionToUse.count") is not None
        }
        blocking = [r for r in BODY_RULES[name] if r not in counted]
        if blocking:
            report(
                f"rule {get(rule, 'name')}: {name}'s body rules {', '.join(blocking)} block legitimate prompts and batch "
                "files (HTML, paths, URLs, metadata addresses and exploit strings quoted in text, bodies over 8 KB) "
                "with a bare 403 before the gateway; override them to count (catalog/waf_body_rules.py)"
            )


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
        spec = get(resource.props, "spec") or {}
        namespace = get(resource.props, "metadata.namespace", "default")
        for method in AUTH_METHODS:
            problem = get(spec, method) and _method_problem(spec, method)
            if problem:
                at = f"SecurityPolicy {namespace}/{get(resource.props, 'metadata.name')}"
                report(f"{at}: {problem}", resource.urn)
        if not authenticates(spec):
            continue
        for ref in as_list(get(resource.props, "spec.targetRefs")):
            protected.add((str(get(ref, "kind")), namespace, str(get(ref, "name"))))
    for resource in args.resources:
        if route_kind(resource.resource_type) is None:
            continue
        namespace = get(resource.props, "metadata.namespace", "default")
        backends = [
            get(ref, "namespace", namespace)
            for rule in as_list(get(resource.props, "spec.rules"))
            for ref in as_list(get(rule, "backendRefs"))
        ]
        if not any(b in namespaces for b in backends):
            continue
        kind = route_kind(resource.resource_type)
        name = get(resource.props, "metadata.name")
        if (kind, namespace, str(name)) not in protected:
            report(
                f"{kind} {namespace}/{name} reaches inference without an authentication SecurityPolicy", resource.urn
            )


def _store_encrypted(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type not in CACHE_TYPES:
        return
    props = args.props
    if args.resource_type == REPLICATION_GROUP:
        if get(props, "atRestEncryptionEnabled") is not True or not get(props, "kmsKeyId"):
            report("not encrypted at rest with a customer-managed key")
        if get(props, "transitEncryptionEnabled") is not True or get(props, "transitEncryptionMode") == "preferred":
            report("TLS in transit is not required")
        if not (get(props, "authToken") or get(props, "authTokenWo") or as_list(get(props, "userGroupIds"))):
            report("no AUTH token; no RBAC user group either")
    elif args.resource_type == CACHE_CLUSTER:
        if not get(props, "replicationGroupId"):
            report(
                f"a standalone {get(props, 'engine', 'cache')} cluster: aws:elasticache/cluster offers neither "
                "encryption at rest with a customer key nor AUTH; use a replication group (or a serverless "
                "cache) that does"
            )
    elif args.resource_type == SERVERLESS_CACHE:
        if not get(props, "kmsKeyId"):
            report("not encrypted at rest with a customer-managed key (kmsKeyId unset: AWS-owned key)")
        if str(get(props, "engine", "")).lower() == "memcached":
            report("a memcached serverless cache has no authentication; use Redis or Valkey with a user group")
        elif not get(props, "userGroupId"):
            report("no userGroupId: clients connect as AWS's passwordless default user")
    elif args.resource_type == CACHE_USER:
        mode = str(get(props, "authenticationMode.type", "") or "")
        passwords = as_list(get(props, "passwords")) or as_list(get(props, "passwordsWo"))
        if get(props, "noPasswordRequired") is True or mode == "no-password-required":
            report(f"user {get(props, 'userName')}: no password required")
        elif mode != "iam" and not passwords and not as_list(get(props, "authenticationMode.passwords")):
            report(f"user {get(props, 'userName')}: no password and no IAM authentication")
        if "nopass" in str(get(props, "accessString", "")).split():
            report(f"user {get(props, 'userName')}: accessString grants nopass")
    elif AWS_DEFAULT_CACHE_USER in [str(u) for u in as_list(get(props, "userIds"))]:
        report(
            f"user group {get(props, 'userGroupId')} holds AWS's built-in user {AWS_DEFAULT_CACHE_USER!r} (no "
            "password): make a user named default with a password and a different user id"
        )


def _weak_key(public_key: Any) -> str | None:
    """Why an imported certificate's public key falls short of RSA 2048 or EC P-256/P-384; None if it does not."""
    from cryptography.hazmat.primitives.asymmetric import ec, rsa

    if isinstance(public_key, rsa.RSAPublicKey):
        bits = public_key.key_size
        return None if bits >= MIN_RSA_BITS else f"an RSA {bits} key (at least RSA {MIN_RSA_BITS})"
    if isinstance(public_key, ec.EllipticCurvePublicKey):
        curve = public_key.curve.name
        return None if curve in EC_CURVES else f"an EC {curve} key (P-256 or P-384 only)"
    return f"a {type(public_key).__name__} key (RSA >= {MIN_RSA_BITS} or EC P-256/P-384 only)"


def _imported_key_problem(props: Any) -> str | None:
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization

    body = get(props, "certificateBody")
    private = get(props, "privateKey") or get(props, "privateKeyWo")
    try:
        if body:
            public_key: object = x509.load_pem_x509_certificate(str(body).encode()).public_key()
        elif private:
            public_key = serialization.load_pem_private_key(str(private).encode(), password=None).public_key()
        else:
            return None
    except (ValueError, TypeError) as err:
        return f"imported certificate cannot be read as PEM ({err}); its key cannot be checked"
    weak = _weak_key(public_key)
    return f"imported certificate has {weak}" if weak else None


def _certificate_dns_validated(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type != CERTIFICATE or get(args.props, "certificateAuthorityArn"):
        return  # a private CA's certificate has no validation
    if get(args.props, "domainName") is None:
        problem = _imported_key_problem(args.props)  # an imported certificate: judge its key
        if problem:
            report(problem)
        return
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
        description="WAFv2 web ACLs use AWS managed rule groups and a per-IP rate rule >= 10 that act (not only "
        "count), and block something when they allow by default.",
        validate=_web_acl_guards,
        enforcement_level=EnforcementLevel.MANDATORY,
    ),
    ResourceValidationPolicy(
        name="edge-waf-prompts-not-blocked",
        description="Web ACLs count (never block) the AWS managed body rules that match legitimate prompts.",
        validate=_prompts_not_blocked,
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
        description="ACM certificates are DNS-validated with RSA >= 2048 or EC P-256/P-384 keys; imported ones "
        "carry such a key.",
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
        description="ElastiCache in every form encrypts at rest with a CMK, requires TLS and authenticates "
        "(AUTH token or users with passwords); no standalone cache clusters.",
        validate=_store_encrypted,
        enforcement_level=EnforcementLevel.MANDATORY,
    ),
]
