"""Load balancers a program builds itself with ``aws.lb``/``aws.alb`` (both type-token families), not through
the AWS Load Balancer Controller that ``edge-alb-hardened`` judges:

- ``lb-listeners-no-plain-http``: an HTTP listener (and every listener rule on it) only redirects to HTTPS
  or answers itself (fixed-response); a ``forward`` (or an authenticate action followed by one) carries
  prompts, completions and API keys in clear text.
- ``lb-listeners-tls13``: an HTTPS or TLS listener pins a TLS 1.3 policy with TLS 1.2 or 1.3 as minimum, one
  of the same vendored list ``edge.tlsPolicy`` accepts (``inference_platform.catalog.aws_names.ALB_TLS13_POLICIES``:
  ``ELBSecurityPolicy-TLS13-1-2-*``/``-TLS13-1-3-*`` that exist); unset is AWS's ``ELBSecurityPolicy-2016-08``
  (TLS 1.0, no TLS 1.3).
- ``lb-internet-facing-waf``: an internet-facing application load balancer (``internal`` unset means
  internet-facing) is the ``resourceArn`` of an ``aws:wafv2/webAclAssociation`` of the same stack, related
  by property dependency (ARNs are unknown during a preview). Network and gateway load balancers cannot
  carry a WAF association; they are not judged here. An internet-facing Classic Load Balancer
  (``aws:elb/loadBalancer``) is refused: it can carry no WAF and negotiates no TLS 1.3; its plain ``http``
  listeners are refused by ``lb-listeners-no-plain-http`` (a Classic Load Balancer cannot redirect).
"""

from __future__ import annotations

from collections.abc import Iterable

from pulumi_policy import EnforcementLevel, PolicyResource, StackValidationArgs

from inference_platform.catalog.aws_names import ALB_TLS13_POLICIES
from inference_platform.policies.callbacks import ReportViolation, StackValidationPolicy
from inference_platform.policies.props import as_list, get

FAMILIES = ("aws:lb", "aws:alb")
LOAD_BALANCERS = frozenset(f"{f}/loadBalancer:LoadBalancer" for f in FAMILIES)
LISTENERS = frozenset(f"{f}/listener:Listener" for f in FAMILIES)
LISTENER_RULES = frozenset(f"{f}/listenerRule:ListenerRule" for f in FAMILIES)
WAF_ASSOCIATION = "aws:wafv2/webAclAssociation:WebAclAssociation"
CLASSIC_LOAD_BALANCER = "aws:elb/loadBalancer:LoadBalancer"
AWS_DEFAULT_SSL_POLICY = "ELBSecurityPolicy-2016-08"
TLS_PROTOCOLS = ("HTTPS", "TLS")
SAFE_HTTP_ACTIONS = ("redirect", "fixed-response")


def _depends_on(resource: PolicyResource, prop: str, types: frozenset[str] | set[str] | str) -> list[PolicyResource]:
    wanted = {types} if isinstance(types, str) else set(types)
    return [d for d in (resource.property_dependencies or {}).get(prop, []) if d.resource_type in wanted]


def _action_problems(actions: Iterable[object]) -> list[str]:
    out = []
    for action in actions:
        kind = str(get(action, "type", "forward"))
        if kind == "redirect":
            protocol = str(get(action, "redirect.protocol", "#{protocol}"))
            if protocol != "HTTPS":
                out.append(f"redirects to {protocol} instead of HTTPS")
        elif kind not in SAFE_HTTP_ACTIONS and not kind.startswith("authenticate-"):
            out.append(f"{kind}s over plain HTTP instead of redirecting to HTTPS")
    return out


def _protocol(listener: PolicyResource) -> str:
    """The listener's protocol; unset is HTTP on an application load balancer (the provider's default)."""
    protocol = get(listener.props, "protocol")
    if protocol:
        return str(protocol)
    balancers = _depends_on(listener, "loadBalancerArn", LOAD_BALANCERS)
    if any(str(get(b.props, "loadBalancerType", "application")) != "application" for b in balancers):
        return ""
    return "HTTP"


