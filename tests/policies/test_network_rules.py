"""no-world-ingress and vpc-flow-logs: a passing and failing fixture each."""

from __future__ import annotations

import pulumi_aws as aws

from inference_platform.components.network.security_groups import SecurityGroups, SecurityGroupsArgs


def lb_and_nodes():
    SecurityGroups(
        "sg",
        SecurityGroupsArgs(
            vpc_id="vpc-1", vpc_cidr="10.0.0.0/16", cluster_name="c", allowed_ingress_cidrs=["0.0.0.0/0"]
        ),
    )


def test_world_https_on_the_load_balancer_passes(violations):
    assert violations(lb_and_nodes, "no-world-ingress") == []


def test_world_ssh_fails(violations):
    def program():
        sg = aws.ec2.SecurityGroup("g", vpc_id="vpc-1")
        aws.vpc.SecurityGroupIngressRule(
            "ssh", security_group_id=sg.id, cidr_ipv4="0.0.0.0/0", ip_protocol="tcp", from_port=22, to_port=22
        )

    (found,) = violations(program, "no-world-ingress")
    assert "ssh" in found.message and found.urn.endswith("::ssh") and found.mandatory


def test_world_https_on_a_non_load_balancer_group_fails(violations):
    def program():
        sg = aws.ec2.SecurityGroup("nodes", vpc_id="vpc-1", tags={"network-role": "nodes"})
        aws.vpc.SecurityGroupIngressRule(
            "https", security_group_id=sg.id, cidr_ipv6="::/0", ip_protocol="tcp", from_port=443, to_port=443
        )

    (found,) = violations(program, "no-world-ingress")
    assert "not a load balancer group" in found.message


def test_inline_and_legacy_rule_forms_are_judged_too(violations):
    def program():
        aws.ec2.SecurityGroup(
            "inline",
            vpc_id="vpc-1",
            ingress=[{"protocol": "-1", "from_port": 0, "to_port": 0, "cidr_blocks": ["0.0.0.0/0"]}],
        )
        aws.ec2.SecurityGroupRule(
            "legacy",
            type="ingress",
            security_group_id="sg-1",
            protocol="tcp",
            from_port=3389,
            to_port=3389,
            cidr_blocks=["0.0.0.0/0"],
        )

    assert sorted(v.urn.split("::")[-1] for v in violations(program, "no-world-ingress")) == ["inline", "legacy"]


def test_a_vpc_with_flow_logs_passes_and_one_without_fails(violations):
    def program():
        logged = aws.ec2.Vpc("logged", cidr_block="10.0.0.0/16")
        aws.ec2.FlowLog("fl", vpc_id=logged.id, traffic_type="ALL", log_destination="arn:aws:s3:::b")
        aws.ec2.Vpc("dark", cidr_block="10.1.0.0/16")

    (found,) = violations(program, "vpc-flow-logs")
    assert found.urn.endswith("::dark")


def test_a_legacy_rule_to_a_private_range_passes(violations):
    def program():
        aws.ec2.SecurityGroupRule(
            "internal",
            type="ingress",
            security_group_id="sg-1",
            protocol="tcp",
            from_port=22,
            to_port=22,
            cidr_blocks=["10.0.0.0/8"],
        )

    assert violations(program, "no-world-ingress") == []


EDGE_PORTS = "lb-security-group-edge-ports-only"


def _lb_with(extra=None, *, gateway_port: int | None = 8080):
    def program():
        lb_and_nodes()
        if gateway_port is not None:
            import pulumi_kubernetes as k8s

            k8s.apiextensions.CustomResource(
                "gw", api_version="gateway.networking.k8s.io/v1", kind="Gateway", metadata={"name": "edge"},
                spec={"gatewayClassName": "eg", "listeners": [{"name": "http", "port": gateway_port, "protocol": "HTTP"}]},
            )  # fmt: skip
        if extra:
            extra()

    return program


def test_the_load_balancer_group_with_only_its_listeners_passes(violations):
    assert violations(_lb_with(), EDGE_PORTS) == []


def test_triton_ports_from_the_load_balancer_fail(violations):
    """Issue 28 R11: what components/network/security_groups.py created before (8000/8001 from the load balancer
    on every node, and the load balancer's egress to them)."""

    def triton():
        lb = aws.ec2.SecurityGroup("lb", vpc_id="vpc-1", tags={"network-role": "load-balancer"})
        nodes = aws.ec2.SecurityGroup("n", vpc_id="vpc-1", tags={"network-role": "nodes"})
        for port in (8000, 8001):
            aws.vpc.SecurityGroupEgressRule(f"lb-to-nodes-{port}", security_group_id=lb.id, ip_protocol="tcp",
                                            from_port=port, to_port=port, referenced_security_group_id=nodes.id)  # fmt: skip
            aws.vpc.SecurityGroupIngressRule(f"nodes-{port}-from-lb", security_group_id=nodes.id, ip_protocol="tcp",
                                             from_port=port, to_port=port, referenced_security_group_id=lb.id)  # fmt: skip

    found = violations(_lb_with(triton), EDGE_PORTS)
    assert sorted(v.urn.rsplit("::", 1)[1] for v in found) == [
        "lb-to-nodes-8000", "lb-to-nodes-8001", "nodes-8000-from-lb", "nodes-8001-from-lb",
    ]  # fmt: skip
    assert all("tcp 8000-8000" in v.message or "tcp 8001-8001" in v.message for v in found)
    assert all("(8080)" in v.message for v in found)


def test_the_gateway_port_from_the_load_balancer_passes_and_ssh_into_it_fails(violations):
    def rules():
        lb = aws.ec2.SecurityGroup("lb", vpc_id="vpc-1", tags={"network-role": "load-balancer"})
        nodes = aws.ec2.SecurityGroup("n", vpc_id="vpc-1")
        aws.vpc.SecurityGroupIngressRule("envoy-from-lb", security_group_id=nodes.id, ip_protocol="tcp",
                                         from_port=8080, to_port=8080, referenced_security_group_id=lb.id)  # fmt: skip
        aws.vpc.SecurityGroupIngressRule("ssh", security_group_id=lb.id, ip_protocol="tcp", from_port=22, to_port=22,
                                         cidr_ipv4="10.0.0.0/8")  # fmt: skip

    (found,) = violations(_lb_with(rules), EDGE_PORTS)
    assert found.urn.endswith("::ssh") and "tcp 22-22" in found.message
    # Without a Gateway nothing may be reached from the load balancer.
    found = violations(_lb_with(rules, gateway_port=None), EDGE_PORTS)
    assert {v.urn.rsplit("::", 1)[1] for v in found} == {"ssh", "envoy-from-lb"}


def test_every_shipped_stack_passes(stack_plan):
    from inference_platform.offline_plan.policy_runner import evaluate
    from inference_platform.policies.pack import POLICIES

    for stack in ("dev", "prod", "npu"):
        assert evaluate(stack_plan(stack).run.resources, [p for p in POLICIES if p.name == EDGE_PORTS]) == []
