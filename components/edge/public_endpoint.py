"""The internet-facing ALB in front of the gateway: certificate, WAF, the pinned Ingress class, the Ingresses,
and the DNS record.

- Certificate: an existing ACM ARN, or one requested here and DNS-validated in the stack's Route 53 zone.
- WAF: a WAFv2 web ACL (AWS managed groups, a rate rule per source IP, optionally one per API-key header
  value as an outer guard in front of the gateway's exact per-client limits).
- Pinning: an ``IngressClassParams`` holds everything that must not drift (scheme, TLS policy, certificate,
  WAF ACL, load-balancer attributes, group) and admits only Ingresses of the edge namespace. The AWS
  Load Balancer Controller gives IngressClassParams precedence over Ingress annotations, so no one editing
  an Ingress can detach the WAF or weaken TLS (an absent ``wafv2-acl-arn`` annotation means "leave
  unchanged", ``none`` means detach: both are overridden here).
- One Ingress, one ALB: HTTP/1.1 and SSE for the OpenAI API (``/v1`` and the server's health) to the
  gateway, which admits only its allow-list (issue 20: no gRPC and no KServe v2 is public, so the gRPC Ingress
  with its ``GRPC`` target groups is gone). Target type ``ip``, our load-balancer security group (so our rules
  are the ones in force), HTTP only to redirect.
- DNS: ExternalDNS owns the alias record, rather than a Route 53 record here fed by a tag look-up of the
  ALB. The controller creates the ALB only after the Ingress exists, so a look-up in the same update
  would race the controller and the first ``pulumi up`` would fail or need a second run. ExternalDNS
  watches the Ingress and writes the record when the ALB exists; its role may change record sets in the
  one zone only (``upsert-only``: it never deletes records it did not create).
- Await and teardown. Each Ingress waits for what the controller writes once the ALB exists
  (``pulumi.com/waitFor`` on ``status.loadBalancer.ingress[0].hostname``), which replaces the built-in
  Ingress await (it trips on the ALB controller's conventions, pulumi-kubernetes #408, where the
  maintainers suggest waitFor) rather than skipping all await logic: ``pulumi.com/skipAwait``
  is not set, so deleting an Ingress waits until it is gone, i.e. until the controller has deleted the
  ALB and removed its finalizer (pulumi-kubernetes v4 ``provider/pkg/metadata/overrides.go``,
  ``DeletedCondition``; pulumi-kubernetes #3154 discusses what skipAwait should skip on delete). The
  Ingresses depend on the IngressClass, its params and this component's own ``depends_on`` (the
  controller release), so on ``pulumi destroy`` or when ``edge.domain`` is removed they go first and
  those outlive them; the load-balancer security group, WAF ACL and certificate they reference too.
  With ``deletion_protection`` the controller cannot delete the ALB and the Ingress deletion fails
  (README: "Destroying a protected production stack").
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from inference_platform.catalog import edge_charts as charts
from inference_platform.catalog.names import fit_name
from inference_platform.catalog.serving_contract import OPENAI_HEALTH_PATH
from inference_platform.catalog.waf_body_rules import BODY_RULES
from inference_platform.components.common.errors import raise_if
from inference_platform.components.common.resource_options import own_depends_on
from inference_platform.components.common.security_context import (
    NOBODY_UID,
    container_security_context,
    pod_security_context,
)
from inference_platform.components.edge.iam_documents import external_dns_policy
from inference_platform.components.identity.pod_identity import PodIdentityRole, PodIdentityRoleArgs

INGRESS_CONTROLLER = "ingress.k8s.aws/alb"
PARAMS_API = "elbv2.k8s.aws/v1beta1"
ALB = "alb.ingress.kubernetes.io/"
WAIT_FOR = "pulumi.com/waitFor"
ALB_READY = "jsonpath={.status.loadBalancer.ingress[0].hostname}"
"""What the controller writes on the Ingress once the ALB exists (its DNS name)."""
# Where OpenAI clients send their key (Authorization: Bearer <key>), which the gateway also reads.
BEARER_HEADER = "authorization"
# What the ALB forwards to the gateway (a coarse first cut: the gateway's routes are the allow-list).
HTTP_PATHS = (("/v1", "Prefix"), (OPENAI_HEALTH_PATH, "Exact"))
EXTERNAL_DNS_NAMESPACE = "kube-system"
EXTERNAL_DNS_SERVICE_ACCOUNT = "external-dns"
WAF_WINDOWS = (60, 120, 300, 600)
# Managed rules that would refuse ordinary inference traffic, counted instead of blocking: every body rule of the
# managed groups (prompts over 8 KB, prompts quoting HTML, paths, URLs, metadata addresses or exploit strings;
# catalog/waf_body_rules.py decides and cites each).
DEFAULT_COUNTED_RULES: dict[str, tuple[str, ...]] = {group: tuple(rules) for group, rules in BODY_RULES.items()}
# Where the ALB writes its access logs in the log bucket (the bucket policy admits ELB there only).
DEFAULT_ACCESS_LOG_PREFIX = "alb"


@dataclass(frozen=True, kw_only=True)
class WafRules:
    """The ALB's web ACL: AWS managed rule groups, rate limits per source IP (and per API key), counted rules."""

    managed_rule_groups: Sequence[str]
    """Required. AWS managed rule group names, evaluated in this order."""
    ip_rate_limit: int
    """Required, >= 10. Requests per source IP per window."""
    window_seconds: int = 300
    """Default 300. 60, 120, 300 or 600."""
    api_key_rate_limit: int | None = None
    """Default none. Requests per value of ``api_key_header`` per window, and per value of ``Authorization`` (the
    bearer form of the same keys) in a second rule."""
    api_key_header: str = "x-api-key"
    """Default ``x-api-key``."""
    counted_rules: Mapping[str, Sequence[str]] = field(default_factory=lambda: dict(DEFAULT_COUNTED_RULES))
    """Default: every body rule of the core rule set and the known-bad-inputs group
    (``catalog.waf_body_rules.BODY_RULES``: prompts are free text that quotes HTML, paths, URLs and exploit strings).
    Rules of a managed group that only count (logged in metrics) instead of blocking."""