def _no_plain_http(args: StackValidationArgs, report: ReportViolation) -> None:
    http_listeners = {r.urn for r in args.resources if r.resource_type in LISTENERS and _protocol(r) == "HTTP"}
    for resource in args.resources:
        if resource.resource_type == CLASSIC_LOAD_BALANCER:
            for listener in as_list(get(resource.props, "listeners")):
                if str(get(listener, "lbProtocol", "")).lower() == "http":
                    report(
                        f"classic load balancer {resource.name}: listener http:{int(float(get(listener, 'lbPort', 80)))} "
                        "forwards plain HTTP (a Classic Load Balancer cannot redirect to HTTPS)",
                        resource.urn,
                    )
            continue
        if resource.urn in http_listeners:
            actions = as_list(get(resource.props, "defaultActions"))
            where = f"listener {resource.name} (HTTP:{int(float(get(resource.props, 'port', 80)))})"
        elif resource.resource_type in LISTENER_RULES and any(
            d.urn in http_listeners for d in _depends_on(resource, "listenerArn", LISTENERS)
        ):
            actions = as_list(get(resource.props, "actions"))
            where = f"listener rule {resource.name} on an HTTP listener"
        else:
            continue
        for problem in dict.fromkeys(_action_problems(actions)):
            report(f"{where}: {problem}", resource.urn)


def _tls13(args: StackValidationArgs, report: ReportViolation) -> None:
    for resource in args.resources:
        if resource.resource_type not in LISTENERS:
            continue
        protocol = str(get(resource.props, "protocol", ""))
        if protocol not in TLS_PROTOCOLS:
            continue
        policy = str(get(resource.props, "sslPolicy") or "")
        if policy not in ALB_TLS13_POLICIES:
            shown = policy or f"(unset: AWS's {AWS_DEFAULT_SSL_POLICY})"
            report(
                f"listener {resource.name} ({protocol}): sslPolicy {shown} is not one of AWS's TLS 1.3 policies "
                "with TLS 1.2 or 1.3 as minimum (ELBSecurityPolicy-TLS13-1-2-*/-1-3-*, catalog/aws_names.py)",
                resource.urn,
            )


def _internet_facing_waf(args: StackValidationArgs, report: ReportViolation) -> None:
    protected = {
        d.urn
        for r in args.resources
        if r.resource_type == WAF_ASSOCIATION
        for d in _depends_on(r, "resourceArn", LOAD_BALANCERS)
    }
    for resource in args.resources:
        if resource.resource_type == CLASSIC_LOAD_BALANCER and get(resource.props, "internal") is not True:
            report(
                f"classic load balancer {resource.name} is internet-facing: a Classic Load Balancer can carry no "
                "WAF web ACL and negotiates no TLS 1.3; use an application load balancer",
                resource.urn,
            )
            continue
        if resource.resource_type not in LOAD_BALANCERS:
            continue
        if get(resource.props, "internal") is True:
            continue
        if str(get(resource.props, "loadBalancerType", "application")) != "application":
            continue
        if resource.urn not in protected:
            report(
                f"load balancer {resource.name} is internet-facing (internal unset or false) and no "
                "aws:wafv2/webAclAssociation attaches a web ACL to it",
                resource.urn,
            )


POLICIES = [
    StackValidationPolicy(
        name="lb-listeners-no-plain-http",
        description="aws.lb/aws.alb HTTP listeners and their rules only redirect to HTTPS (or answer fixed "
        "responses); nothing is forwarded over plain HTTP.",
        validate=_no_plain_http,
        enforcement_level=EnforcementLevel.MANDATORY,
    ),
    StackValidationPolicy(
        name="lb-listeners-tls13",
        description="aws.lb/aws.alb HTTPS and TLS listeners pin a TLS 1.3 policy with TLS 1.2 or 1.3 as minimum.",
        validate=_tls13,
        enforcement_level=EnforcementLevel.MANDATORY,
    ),
    StackValidationPolicy(
        name="lb-internet-facing-waf",
        description="Internet-facing application load balancers are attached to a WAFv2 web ACL in the stack.",
        validate=_internet_facing_waf,
        enforcement_level=EnforcementLevel.MANDATORY,
    ),
]
