"""CIDR sets that together reach more of the internet than a /8 (issue 9 §6): judged like 0.0.0.0/0."""

from __future__ import annotations

import pulumi_aws as aws
import pytest

from inference_platform.planners.cidr import internet_wide


@pytest.mark.parametrize(
    ("cidrs", "covered"),
    [
        (["0.0.0.0/1", "128.0.0.0/1"], ["0.0.0.0/0"]),
        (["0.0.0.0/2", "64.0.0.0/2", "128.0.0.0/1"], ["0.0.0.0/0"]),
        (["::/1", "8000::/1", "10.0.0.0/8"], ["::/0"]),
        # 75% of IPv4 is no client range, nor is one half of it on its own.
        (["0.0.0.0/1", "128.0.0.0/2"], ["3,165,585,408 public IPv4 addresses (more than a /8)"]),
        (["0.0.0.0/1"], ["2,092,957,696 public IPv4 addresses (more than a /8)"]),
        (["16.0.0.0/8", "17.0.0.0/8"], ["33,554,432 public IPv4 addresses (more than a /8)"]),
        (["2600::/12"], ["83,076,749,736,557,242,056,487,941,267,521,536 public IPv6 addresses (more than a /16)"]),
        # At most one /8 of public space passes; private and reserved space does not count at all.
        (["17.0.0.0/8"], []),
        (["17.0.0.0/9", "17.128.0.0/9", "198.51.100.0/24"], []),
        (["10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10", "224.0.0.0/3"], []),
        (["2001:db8::/32", "fc00::/7", "2600:1f00::/24"], []),
        (["10.0.0.0/8", "not-a-cidr"], []),
    ],
)
def test_internet_wide(cidrs, covered):
    assert internet_wide(cidrs) == covered


HALVES = ("0.0.0.0/1", "128.0.0.0/1")
# Two public /8s: each alone is a client range, together they are more than the /8 a set may reach.
TWO_SLASH_8 = ("16.0.0.0/8", "17.0.0.0/8")


def _split_rules(group_name, ports=(22, 22), second_ports=None, tags=None, cidrs=HALVES):
    sg = aws.ec2.SecurityGroup(group_name, vpc_id="vpc-1", tags=tags or {})
    low, high = second_ports or ports
    aws.vpc.SecurityGroupIngressRule(f"{group_name}-low", security_group_id=sg.id, cidr_ipv4=cidrs[0],
                                     ip_protocol="tcp", from_port=ports[0], to_port=ports[1])  # fmt: skip
    aws.vpc.SecurityGroupIngressRule(f"{group_name}-high", security_group_id=sg.id, cidr_ipv4=cidrs[1],
                                     ip_protocol="tcp", from_port=low, to_port=high)  # fmt: skip


def test_split_world_on_ssh_fails_in_every_rule_form(violations):
    def program():
        _split_rules("g")
        aws.ec2.SecurityGroup("inline", vpc_id="vpc-1", ingress=[
            {"protocol": "tcp", "from_port": 5432, "to_port": 5432, "cidr_blocks": ["0.0.0.0/1", "128.0.0.0/1"]}])  # fmt: skip
        # A wide port range on the second block still covers port 22 of the first.
        _split_rules("wide", ports=(22, 22), second_ports=(0, 65535), cidrs=TWO_SLASH_8)

    found = {v.urn.rsplit("::", 1)[1]: v.message for v in violations(program, "no-world-ingress")}
    assert sorted(found) == ["g-high", "g-low", "inline", "wide-low"]
    assert all("cover 0.0.0.0/0" in found[n] for n in ("g-high", "g-low", "inline"))
    assert "cover 33,554,432 public IPv4 addresses" in found["wide-low"]


def test_blocks_on_different_ports_or_groups_pass(violations):
    def program():
        _split_rules("ports", ports=(22, 22), second_ports=(2222, 2222), cidrs=TWO_SLASH_8)
        a = aws.ec2.SecurityGroup("a", vpc_id="vpc-1")
        b = aws.ec2.SecurityGroup("b", vpc_id="vpc-1")
        aws.vpc.SecurityGroupIngressRule("a-low", security_group_id=a.id, cidr_ipv4=TWO_SLASH_8[0], ip_protocol="tcp",
                                         from_port=22, to_port=22)  # fmt: skip
        aws.vpc.SecurityGroupIngressRule("b-high", security_group_id=b.id, cidr_ipv4=TWO_SLASH_8[1], ip_protocol="tcp",
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


def test_three_quarters_of_the_internet_is_the_internet_in_every_rule(violations):
    def program():
        sg = aws.ec2.SecurityGroup("g", vpc_id="vpc-1")
        for name, cidr in (("low", "0.0.0.0/1"), ("quarter", "128.0.0.0/2")):
            aws.vpc.SecurityGroupIngressRule(f"g-{name}", security_group_id=sg.id, cidr_ipv4=cidr, ip_protocol="tcp",
                                             from_port=22, to_port=22)  # fmt: skip
        aws.eks.Cluster("c", role_arn="arn:aws:iam::1:role/c", vpc_config={
            "subnet_ids": ["s"], "endpoint_public_access": True, "public_access_cidrs": ["0.0.0.0/1", "128.0.0.0/2"]})  # fmt: skip

    found = violations(program, "no-world-ingress")
    assert sorted(v.urn.rsplit("::", 1)[1] for v in found) == ["g-low", "g-quarter"]
    assert all("public IPv4 addresses (more than a /8)" in v.message for v in found)
    (eks,) = violations(program, "eks-endpoint-not-public")
    assert "3,165,585,408 public IPv4 addresses" in eks.message