@dataclass(frozen=True, kw_only=True)
class PublicEndpointArgs:
    """What the public edge needs: the domain, the gateway's Service, the load-balancer security group, logs and WAF."""

    provider: k8s.Provider
    """Required. The cluster's Kubernetes provider."""
    namespace: str
    """Required. The edge namespace: the only one whose Ingresses may use this class."""
    name_prefix: str
    """Required. Physical-name prefix (project-stack)."""
    cluster_name: str
    """Required. ExternalDNS's owner id (its TXT records say which cluster wrote a record)."""
    cluster: pulumi.Input[str]
    """Required. The cluster resource's name output (orders the Pod Identity association after it)."""
    domain: str
    """Required. The API hostname."""
    backend_service: str
    """Required. The gateway's Envoy Service (ClusterIP) in ``namespace``."""
    backend_port: int
    """Required. Its port."""
    security_group_id: pulumi.Input[str]
    """Required. The project's load-balancer security group (443/80 from edge.allowedIngressCidrs)."""
    access_log_bucket: pulumi.Input[str]
    """Required. Bucket for the ALB's access logs."""
    waf: WafRules
    """Required."""
    hosted_zone_id: str | None = None
    """Default none. Route 53 zone of ``domain``: DNS validation and ExternalDNS. Needed unless
    ``certificate_arn`` is given (then DNS is the user's)."""
    hosted_zone_name: str | None = None
    """Default none. That zone's name (ExternalDNS's domain filter); needed with ``hosted_zone_id``."""
    certificate_arn: str | None = None
    """Default none (a certificate is requested and DNS-validated in ``hosted_zone_id``)."""
    tls_policy: str = "ELBSecurityPolicy-TLS13-1-2-Res-2021-06"
    """Default ``ELBSecurityPolicy-TLS13-1-2-Res-2021-06``."""
    idle_timeout_seconds: int = 600
    """Default 600 (ALB: 1-4000)."""
    redirect_http: bool = True
    """Default ``true``: a port-80 listener that only redirects to 443."""
    deletion_protection: bool = False
    """Default ``false``; production sets ``true``."""
    access_log_prefix: str = DEFAULT_ACCESS_LOG_PREFIX
    """Default ``alb``: the prefix the log bucket's policy admits ELB to (inference_platform.components.storage.documents)."""
    partition: str = "aws"
    """Default ``aws``."""
    tags: Mapping[str, str] = field(default_factory=dict)
    """Default none. Extra tags on the ALB and target groups (the controller also applies its defaults)."""


