"""Load balancers built directly with aws.lb / aws.alb (issue 18 §3): plain-HTTP forwarding, old TLS
policies and internet-facing ALBs without a WAF association, each with a passing and a failing case."""

from __future__ import annotations

import pulumi_aws as aws
import pytest

CERT = "arn:aws:acm:us-east-1:123456789012:certificate/x"
TLS13 = "ELBSecurityPolicy-TLS13-1-2-Res-2021-06"
REDIRECT = {"type": "redirect", "redirect": {"protocol": "HTTPS", "port": "443", "status_code": "HTTP_301"}}


def _forward(tg):
    return {"type": "forward", "target_group_arn": tg.arn}


@pytest.mark.parametrize("module", [aws.lb, aws.alb])
def test_redirecting_http_and_tls13_https_behind_a_waf_pass(violations, module):
    def program():
        lb = module.LoadBalancer("edge", subnets=["subnet-1", "subnet-2"])
        tg = module.TargetGroup("tg", port=8080, protocol="HTTP", vpc_id="vpc-1")
        http = module.Listener("http", load_balancer_arn=lb.arn, port=80, protocol="HTTP", default_actions=[REDIRECT])
        module.ListenerRule("health", listener_arn=http.arn, conditions=[{"path_pattern": {"values": ["/x"]}}],
                            actions=[{"type": "fixed-response", "fixed_response": {"content_type": "text/plain",
                                                                                   "status_code": "404"}}])  # fmt: skip
        module.Listener("https", load_balancer_arn=lb.arn, port=443, protocol="HTTPS", ssl_policy=TLS13,
                        certificate_arn=CERT, default_actions=[_forward(tg)])  # fmt: skip
        acl = aws.wafv2.WebAcl("acl", scope="REGIONAL", default_action={"block": {}},
                               visibility_config={"cloudwatch_metrics_enabled": True, "metric_name": "m",
                                                  "sampled_requests_enabled": True})  # fmt: skip
        aws.wafv2.WebAclAssociation("waf", resource_arn=lb.arn, web_acl_arn=acl.arn)
        module.LoadBalancer("private", internal=True, subnets=["subnet-1"])  # internal: no WAF needed
        module.LoadBalancer("nlb", load_balancer_type="network", subnets=["subnet-1"])  # cannot carry a WAF

    for policy in ("lb-listeners-no-plain-http", "lb-listeners-tls13", "lb-internet-facing-waf"):
        assert violations(program, policy) == [], policy


@pytest.mark.parametrize("module", [aws.lb, aws.alb])
def test_forwarding_http_old_tls_and_no_waf_fail(violations, module):
    def program():
        lb = module.LoadBalancer("edge", subnets=["subnet-1", "subnet-2"])
        tg = module.TargetGroup("tg", port=8080, protocol="HTTP", vpc_id="vpc-1")
        http = module.Listener("http", load_balancer_arn=lb.arn, port=80, protocol="HTTP",
                               default_actions=[_forward(tg)])  # fmt: skip
        module.ListenerRule("api", listener_arn=http.arn, conditions=[{"path_pattern": {"values": ["/v2/*"]}}],
                            actions=[_forward(tg)])  # fmt: skip
        module.Listener("https", load_balancer_arn=lb.arn, port=443, protocol="HTTPS",
                        ssl_policy="ELBSecurityPolicy-TLS13-1-0-2021-06", certificate_arn=CERT,
                        default_actions=[_forward(tg)])  # fmt: skip
        module.Listener("default-policy", load_balancer_arn=lb.arn, port=8443, protocol="HTTPS",
                        certificate_arn=CERT, default_actions=[_forward(tg)])  # fmt: skip
        nlb = module.LoadBalancer("nlb", load_balancer_type="network", subnets=["subnet-1"])
        module.Listener("tls", load_balancer_arn=nlb.arn, port=443, protocol="TLS", certificate_arn=CERT,
                        ssl_policy="ELBSecurityPolicy-2016-08", default_actions=[_forward(tg)])  # fmt: skip
        # Looks right, is no policy AWS has.
        module.Listener("made-up", load_balancer_arn=nlb.arn, port=8443, protocol="TLS", certificate_arn=CERT,
                        ssl_policy="ELBSecurityPolicy-TLS13-1-2-Strict-2030-01", default_actions=[_forward(tg)])  # fmt: skip

    http = violations(program, "lb-listeners-no-plain-http")
    assert {v.urn.rsplit("::", 1)[-1] for v in http} == {"http", "api"}
    assert all("forwards over plain HTTP" in v.message for v in http)
    tls = violations(program, "lb-listeners-tls13")
    assert {v.urn.rsplit("::", 1)[-1] for v in tls} == {"https", "default-policy", "tls", "made-up"}
    assert any("unset: AWS's ELBSecurityPolicy-2016-08" in v.message for v in tls)
    (waf,) = violations(program, "lb-internet-facing-waf")
    assert waf.urn.endswith("::edge") and "internet-facing" in waf.message


def test_an_http_redirect_to_plain_http_fails(violations):
    def program():
        lb = aws.lb.LoadBalancer("edge", internal=True, subnets=["subnet-1"])
        aws.lb.Listener("http", load_balancer_arn=lb.arn, port=80, protocol="HTTP",
                        default_actions=[{"type": "redirect", "redirect": {"protocol": "HTTP", "port": "8080",
                                                                           "status_code": "HTTP_302"}}])  # fmt: skip

    (found,) = violations(program, "lb-listeners-no-plain-http")
    assert "redirects to HTTP instead of HTTPS" in found.message


def test_an_unset_protocol_is_http_on_an_application_load_balancer(violations):
    def program():
        lb = aws.lb.LoadBalancer("edge", internal=True, subnets=["subnet-1"])
        tg = aws.lb.TargetGroup("tg", port=8080, protocol="HTTP", vpc_id="vpc-1")
        aws.lb.Listener("implicit-http", load_balancer_arn=lb.arn, port=8080, default_actions=[_forward(tg)])
        nlb = aws.lb.LoadBalancer("nlb", load_balancer_type="network", internal=True, subnets=["subnet-1"])
        aws.lb.Listener("tcp", load_balancer_arn=nlb.arn, port=9000, default_actions=[_forward(tg)])

    (found,) = violations(program, "lb-listeners-no-plain-http")
    assert found.urn.endswith("::implicit-http") and "(HTTP:8080)" in found.message


def test_classic_load_balancers_internet_facing_or_on_plain_http_fail(violations):
    def program(internal, protocol):
        aws.elb.LoadBalancer("classic", internal=internal, subnets=["subnet-1"], listeners=[
            {"lb_port": 443 if protocol == "https" else 80, "lb_protocol": protocol, "instance_port": 8080,
             "instance_protocol": "http", "ssl_certificate_id": CERT if protocol == "https" else None}])  # fmt: skip

    assert violations(lambda: program(True, "https"), "lb-internet-facing-waf") == []
    assert violations(lambda: program(True, "https"), "lb-listeners-no-plain-http") == []
    (found,) = violations(lambda: program(False, "https"), "lb-internet-facing-waf")
    assert "can carry no WAF web ACL" in found.message
    (found,) = violations(lambda: program(True, "http"), "lb-listeners-no-plain-http")
    assert "listener http:80 forwards plain HTTP" in found.message
