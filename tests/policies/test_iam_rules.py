"""iam-no-wildcard-write: passing and failing fixtures."""

from __future__ import annotations

import json

import pulumi_aws as aws
import pytest

from inference_platform.policies.rules.iam import is_read_only, problems


def doc(*statements):
    return {"Version": "2012-10-17", "Statement": list(statements)}


@pytest.mark.parametrize(
    ("action", "read"),
    [("ec2:DescribeImages", True), ("ec2:Describe*", True), ("s3:GetObject", True), ("pricing:GetProducts", True),
     ("s3:*", False), ("ec2:Create*", False), ("ec2:RunInstances", False), ("*", False), ("iam:PassRole", False)],
)  # fmt: skip
def test_read_only_actions(action, read):
    assert is_read_only(action) is read


def test_documents():
    assert problems(doc({"Effect": "Allow", "Action": "ec2:Describe*", "Resource": "*"})) == []
    assert problems(doc({"Effect": "Allow", "Action": "s3:PutObject", "Resource": "arn:aws:s3:::b/*"})) == []
    assert problems(doc({"Effect": "Deny", "Action": "*", "Resource": "*"})) == []
    assert problems(doc({"Effect": "Allow", "Action": "*", "Resource": "arn:aws:s3:::b"})) == [
        "statement #0 allows Action '*'"
    ]
    assert "on every resource" in problems(doc({"Sid": "W", "Effect": "Allow", "Action": ["ec2:TerminateInstances"],
                                                "Resource": "*"}))[0]  # fmt: skip
    assert "NotAction" in problems(doc({"Effect": "Allow", "NotAction": "iam:*", "Resource": "*"}))[0]
    assert problems(doc({"Effect": "Allow", "Action": "s3:DeleteObject", "NotResource": "arn:aws:s3:::keep/*"}))


def test_scoped_policies_pass_and_wildcards_fail_in_every_policy_kind(violations):
    scoped = json.dumps(
        doc({"Effect": "Allow", "Action": "sqs:ReceiveMessage", "Resource": "arn:aws:sqs:us-west-2:1:q"})
    )
    admin = json.dumps(doc({"Effect": "Allow", "Action": "*", "Resource": "*"}))
    writes = json.dumps(doc({"Effect": "Allow", "Action": "s3:*", "Resource": "*"}))

    def good():
        role = aws.iam.Role("r", assume_role_policy="{}")
        aws.iam.RolePolicy("ok", role=role.id, policy=scoped)

    def bad():
        role = aws.iam.Role("inline", assume_role_policy="{}", inline_policies=[{"name": "w", "policy": writes}])
        aws.iam.RolePolicy("admin", role=role.id, policy=admin)
        aws.iam.Policy("managed", policy=writes)

    assert violations(good, "iam-no-wildcard-write") == []
    found = violations(bad, "iam-no-wildcard-write")
    assert sorted(v.urn.rsplit("::", 1)[1] for v in found) == ["admin", "inline", "managed"]


# pod-identity-trust-scoped: pods.eks.amazonaws.com trust names the account and the cluster.


def _trust_role(condition):
    statement = {"Effect": "Allow", "Principal": {"Service": "pods.eks.amazonaws.com"},
                 "Action": ["sts:AssumeRole", "sts:TagSession"]}  # fmt: skip
    if condition is not None:
        statement["Condition"] = condition
    return lambda: aws.iam.Role("r", assume_role_policy=json.dumps(doc(statement)))


def test_pod_identity_trust_without_source_conditions_is_refused(violations):
    (found,) = violations(_trust_role(None), "pod-identity-trust-scoped")
    assert "aws:SourceAccount and no aws:RequestTag/eks-cluster-arn" in found.message
    (found,) = violations(
        _trust_role({"StringEquals": {"aws:SourceAccount": "123456789012"}}), "pod-identity-trust-scoped"
    )
    assert "eks-cluster-arn" in found.message and "SourceAccount" not in found.message.split("condition")[0]
    (found,) = violations(
        _trust_role({"StringEquals": {"aws:RequestTag/eks-cluster-arn": "arn:aws:eks:us-west-2:1:cluster/d"}}),
        "pod-identity-trust-scoped",
    )
    assert "no aws:SourceAccount condition" in found.message


def test_our_pod_identity_trust_passes(violations):
    from inference_platform.components.identity.pod_identity import PodIdentityRole, PodIdentityRoleArgs

    def program():
        PodIdentityRole("x", PodIdentityRoleArgs(cluster_name="demo", namespace="ns", service_account="sa"))

    assert violations(program, "pod-identity-trust-scoped") == []
    scoped = {"StringEquals": {"aws:SourceAccount": "123456789012",
                               "aws:RequestTag/eks-cluster-arn": "arn:aws:eks:us-west-2:123456789012:cluster/demo"}}  # fmt: skip
    assert violations(_trust_role(scoped), "pod-identity-trust-scoped") == []
    validated_elsewhere = {"StringEquals": {"aws:SourceAccount": "123456789012"},
                           "ArnLike": {"aws:SourceArn": "arn:aws:eks:us-west-2:123456789012:cluster/demo"}}  # fmt: skip
    assert violations(_trust_role(validated_elsewhere), "pod-identity-trust-scoped") == []