class PublicEndpoint(pulumi.ComponentResource):
    """The internet-facing ALB in front of the gateway: certificate, WAF, the Ingress class and Ingresses, DNS."""

    certificate_arn: pulumi.Output[str]
    web_acl_arn: pulumi.Output[str]
    ingress_class: str

    def __init__(self, name: str, args: PublicEndpointArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        _validate(args)
        super().__init__("inference:edge:PublicEndpoint", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        self.certificate_arn = (
            pulumi.Output.from_input(args.certificate_arn) if args.certificate_arn else _certificate(name, args, child)
        )
        acl = aws.wafv2.WebAcl(
            f"{name}-waf",
            name=f"{args.name_prefix}-edge",
            scope="REGIONAL",
            description=f"Inference API {args.domain}: managed groups and rate limits",
            default_action={"allow": {}},
            rules=waf_rules(args.waf, args.name_prefix),
            visibility_config=_visibility(f"{args.name_prefix}-edge"),
            opts=child,
        )
        self.web_acl_arn = acl.arn
        k8s_child = pulumi.ResourceOptions(parent=self, provider=args.provider)
        self.ingress_class = fit_name(f"{args.name_prefix}-alb", 63)  # a Kubernetes object name (DNS label)
        params = k8s.apiextensions.CustomResource(
            f"{name}-class-params",
            api_version=PARAMS_API,
            kind="IngressClassParams",
            metadata={"name": self.ingress_class},
            spec=pulumi.Output.all(self.certificate_arn, acl.arn, args.access_log_bucket).apply(
                lambda v: ingress_class_params_spec(args, certificate_arn=v[0], web_acl_arn=v[1], bucket=v[2])
            ),
            opts=k8s_child,
        )
        ingress_class = k8s.networking.v1.IngressClass(
            f"{name}-class",
            metadata={"name": self.ingress_class},
            spec={
                "controller": INGRESS_CONTROLLER,
                "parameters": {"apiGroup": "elbv2.k8s.aws", "kind": "IngressClassParams", "name": self.ingress_class},
            },
            opts=pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=[params]),
        )
        security_group = pulumi.Output.from_input(args.security_group_id)
        # Deleted before the class, its params and the controller (this component's depends_on): the
        # controller needs all three to delete the ALB and release the Ingress's finalizer.
        outlive = [ingress_class, params, *own_depends_on(opts)]
        for role, manifest in ingress_manifests(args, self.ingress_class, "").items():
            k8s.networking.v1.Ingress(
                f"{name}-{role}",
                metadata=security_group.apply(
                    lambda sg, role=role: ingress_manifests(args, self.ingress_class, sg)[role]["metadata"]  # type: ignore[misc]  # mypy infers no default-bound lambda
                ),
                spec=manifest["spec"],
                opts=pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=outlive),
            )
        if args.hosted_zone_id:
            _external_dns(name, args, self)
        self.register_outputs({"certificate_arn": self.certificate_arn, "web_acl_arn": self.web_acl_arn})


def load_balancer_attributes(args: PublicEndpointArgs, bucket: str) -> dict[str, str]:
    return {
        "idle_timeout.timeout_seconds": str(args.idle_timeout_seconds),
        "routing.http.drop_invalid_header_fields.enabled": "true",
        "routing.http2.enabled": "true",
        "deletion_protection.enabled": "true" if args.deletion_protection else "false",
        "access_logs.s3.enabled": "true",
        "access_logs.s3.bucket": bucket,
        "access_logs.s3.prefix": args.access_log_prefix,
    }


def ingress_class_params_spec(
    args: PublicEndpointArgs, *, certificate_arn: str, web_acl_arn: str, bucket: str
) -> dict[str, Any]:
    """What the controller enforces for every Ingress of the class (its CRD: elbv2.k8s.aws/v1beta1)."""
    return {
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": args.namespace}},
        "group": {"name": fit_name(f"{args.name_prefix}-edge", 63)},
        "scheme": "internet-facing",
        "ipAddressType": "ipv4",
        "targetType": "ip",
        "sslPolicy": args.tls_policy,
        "certificateArn": [certificate_arn],
        "wafv2AclArn": web_acl_arn,
        "loadBalancerAttributes": [{"key": k, "value": v} for k, v in load_balancer_attributes(args, bucket).items()],
        "tags": [{"key": k, "value": v} for k, v in sorted(args.tags.items())],
    }


