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
