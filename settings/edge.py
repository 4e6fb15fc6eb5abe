"""``inference-platform:edge``: the request path from the internet to Triton.

Who may reach the load balancer, its hostname, certificate and TLS policy, the WAF in front of it,
and what the gateway behind it enforces: API keys per client, per-client rate limits by tier,
timeouts sized for long streams, circuit breaking, and where the rate-limit counters live (Redis).
"""

from __future__ import annotations

import difflib
import ipaddress
import re
from typing import ClassVar, Literal

from pydantic import Field

from inference_platform.catalog import aws_names
from inference_platform.catalog import downstream_limits as limits
from inference_platform.catalog.edge_policy import (
    DEFAULT_API_KEY_HEADER,
    DEFAULT_CLIENT_ID_HEADER,
    DEFAULT_IDLE_TIMEOUT_SECONDS,
    DEFAULT_MAX_CONNECTIONS,
    DEFAULT_MAX_INPUT_TOKENS,
    DEFAULT_MAX_PENDING_REQUESTS,
    MAX_RATE_LIMIT_TIMEOUT_MS,
    MIN_FAIL_CLOSED_RATE_LIMIT_TIMEOUT_MS,
    RATE_LIMIT_SERVICE_TIMEOUT_MS,
    CircuitBreaker,
    Client,
    EdgePolicy,
    Tier,
    request_body_limit,
)
from inference_platform.planners.cidr import internet_wide
from inference_platform.settings.base import CheckContext, Problem, Section, describe
from inference_platform.settings.token_limits import TokenLimitSettings, token_limit_problems

DEFAULT_TLS_POLICY = "ELBSecurityPolicy-TLS13-1-2-Res-2021-06"
# What ALB, WAFv2 and Envoy Gateway accept, each read from its source at the pinned version.
MIN_IDLE_TIMEOUT_SECONDS, MAX_IDLE_TIMEOUT_SECONDS = limits.ALB_IDLE_TIMEOUT_SECONDS
WAF_MIN_RATE_LIMIT, WAF_MAX_RATE_LIMIT = limits.WAF_RATE_LIMIT
WAF_WINDOWS_SECONDS = limits.WAF_WINDOWS_SECONDS
DEFAULT_MANAGED_RULE_GROUPS = (
    "AWSManagedRulesCommonRuleSet",
    "AWSManagedRulesKnownBadInputsRuleSet",
    "AWSManagedRulesAmazonIpReputationList",
)
DEFAULT_IP_RATE_LIMIT = 2000
DEFAULT_TIER = "standard"
DEFAULT_CLIENT = "default"
DEFAULT_REQUESTS_PER_MINUTE = 600
DEFAULT_CONCURRENT_STREAMS = 16
DEFAULT_REDIS_NODE_TYPE = "cache.t4g.small"