def ingress_manifests(
    args: PublicEndpointArgs, ingress_class: str, security_group_id: str
) -> dict[str, dict[str, Any]]:
    """The Ingress of the OpenAI API (one ALB through the class's group), by role."""
    listen = [{"HTTPS": 443}, *([{"HTTP": 80}] if args.redirect_http else [])]
    common = {
        f"{ALB}target-type": "ip",
        f"{ALB}security-groups": security_group_id,
        # The controller adds the rule letting the ALB reach the targets to the targets' security group.
        f"{ALB}manage-backend-security-group-rules": "true",
        f"{ALB}listen-ports": json.dumps(listen),
        f"{ALB}healthcheck-path": "/",
        f"{ALB}success-codes": "200-499",
        # Created: wait for the ALB's name; deleted: wait until the controller released the Ingress.
        WAIT_FOR: ALB_READY,
        "external-dns.alpha.kubernetes.io/hostname": args.domain,
    }
    if args.redirect_http:
        common[f"{ALB}ssl-redirect"] = "443"
    annotations = {**common, f"{ALB}backend-protocol": "HTTP", f"{ALB}backend-protocol-version": "HTTP1"}
    backend = {"service": {"name": args.backend_service, "port": {"number": args.backend_port}}}
    return {
        "http": {
            "metadata": {"name": "edge-http", "namespace": args.namespace, "annotations": annotations},
            "spec": {
                "ingressClassName": ingress_class,
                "rules": [
                    {
                        "host": args.domain,
                        "http": {
                            "paths": [{"path": path, "pathType": kind, "backend": backend} for path, kind in HTTP_PATHS]
                        },
                    }
                ],
            },
        }
    }


def waf_rules(waf: WafRules, prefix: str) -> list[dict[str, Any]]:
    """Managed groups first (cheap rejections), then the rate rules."""
    rules: list[dict[str, Any]] = [
        {
            "name": group,
            "priority": i,
            "override_action": {"none": {}},
            "statement": {"managed_rule_group_statement": _managed_group(group, waf.counted_rules.get(group, ()))},
            "visibility_config": _visibility(f"{prefix}-{group}"),
        }
        for i, group in enumerate(waf.managed_rule_groups)
    ]
    base = len(rules)
    rules.append(
        {
            "name": "rate-per-ip",
            "priority": base,
            "action": {"block": {}},
            "statement": {
                "rate_based_statement": {
                    "limit": waf.ip_rate_limit,
                    "aggregate_key_type": "IP",
                    "evaluation_window_sec": waf.window_seconds,
                }
            },
            "visibility_config": _visibility(f"{prefix}-rate-per-ip"),
        }
    )
    if waf.api_key_rate_limit is not None:
        # One rule per header a key may come in: a rate-based rule keyed on a header omits the requests that lack
        # it (botocore 1.44.8 wafv2 RateBasedStatementCustomKey: "Web requests that are missing any of the
        # components specified in the aggregation keys are omitted from the rate-based rule evaluation"), so a
        # client sending Authorization: Bearer would pass a rule on x-api-key alone uncounted.
        headers = [("rate-per-api-key", waf.api_key_header)]
        if waf.api_key_header.lower() != BEARER_HEADER:
            headers.append(("rate-per-bearer-key", BEARER_HEADER))
        for offset, (rule, header) in enumerate(headers, start=1):
            rules.append(
                {
                    "name": rule,
                    "priority": base + offset,
                    "action": {"block": {}},
                    "statement": {
                        "rate_based_statement": {
                            "limit": waf.api_key_rate_limit,
                            "aggregate_key_type": "CUSTOM_KEYS",
                            "evaluation_window_sec": waf.window_seconds,
                            "custom_keys": [
                                {"header": {"name": header, "text_transformations": [{"priority": 0, "type": "NONE"}]}}
                            ],
                        }
                    },
                    "visibility_config": _visibility(f"{prefix}-{rule}"),
                }
            )
    return rules


def _managed_group(group: str, counted: Sequence[str]) -> dict[str, Any]:
    statement: dict[str, Any] = {"vendor_name": "AWS", "name": group}
    if counted:
        statement["rule_action_overrides"] = [{"name": rule, "action_to_use": {"count": {}}} for rule in counted]
    return statement


