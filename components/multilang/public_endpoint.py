"""The public edge for other Pulumi languages: the ALB with its WAF, certificate and DNS
(components.edge.PublicEndpoint)."""

# Annotations stay real types (no ``from __future__ import annotations``): the provider's analyzer reads them.
from typing import NotRequired, TypedDict

import pulumi

from inference_platform.components.edge import PublicEndpoint as _PublicEndpoint
from inference_platform.components.edge import PublicEndpointArgs as _PublicEndpointArgs
from inference_platform.components.edge import WafRules
from inference_platform.components.multilang.options import inner_options, kubernetes_provider, supplied


class Waf(TypedDict):
    """The ALB's web ACL: AWS managed rule groups and rate limits."""

    managed_rule_groups: list[str]
    """AWS managed rule group names, evaluated in this order (e.g. ``AWSManagedRulesCommonRuleSet``)."""
    ip_rate_limit: int
    """At least 10. Requests per source IP per window."""
    window_seconds: NotRequired[int]
    """Default 300. 60, 120, 300 or 600."""
    api_key_rate_limit: NotRequired[int]
    """Default none. Requests per API-key header value per window."""
    api_key_header: NotRequired[str]
    """Default ``x-api-key``."""
    counted_rules: NotRequired[dict[str, list[str]]]
    """Default: every body rule of the core rule set and the known-bad-inputs group counts instead of blocking
    (prompts exceed 8 KB and quote HTML, paths, URLs and exploit strings: catalog/waf_body_rules.py)."""


class PublicEndpointArgs(TypedDict):
    """The internet-facing edge: an ALB (through the AWS Load Balancer Controller's IngressClass) in front
    of the gateway's Envoy Service, a regional WAF, an ACM certificate and ExternalDNS. Needs the cluster's
    Kubernetes provider as the ``providers: {kubernetes: ...}`` resource option."""

    namespace: str
    """The edge namespace: the only one whose Ingresses may use this IngressClass."""
    name_prefix: str
    """Physical-name prefix (WAF, IngressClass)."""
    cluster_name: str
    """ExternalDNS's owner id."""
    cluster: pulumi.Input[str]
    """The Cluster's ``clusterName`` output (orders the Pod Identity association after the cluster)."""
    domain: str
    """The API hostname."""
    backend_service: str
    """The gateway's Envoy Service (ClusterIP) in ``namespace``."""
    backend_port: int
    """Its port."""
    security_group_id: pulumi.Input[str]
    """The load balancer's security group."""
    access_log_bucket: pulumi.Input[str]
    """Bucket for the ALB's access logs (a ModelStore's log bucket admits them with ``loadBalancerLogPrefix``)."""
    waf: Waf
    """The web ACL."""
    hosted_zone_id: NotRequired[str]
    """Route 53 zone of ``domain`` (DNS validation and ExternalDNS); needed unless ``certificateArn`` is given."""
    hosted_zone_name: NotRequired[str]
    """That zone's name (ExternalDNS's domain filter); needed with ``hostedZoneId``."""
    certificate_arn: NotRequired[str]
    """Default none: a certificate is requested and DNS-validated in ``hostedZoneId``."""
    tls_policy: NotRequired[str]
    """Default ``ELBSecurityPolicy-TLS13-1-2-Res-2021-06``."""
    idle_timeout_seconds: NotRequired[int]
    """Default 600 (1-4000)."""
    redirect_http: NotRequired[bool]
    """Default true: port 80 only redirects to 443."""
    deletion_protection: NotRequired[bool]
    """Default false; production sets true."""
    access_log_prefix: NotRequired[str]
    """Default ``alb``."""
    partition: NotRequired[str]
    """Default ``aws``."""
    tags: NotRequired[dict[str, str]]
    """Default none. Extra tags on the ALB and its target groups."""


class PublicEndpoint(pulumi.ComponentResource):
    """The ALB, WAF, certificate and DNS in front of the inference gateway (components.edge.PublicEndpoint)."""

    certificate_arn: pulumi.Output[str]
    """The listener's certificate."""
    web_acl_arn: pulumi.Output[str]
    """The regional web ACL on the ALB."""
    ingress_class: pulumi.Output[str]
    """The IngressClass whose Ingresses become this ALB."""

    def __init__(self, name: str, args: PublicEndpointArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("inference-platform:index:PublicEndpoint", name, {}, opts)
        endpoint = _PublicEndpoint(
            name,
            _PublicEndpointArgs(
                provider=kubernetes_provider("PublicEndpoint", opts),
                waf=WafRules(
                    **supplied(
                        args["waf"],
                        "managed_rule_groups",
                        "ip_rate_limit",
                        "window_seconds",
                        "api_key_rate_limit",
                        "api_key_header",
                        "counted_rules",
                    )
                ),
                **supplied(
                    args,
                    "namespace",
                    "name_prefix",
                    "cluster_name",
                    "cluster",
                    "domain",
                    "backend_service",
                    "backend_port",
                    "security_group_id",
                    "access_log_bucket",
                    "hosted_zone_id",
                    "hosted_zone_name",
                    "certificate_arn",
                    "tls_policy",
                    "idle_timeout_seconds",
                    "redirect_http",
                    "deletion_protection",
                    "access_log_prefix",
                    "partition",
                    "tags",
                ),
            ),
            inner_options(self, opts),
        )
        self.certificate_arn = endpoint.certificate_arn
        self.web_acl_arn = endpoint.web_acl_arn
        self.ingress_class = pulumi.Output.from_input(endpoint.ingress_class)
        self.register_outputs({})