_LABEL = r"(?!-)[a-z0-9-]{1,63}(?<!-)"
_DOMAIN = re.compile(rf"^(?=.{{4,253}}$){_LABEL}(\.{_LABEL})*\.[a-z]{{2,63}}$")
_ZONE_ID = re.compile(r"^Z[A-Z0-9]{1,31}$")
_CERT_ARN = re.compile(r"^arn:(aws|aws-cn|aws-us-gov):acm:([a-z0-9-]+):\d{12}:certificate/[0-9a-f-]{36}$")
_NAME = re.compile(r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$")
_HEADER = re.compile(r"^[a-z0-9][a-z0-9-]{0,62}$")


class WafSettings(Section):
    enabled: bool = True
    """Default ``true``; production requires it. A WAFv2 web ACL associated with the load balancer."""
    managed_rule_groups: list[str] = Field(default_factory=lambda: list(DEFAULT_MANAGED_RULE_GROUPS))
    """Default: AWSManagedRulesCommonRuleSet, AWSManagedRulesKnownBadInputsRuleSet,
    AWSManagedRulesAmazonIpReputationList. AWS managed rule group names (``AWSManagedRules...``)."""
    ip_rate_limit: int = DEFAULT_IP_RATE_LIMIT
    """Default 2000. Requests per source IP per window before WAF blocks it; AWS minimum 10."""
    api_key_rate_limit: int | None = None
    """Default unset (no rule). Requests per API-key header value per window: an outer guard in front of
    the gateway's exact per-client limits; AWS minimum 10."""
    window_seconds: Literal[60, 120, 300, 600] = 300
    """Default 300. Evaluation window of the rate-based rules: 60, 120, 300 or 600."""


class ClientSettings(Section):
    tier: str = DEFAULT_TIER
    """Default ``standard``. A tier named in ``edge.rateLimits.tiers``."""


class AuthSettings(Section):
    enabled: bool = True
    """Default ``true``; production requires it. Requests need an API key of a known client (else 401)."""
    header: str = DEFAULT_API_KEY_HEADER
    """Default ``x-api-key``. Lower-case header (and gRPC metadata key) carrying the key; it is stripped
    before Triton."""
    client_id_header: str = DEFAULT_CLIENT_ID_HEADER
    """Default ``x-client-id``. Header the gateway sets to the caller's client id for Triton."""
    clients: dict[str, ClientSettings] = Field(default_factory=lambda: {DEFAULT_CLIENT: ClientSettings()})
    """Default ``{default: {tier: standard}}``. Client ids (lower-case DNS labels) and their tiers; each
    client gets its own generated key in Secrets Manager."""


class TierSettings(Section):
    requests_per_minute: int = Field(default=DEFAULT_REQUESTS_PER_MINUTE, gt=0, le=limits.RATE_LIMIT_REQUESTS_MAX)
    """Default 600, 1-4294967295 (Envoy Gateway's limit.requests, a uint32). Requests one client may start per minute (beyond: 429 with Retry-After)."""
    concurrent_streams: int = Field(default=DEFAULT_CONCURRENT_STREAMS, gt=0, le=limits.CIRCUIT_BREAKER_MAX)
    """Default 16, 1-4294967295. Streams one client is promised at once; the gateway's parallel-request budget
    is the sum over clients unless ``circuitBreaker.maxParallelRequests`` is set."""


class RateLimitSettings(Section):
    tiers: dict[str, TierSettings] = Field(default_factory=lambda: {DEFAULT_TIER: TierSettings()})
    """Default ``{standard: {requestsPerMinute: 600, concurrentStreams: 16}}``."""
    fail_closed: bool | None = None
    """Default: ``true`` in production, ``false`` in development. What the gateway does when its
    rate-limit service does not answer: ``true`` refuses the request (HTTP 500), so no client goes past
    its limit unnoticed; ``false`` lets it through unlimited (Envoy Gateway's own default). Gateway-wide:
    Envoy Gateway v1.9.0 has it in its install config (``rateLimit.failClosed``), not per
    BackendTrafficPolicy."""

    service_timeout_ms: int = Field(default=RATE_LIMIT_SERVICE_TIMEOUT_MS, ge=1, le=MAX_RATE_LIMIT_TIMEOUT_MS)
    """Default 100, 1-1000 (at least 50 with ``failClosed``). How long the gateway waits for its rate-limit
    service (Envoy Gateway's ``rateLimit.timeout``; unset it is Envoy's 20 ms). With ``failClosed`` a later answer
    is a 500 for a client within its limit, so it must clear the service's tail (published up to 25 ms against
    ElastiCache); without, a later answer lets the request through unlimited."""

    def resolved_fail_closed(self, environment: str) -> bool:
        if self.fail_closed is not None:
            return self.fail_closed
        return environment == "production"


class CircuitBreakerSettings(Section):
    max_connections: int = Field(default=DEFAULT_MAX_CONNECTIONS, gt=0, le=limits.CIRCUIT_BREAKER_MAX)
    """Default 1024, 1-4294967295 (Envoy Gateway's CRD maximum). Connections from the gateway to all Triton replicas."""
    max_pending_requests: int = Field(default=DEFAULT_MAX_PENDING_REQUESTS, gt=0, le=limits.CIRCUIT_BREAKER_MAX)
    """Default 64, 1-4294967295. Requests waiting for a connection; beyond: a fast 503 with Retry-After."""
    max_parallel_requests: int | None = Field(default=None, gt=0, le=limits.CIRCUIT_BREAKER_MAX)
    """1-4294967295. Default: the sum of every client's tier concurrentStreams. Requests in flight to Triton."""


class RedisSettings(Section):
    mode: Literal["auto", "elasticache", "inCluster"] = "auto"
    """Default ``auto``: ElastiCache in production, a small in-cluster Redis in development. The store of
    the gateway's global rate-limit counters."""
    node_type: str = DEFAULT_REDIS_NODE_TYPE
    """Default ``cache.t4g.small``. ElastiCache node type (``cache.<family>.<size>``)."""

    def resolved_mode(self, environment: str) -> str:
        if self.mode != "auto":
            return self.mode
        return "elasticache" if environment == "production" else "inCluster"


class EdgeSettings(Section):
    key: ClassVar[str] = "edge"

    allowed_ingress_cidrs: list[str] = Field(default_factory=list)
    """Default ``[]`` (no ingress at all). IPv4 CIDRs allowed to reach the load balancer on 443 (and 80
    for the redirect). ``0.0.0.0/0`` is accepted only when written here explicitly."""
    redirect_http: bool = True
    """Default ``true``. Open port 80 (same CIDRs) only so that the listener can redirect to HTTPS."""
    domain: str | None = None
    """Default unset (no public endpoint). The API hostname, e.g. ``api.dev.example.com``; needs
    ``hostedZoneId`` (certificate and alias record made here) or ``certificateArn``."""
    hosted_zone_id: str | None = None
    """Default unset. Route 53 public zone holding ``domain``: the certificate is DNS-validated and the
    alias record written there. Needs ``hostedZoneName``."""
    hosted_zone_name: str | None = None
    """Default unset. That zone's name (e.g. ``example.com``), so a hostname outside it is refused before
    any deployment."""
    certificate_arn: str | None = None
    """Default unset (an ACM certificate is requested). An existing ACM certificate in the stack's region."""
    tls_policy: str = DEFAULT_TLS_POLICY
    """Default ``ELBSecurityPolicy-TLS13-1-2-Res-2021-06``. An ALB ``ELBSecurityPolicy-TLS13-1-2-*`` or
    ``-TLS13-1-3-*`` policy (TLS 1.3, nothing older than 1.2)."""
    idle_timeout_seconds: int = DEFAULT_IDLE_TIMEOUT_SECONDS
    """Default 600 (ALB accepts 1-4000). How long a connection or stream may stay silent, at the ALB and
    at the gateway alike: a long prefill before the first token must not cut the stream."""
    deletion_protection: bool | None = None
    """Default: ``true`` in production, ``false`` in development. The ALB's deletion protection (set by the
    controller from the IngressClassParams). While it is on the controller cannot delete the ALB, so
    removing an Ingress (``pulumi destroy``, or unsetting ``domain``) fails after its await with the
    Ingress stuck on its finalizer: set ``false`` and ``pulumi up`` first (README, "Destroying a protected
    production stack")."""
    waf: WafSettings = Field(default_factory=WafSettings)
    auth: AuthSettings = Field(default_factory=AuthSettings)
    rate_limits: RateLimitSettings = Field(default_factory=RateLimitSettings)
    circuit_breaker: CircuitBreakerSettings = Field(default_factory=CircuitBreakerSettings)
    redis: RedisSettings = Field(default_factory=RedisSettings)
    token_limits: TokenLimitSettings = Field(default_factory=TokenLimitSettings)

    def problems(self, ctx: CheckContext) -> list[Problem]:
        out = []
        for i, cidr in enumerate(self.allowed_ingress_cidrs):
            try:
                ipaddress.IPv4Network(cidr, strict=True)
            except ValueError as err:
                out.append(Problem(f"edge.allowedIngressCidrs[{i}]", f"got {cidr!r}; expected an IPv4 CIDR ({err})"))
        covered = internet_wide(self.allowed_ingress_cidrs)
        if covered and "0.0.0.0/0" not in self.allowed_ingress_cidrs:
            out.append(
                Problem(
                    "edge.allowedIngressCidrs",
                    f"got {self.allowed_ingress_cidrs}; together they cover {covered[0]}: write 0.0.0.0/0 if the load "
                    "balancer is meant to be public, else name the client ranges",
                )
            )
        out += self._hostname_problems(ctx)
        if self.tls_policy not in aws_names.ALB_TLS13_POLICIES:
            # The real list (aws_names.ALB_TLS_POLICIES_SOURCE), not a pattern: a made-up name that looks
            # like a TLS 1.3 policy fails at AWS minutes into the update.
            why = (
                "an ALB policy that accepts TLS older than 1.2 or offers no TLS 1.3"
                if self.tls_policy in aws_names.ALB_OLDER_POLICIES
                else "not an ALB security policy"
            )
            hint = difflib.get_close_matches(self.tls_policy, sorted(aws_names.ALB_TLS13_POLICIES), n=1)
            did_you_mean = f" (did you mean {hint[0]!r}?)" if hint else ""
            out.append(
                Problem(
                    "edge.tlsPolicy",
                    f"got {describe(self.tls_policy)}: {why}{did_you_mean}; expected an ALB TLS 1.3 policy with TLS "
                    f"1.2 or 1.3 as minimum, e.g. {DEFAULT_TLS_POLICY} (the default) or "
                    f"ELBSecurityPolicy-TLS13-1-2-Res-PQ-2025-09 (list read {aws_names.READ_ON})",
                )
            )
        if not MIN_IDLE_TIMEOUT_SECONDS <= self.idle_timeout_seconds <= MAX_IDLE_TIMEOUT_SECONDS:
            out.append(
                Problem(
                    "edge.idleTimeoutSeconds",
                    f"got {self.idle_timeout_seconds}; expected {MIN_IDLE_TIMEOUT_SECONDS}-"
                    f"{MAX_IDLE_TIMEOUT_SECONDS} (what ALB accepts)",
                )
            )
        limits_ = self.rate_limits
        if (
            limits_.resolved_fail_closed(ctx.environment)
            and limits_.service_timeout_ms < MIN_FAIL_CLOSED_RATE_LIMIT_TIMEOUT_MS
        ):
            out.append(
                Problem(
                    "edge.rateLimits.serviceTimeoutMs",
                    f"got {limits_.service_timeout_ms} with failClosed: the rate-limit service's tail reaches 25 ms, "
                    f"so later answers would be 500s for clients within their limits; expected "
                    f"{MIN_FAIL_CLOSED_RATE_LIMIT_TIMEOUT_MS}-{MAX_RATE_LIMIT_TIMEOUT_MS} (default "
                    f"{RATE_LIMIT_SERVICE_TIMEOUT_MS})",
                )
            )
        out += self._waf_problems(ctx)
        out += self._auth_problems(ctx)
        out += token_limit_problems(
            self.token_limits, ctx, tiers=set(self.rate_limits.tiers), auth=self.auth.enabled,
            clients={cid: c.tier for cid, c in self.auth.clients.items()} if self.auth.enabled else {},
        )  # fmt: skip
        node_type = self.redis.node_type
        if node_type not in aws_names.ELASTICACHE_NODE_TYPES:
            why = (
                "a previous-generation type ElastiCache no longer creates"
                if node_type in aws_names.ELASTICACHE_PREVIOUS_GENERATION
                else "not an ElastiCache node type"
            )
            hint = difflib.get_close_matches(node_type, sorted(aws_names.ELASTICACHE_NODE_TYPES), n=1)
            did_you_mean = f" (did you mean {hint[0]!r}?)" if hint else ""
            out.append(
                Problem(
                    "edge.redis.nodeType",
                    f"got {describe(node_type)}: {why}{did_you_mean}; expected a current-generation node type such "
                    f"as {DEFAULT_REDIS_NODE_TYPE} or cache.r7g.large",
                )
            )
        return out

    def resolved_deletion_protection(self, environment: str) -> bool:
        if self.deletion_protection is not None:
            return self.deletion_protection
        return environment == "production"

    def policy(
        self, *, max_input_tokens: int = DEFAULT_MAX_INPUT_TOKENS, served_models: tuple[str, ...] = ()
    ) -> EdgePolicy:
        """What the gateway enforces, for both renderings (Envoy Gateway objects, local Envoy).
        ``max_input_tokens`` is the stack's ``serving.maxInputLen``: the request-body limit is derived from it
        (``inference_platform.catalog.edge_policy.request_body_limit``); ``served_models`` (``serving.model``)
        get their ``GET /v1/models/<id>``."""
        tiers = {
            name: Tier(name=name, requests_per_minute=t.requests_per_minute, concurrent_streams=t.concurrent_streams)
            for name, t in self.rate_limits.tiers.items()
        }
        clients = (
            tuple(Client(client_id=cid, tier=tiers[c.tier]) for cid, c in sorted(self.auth.clients.items()))
            if self.auth.enabled
            else ()
        )
        cb = self.circuit_breaker
        return EdgePolicy(
            clients=clients,
            auth_enabled=self.auth.enabled,
            api_key_header=self.auth.header,
            client_id_header=self.auth.client_id_header,
            idle_timeout_seconds=self.idle_timeout_seconds,
            circuit_breaker=CircuitBreaker(
                max_connections=cb.max_connections,
                max_pending_requests=cb.max_pending_requests,
                max_parallel_requests=cb.max_parallel_requests,
            ),
            max_request_bytes=request_body_limit(max_input_tokens),
            served_models=served_models,
            tokens=self.token_limits.policy(clients),
        )

    def _hostname_problems(self, ctx: CheckContext) -> list[Problem]:
        out = []
        domain = self.domain
        if domain is not None and not _DOMAIN.match(domain):
            out.append(
                Problem(
                    "edge.domain",
                    f"got {describe(domain)}; expected a lower-case DNS hostname such as api.dev.example.com "
                    "(labels of letters, digits and '-', no wildcard, no trailing dot)",
                )
            )
            domain = None
        if self.hosted_zone_id is not None and not _ZONE_ID.match(self.hosted_zone_id):
            out.append(
                Problem("edge.hostedZoneId", f"got {describe(self.hosted_zone_id)}; expected a Route 53 zone id (Z...)")
            )
        zone = self.hosted_zone_name.rstrip(".") if self.hosted_zone_name else None
        if zone is not None and not _DOMAIN.match(zone):
            out.append(Problem("edge.hostedZoneName", f"got {describe(self.hosted_zone_name)}; expected a DNS name"))
            zone = None
        if (self.hosted_zone_id is None) != (self.hosted_zone_name is None):
            out.append(
                Problem(
                    "edge.hostedZoneName" if self.hosted_zone_id else "edge.hostedZoneId",
                    "hostedZoneId and hostedZoneName go together (the name lets a hostname outside the zone "
                    "be refused before deployment)",
                )
            )
        if domain is not None and zone is not None and not (domain == zone or domain.endswith("." + zone)):
            out.append(Problem("edge.domain", f"got {domain!r}; it is outside the hosted zone {zone!r}"))
        if self.domain is not None and self.hosted_zone_id is None and self.certificate_arn is None:
            out.append(
                Problem(
                    "edge.domain",
                    "needs hostedZoneId (a DNS-validated certificate is requested) or certificateArn",
                )
            )
        if self.domain is None and (self.hosted_zone_id or self.certificate_arn):
            out.append(Problem("edge.domain", "missing; hostedZoneId/certificateArn are set but no hostname"))
        if self.certificate_arn is not None:
            match = _CERT_ARN.match(self.certificate_arn)
            if match is None:
                out.append(
                    Problem(
                        "edge.certificateArn",
                        f"got {describe(self.certificate_arn)}; expected arn:aws:acm:<region>:<account>:certificate/<id>",
                    )
                )
            elif ctx.region is not None and match.group(1) != ctx.region.partition:
                out.append(
                    Problem(
                        "edge.certificateArn",
                        f"is in partition {match.group(1)!r}; the stack's region {ctx.region.name} is in "
                        f"{ctx.region.partition!r} (arn:{ctx.region.partition}:acm:{ctx.region.name}:...)",
                    )
                )
            elif ctx.region is not None and match.group(2) != ctx.region.name:
                out.append(
                    Problem(
                        "edge.certificateArn",
                        f"is in {match.group(2)}; an ALB needs a certificate in the stack's region {ctx.region.name}",
                    )
                )
        return out

    def _waf_problems(self, ctx: CheckContext) -> list[Problem]:
        waf = self.waf
        out = []
        if ctx.production and not waf.enabled:
            out.append(Problem("edge.waf.enabled", "got false; production requires the WAF"))
        for i, group in enumerate(waf.managed_rule_groups):
            if group in aws_names.WAF_MANAGED_RULE_GROUPS:
                continue
            if group in aws_names.WAF_CONFIGURED_RULE_GROUPS:
                why = "an AWS managed rule group that needs a configuration block (and per-request fees) the edge does not render"
            else:
                why = "not an AWS managed rule group"
            hint = difflib.get_close_matches(group, sorted(aws_names.WAF_MANAGED_RULE_GROUPS), n=1)
            did_you_mean = f" (did you mean {hint[0]!r}?)" if hint else ""
            out.append(
                Problem(
                    f"edge.waf.managedRuleGroups[{i}]",
                    f"got {describe(group)}: {why}{did_you_mean}; expected one of "
                    f"{', '.join(sorted(aws_names.WAF_MANAGED_RULE_GROUPS))} (list read {aws_names.READ_ON})",
                )
            )
        if len(set(waf.managed_rule_groups)) != len(waf.managed_rule_groups):
            out.append(Problem("edge.waf.managedRuleGroups", "lists a group twice"))
        for key, limit in (("ipRateLimit", waf.ip_rate_limit), ("apiKeyRateLimit", waf.api_key_rate_limit)):
            if limit is not None and not WAF_MIN_RATE_LIMIT <= limit <= WAF_MAX_RATE_LIMIT:
                out.append(
                    Problem(
                        f"edge.waf.{key}",
                        f"got {limit}; expected {WAF_MIN_RATE_LIMIT}-{WAF_MAX_RATE_LIMIT} requests per window "
                        "(AWS's minimum for a rate-based rule is 10)",
                    )
                )
        return out

    def _auth_problems(self, ctx: CheckContext) -> list[Problem]:
        auth = self.auth
        out = []
        if ctx.production and not auth.enabled:
            out.append(Problem("edge.auth.enabled", "got false; production requires API keys at the gateway"))
        for key, header in (("header", auth.header), ("clientIdHeader", auth.client_id_header)):
            if not _HEADER.match(header):
                out.append(Problem(f"edge.auth.{key}", f"got {describe(header)}; expected a lower-case header name"))
        if auth.header == auth.client_id_header:
            out.append(Problem("edge.auth.clientIdHeader", "must differ from edge.auth.header"))
        if auth.enabled and not auth.clients:
            out.append(Problem("edge.auth.clients", "is empty; with auth enabled at least one client is needed"))
        if auth.enabled and len(auth.clients) > limits.RATE_LIMIT_RULES_MAX:
            out.append(
                Problem("edge.auth.clients", f"has {len(auth.clients)} clients; the gateway renders one rate-limit "
                        f"rule per client and Envoy Gateway {limits.ENVOY_GATEWAY_VERSION} takes at most "
                        f"{limits.RATE_LIMIT_RULES_MAX} per BackendTrafficPolicy")
            )  # fmt: skip
        streams = sum(
            self.rate_limits.tiers[c.tier].concurrent_streams
            for c in auth.clients.values()
            if c.tier in self.rate_limits.tiers
        )
        if auth.enabled and self.circuit_breaker.max_parallel_requests is None and streams > limits.CIRCUIT_BREAKER_MAX:
            out.append(
                Problem("edge.circuitBreaker.maxParallelRequests", f"unset, so the sum of every client's "
                        f"concurrentStreams ({streams}) is used; Envoy Gateway takes at most "
                        f"{limits.CIRCUIT_BREAKER_MAX}: set it or lower the tiers' concurrentStreams")
            )  # fmt: skip
        for cid, client in auth.clients.items():
            if not _NAME.match(cid):
                out.append(
                    Problem(f"edge.auth.clients.{cid}", "expected a lower-case DNS label (letters, digits, '-')")
                )
            if client.tier not in self.rate_limits.tiers:
                out.append(
                    Problem(
                        f"edge.auth.clients.{cid}.tier",
                        f"got {client.tier!r}; expected one of edge.rateLimits.tiers: "
                        f"{', '.join(sorted(self.rate_limits.tiers)) or '(none)'}",
                    )
                )
        for name in self.rate_limits.tiers:
            if not _NAME.match(name):
                out.append(Problem(f"edge.rateLimits.tiers.{name}", "expected a lower-case DNS label"))
        return out