def _certificate(name: str, args: PublicEndpointArgs, child: pulumi.ResourceOptions) -> pulumi.Output[str]:
    certificate = aws.acm.Certificate(
        f"{name}-certificate",
        domain_name=args.domain,
        validation_method="DNS",
        key_algorithm="EC_prime256v1",
        opts=child,
    )
    # One hostname, so exactly one validation record.
    option = certificate.domain_validation_options[0]
    record = aws.route53.Record(
        f"{name}-certificate-validation",
        zone_id=args.hosted_zone_id,
        name=option.resource_record_name,
        type=option.resource_record_type,
        records=[option.resource_record_value],
        ttl=300,
        allow_overwrite=True,
        opts=child,
    )
    validation = aws.acm.CertificateValidation(
        f"{name}-certificate-ready",
        certificate_arn=certificate.arn,
        validation_record_fqdns=[record.fqdn],
        opts=child,
    )
    return cast(pulumi.Output[str], validation.certificate_arn)  # pulumi_aws is read as Any (pyproject.toml)


def _external_dns(name: str, args: PublicEndpointArgs, parent: pulumi.Resource) -> None:
    assert args.hosted_zone_id is not None
    identity = PodIdentityRole(
        f"{name}-external-dns",
        PodIdentityRoleArgs(
            cluster_name=args.cluster,
            namespace=EXTERNAL_DNS_NAMESPACE,
            service_account=EXTERNAL_DNS_SERVICE_ACCOUNT,
            partition=args.partition,
            inline_policy=json.dumps(external_dns_policy(hosted_zone_id=args.hosted_zone_id, partition=args.partition)),
            description=f"ExternalDNS of {args.cluster_name}: records of {args.domain}",
        ),
        opts=pulumi.ResourceOptions(parent=parent),
    )
    k8s.helm.v3.Release(
        f"{name}-external-dns",
        name="external-dns",
        **charts.EXTERNAL_DNS.release_source(),
        namespace=EXTERNAL_DNS_NAMESPACE,
        values=external_dns_values(args),
        opts=pulumi.ResourceOptions(parent=parent, provider=args.provider, depends_on=[identity]),
    )


def external_dns_values(args: PublicEndpointArgs) -> dict[str, Any]:
    """Chart 1.21.1 values: Ingresses of the edge namespace, the API zone only, never deleting."""
    return {
        "provider": {"name": "aws"},
        "sources": ["ingress"],
        "policy": "upsert-only",
        "registry": "txt",
        "txtOwnerId": args.cluster_name,
        # The filter names the zone (a zone matches when it ends with the filter); the owner id and
        # upsert-only keep ExternalDNS to the records it wrote itself.
        "domainFilters": [args.hosted_zone_name or args.domain],
        "extraArgs": [f"--zone-id-filter={args.hosted_zone_id}", f"--namespace={args.namespace}"],
        "serviceAccount": {"create": True, "name": EXTERNAL_DNS_SERVICE_ACCOUNT},
        "nodeSelector": {"node-role": "system"},
        "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}, "limits": {"memory": "128Mi"}},
        "podSecurityContext": pod_security_context(NOBODY_UID, fs_group=True),
        "securityContext": container_security_context(),
    }


def _visibility(metric: str) -> dict[str, Any]:
    # WAF MetricName is at most 255 (policies/rules/names.py); 128 keeps the CloudWatch dimension short.
    return {"cloudwatch_metrics_enabled": True, "metric_name": fit_name(metric, 128), "sampled_requests_enabled": True}


def _validate(args: PublicEndpointArgs) -> None:
    problems = []
    if not args.certificate_arn and not args.hosted_zone_id:
        problems.append("certificate_arn or hosted_zone_id: one is required (a certificate for the ALB)")
    if args.hosted_zone_id and not args.hosted_zone_name:
        problems.append("hosted_zone_name: required with hosted_zone_id (ExternalDNS's domain filter)")
    if not 1 <= args.idle_timeout_seconds <= 4000:
        problems.append(f"idle_timeout_seconds: {args.idle_timeout_seconds} is outside 1-4000")
    if not args.tls_policy.startswith("ELBSecurityPolicy-TLS13-"):
        problems.append(f"tls_policy: {args.tls_policy} is not a TLS 1.3 policy")
    if args.waf.ip_rate_limit < 10 or (args.waf.api_key_rate_limit is not None and args.waf.api_key_rate_limit < 10):
        problems.append("waf: rate limits must be >= 10 (AWS minimum)")
    if args.waf.window_seconds not in WAF_WINDOWS:
        problems.append(f"waf.window_seconds: {args.waf.window_seconds} is not one of {WAF_WINDOWS}")
    raise_if("PublicEndpoint", problems)
