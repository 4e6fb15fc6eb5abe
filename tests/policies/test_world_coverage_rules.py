"""CIDR sets that together cover the whole internet (issue 9 §6): judged like 0.0.0.0/0 itself."""

from __future__ import annotations

import pulumi_aws as aws
import pytest

from components.network.cidr import covered_world


@pytest.mark.parametrize(
    ("cidrs", "covered"),
    [
        (["0.0.0.0/1", "128.0.0.0/1"], ["0.0.0.0/0"]),
        (["0.0.0.0/2", "64.0.0.0/2", "128.0.0.0/1"], ["0.0.0.0/0"]),
        (["::/1", "8000::/1", "10.0.0.0/8"], ["::/0"]),
        (["0.0.0.0/1", "128.0.0.0/2"], []),
        (["10.0.0.0/8", "not-a-cidr"], []),
    ],
)
def test_covered_world(cidrs, covered):
    assert covered_world(cidrs) == covered


def _split_rules(group_name, ports=(22, 22), second_ports=None, tags=None):
    sg = aws.ec2.SecurityGroup(group_name, vpc_id="vpc-1", tags=tags or {})
    low, high = second_ports or ports
    aws.vpc.SecurityGroupIngressRule(f"{group_name}-low", security_group_id=sg.id, cidr_ipv4="0.0.0.0/1",
                                     ip_protocol="tcp", from_port=ports[0], to_port=ports[1])  # fmt: skip
    aws.vpc.SecurityGroupIngressRule(f"{group_name}-high", security_group_id=sg.id, cidr_ipv4="128.0.0.0/1",
                                     ip_protocol="tcp", from_port=low, to_port=high)  # fmt: skip


def test_split_world_on_ssh_fails_in_every_rule_form(violations):
    def program():
        _split_rules("g")
        aws.ec2.SecurityGroup("inline", vpc_id="vpc-1", ingress=[
            {"protocol": "tcp", "from_port": 5432, "to_port": 5432, "cidr_blocks": ["0.0.0.0/1", "128.0.0.0/1"]}])  # fmt: skip
        # A wide port range on the second half still covers port 22 of the first.
        _split_rules("wide", ports=(22, 22), second_ports=(0, 65535))

    found = violations(program, "no-world-ingress")
    assert sorted(v.urn.rsplit("::", 1)[1] for v in found) == ["g-high", "g-low", "inline", "wide-low"]
    assert all("cover 0.0.0.0/0" in v.message for v in found)


def test_halves_on_different_ports_or_groups_pass(violations):
    def program():
        _split_rules("ports", ports=(22, 22), second_ports=(2222, 2222))
        a = aws.ec2.SecurityGroup("a", vpc_id="vpc-1")
        b = aws.ec2.SecurityGroup("b", vpc_id="vpc-1")
        aws.vpc.SecurityGroupIngressRule("a-low", security_group_id=a.id, cidr_ipv4="0.0.0.0/1", ip_protocol="tcp",
                                         from_port=22, to_port=22)  # fmt: skip
        aws.vpc.SecurityGroupIngressRule("b-high", security_group_id=b.id, cidr_ipv4="128.0.0.0/1", ip_protocol="tcp",
                                         from_port=22, to_port=22)  # fmt: skip

    assert violations(program, "no-world-ingress") == []


def test_split_world_https_on_the_load_balancer_is_what_0_0_0_0_0_is(violations):
    assert violations(lambda: _split_rules("lb", ports=(443, 443), tags={"network-role": "load-balancer"}),
                      "no-world-ingress") == []  # fmt: skip


def test_eks_public_access_split_over_two_cidrs_fails(violations):
    def program(cidrs):
        def build():
            aws.eks.Cluster("c", role_arn="arn:aws:iam::1:role/c", vpc_config={
                "subnet_ids": ["s"], "endpoint_public_access": True, "public_access_cidrs": cidrs})  # fmt: skip

        return build

    (found,) = violations(program(["0.0.0.0/1", "128.0.0.0/1"]), "eks-endpoint-not-public")
    assert "0.0.0.0/0" in found.message
    assert violations(program(["198.51.100.0/24", "203.0.113.0/24"]), "eks-endpoint-not-public") == []
