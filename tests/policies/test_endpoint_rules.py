"""vpc-interface-endpoints: passing and failing fixtures."""

from __future__ import annotations

import pulumi_aws as aws

REQUIRED = {"requiredServices": ["eks-auth", "sqs"]}


def _vpc_with(*services):
    vpc = aws.ec2.Vpc("vpc", cidr_block="10.0.0.0/16")
    for service in services:
        aws.ec2.VpcEndpoint(service, vpc_id=vpc.id, service_name=f"com.amazonaws.us-west-2.{service}",
                            vpc_endpoint_type="Interface")  # fmt: skip
    # A gateway endpoint never stands in for an interface endpoint.
    aws.ec2.VpcEndpoint("s3", vpc_id=vpc.id, service_name="com.amazonaws.us-west-2.sqs", vpc_endpoint_type="Gateway")


def test_every_required_endpoint_present_passes(violations):
    assert violations(lambda: _vpc_with("eks-auth", "sqs", "sts"), "vpc-interface-endpoints", REQUIRED) == []
    # Stacks that ask for nothing (development through NAT) are not judged.
    assert violations(lambda: _vpc_with(), "vpc-interface-endpoints") == []


def test_missing_endpoint_fails_naming_it(violations):
    found = violations(lambda: _vpc_with("eks-auth"), "vpc-interface-endpoints", REQUIRED)
    assert [v.message.split(";")[0] for v in found] == ["vpc: no interface endpoint for sqs"]
