"""vpc-interface-endpoints: passing and failing fixtures."""

from __future__ import annotations

import pulumi_aws as aws
import pytest

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


CALLED = "vpc-endpoints-for-called-services"
POD_TRUST = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": {"Service": "pods.eks.amazonaws.com"},
             "Action": ["sts:AssumeRole", "sts:TagSession"]}]}  # fmt: skip


def _pods_granted(*actions, endpoints=("sts",), nat=True, inline=False):
    import json

    def program():
        _vpc_with(*endpoints)
        if nat:
            aws.ec2.NatGateway("nat", subnet_id="subnet-1", allocation_id="eipalloc-1")
        document = json.dumps({"Version": "2012-10-17", "Statement": [
            {"Effect": "Allow", "Action": list(actions), "Resource": "arn:aws:sqs:us-west-2:123456789012:q"}]})  # fmt: skip
        if inline:
            aws.iam.Role(
                "worker", assume_role_policy=json.dumps(POD_TRUST), inline_policies=[{"name": "p", "policy": document}]
            )
        else:
            role = aws.iam.Role("worker", assume_role_policy=json.dumps(POD_TRUST))
            aws.iam.RolePolicy("worker-policy", role=role.name, policy=document)
        # A role no pod can assume does not count (flow logs deliver from AWS, not from the subnets).
        trust = {
            **POD_TRUST,
            "Statement": [{**POD_TRUST["Statement"][0], "Principal": {"Service": "vpc-flow-logs.amazonaws.com"}}],
        }
        other = aws.iam.Role("flow-logs", assume_role_policy=json.dumps(trust))
        aws.iam.RolePolicy("flow-logs-policy", role=other.name, policy=document.replace("sqs:", "ssm:"))

    return program


@pytest.mark.parametrize("inline", [False, True])
def test_pods_granted_sqs_in_a_vpc_without_its_endpoint_fail(violations, inline):
    """Issue 28 Endpoints: prod's batch lane called SQS from private subnets with no SQS endpoint."""
    (found,) = violations(_pods_granted("sqs:SendMessage", "sqs:ReceiveMessage", inline=inline), CALLED)
    assert found.urn.endswith("::vpc") and "pods call sqs (worker" in found.message
    assert violations(_pods_granted("sqs:SendMessage", endpoints=("sts", "sqs")), CALLED) == []


def test_a_vpc_without_interface_endpoints_goes_through_nat_and_is_not_judged(violations):
    assert violations(_pods_granted("sqs:SendMessage", endpoints=()), CALLED) == []


def test_an_unclassified_api_and_a_nat_only_api_without_nat_fail(violations):
    (found,) = violations(_pods_granted("bedrock:InvokeModel"), CALLED)
    assert "does not classify" in found.message and "'bedrock'" in found.message
    (found,) = violations(_pods_granted("route53:ChangeResourceRecordSets", nat=False), CALLED)
    assert "no NAT gateway" in found.message
    assert violations(_pods_granted("route53:ChangeResourceRecordSets"), CALLED) == []


@pytest.mark.parametrize("stack", ["prod", "npu"])
def test_the_shipped_production_stacks_pass_and_failed_before_their_sqs_endpoint(stack_plan, stack):
    from inference_platform.offline_plan.policy_runner import evaluate
    from inference_platform.policies.pack import POLICIES

    rules = [p for p in POLICIES if p.name == CALLED]
    resources = stack_plan(stack).run.resources
    assert evaluate(resources, rules) == []
    before = [r for r in resources if not r.urn.endswith(("::endpoints-sqs", "::endpoints-eks"))]
    messages = sorted(v.message for v in evaluate(before, rules))
    assert [m.split(" (")[0] for m in messages] == ["network-vpc: pods call eks", "network-vpc: pods call sqs"]
    assert "(cluster-autoscaler-controller-policy)" in messages[0]
    assert "batch-queue-monitor-policy" in messages[1] and "batch-workloads-worker-identity-policy" in messages[1]
