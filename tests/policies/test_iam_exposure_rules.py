"""IAM holes (issue 9 §6): wildcard resources in any spelling, anonymous principals in trust and resource
policies, administrator-class managed policies, S3 access points without their public-access block."""

from __future__ import annotations

import json

import pulumi_aws as aws
import pytest

from inference_platform.policies.rules.iam import is_wildcard_resource, problems
from inference_platform.policies.rules.iam_exposure import is_scoped, open_statements


def doc(*statements):
    return json.dumps({"Version": "2012-10-17", "Statement": list(statements)})


@pytest.mark.parametrize(
    ("resource", "wildcard"),
    [("*", True), ("arn:aws:s3:::*", True), ("arn:aws:s3:::*/*", True), ("arn:aws:*:*:*:*", True),
     ("arn:aws:sqs:us-east-1:123456789012:*", True), ("arn:aws:ec2:*:*:instance/*", False),
     ("arn:aws:s3:::models-*", False), ("arn:aws:s3:::models/*", False), ("arn:aws:ec2:us-east-1::image/*", False)],
)  # fmt: skip
def test_wildcard_resources_in_any_spelling(resource, wildcard):
    assert is_wildcard_resource(resource) is wildcard


def test_writes_on_wildcard_arns_fail_and_reads_keep_their_exception(violations):
    for spelling in ("arn:aws:s3:::*/*", "arn:aws:s3:::*", "arn:aws:*:*:*:*"):
        statement = {"Effect": "Allow", "Action": "s3:PutObject", "Resource": spelling}
        assert problems(json.loads(doc(statement))), spelling
    assert (
        problems(json.loads(doc({"Effect": "Allow", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::*/*"}))) == []
    )

    def program():
        aws.iam.Policy(
            "writes", policy=doc({"Effect": "Allow", "Action": "s3:PutObject", "Resource": "arn:aws:s3:::*/*"})
        )
        aws.iam.Policy(
            "scoped", policy=doc({"Effect": "Allow", "Action": "s3:PutObject", "Resource": "arn:aws:s3:::m/*"})
        )

    assert [v.urn.rsplit("::", 1)[1] for v in violations(program, "iam-no-wildcard-write")] == ["writes"]


ANYONE = {"Effect": "Allow", "Principal": "*", "Action": "secretsmanager:GetSecretValue", "Resource": "*"}
ANY_AWS = {"Effect": "Allow", "Principal": {"AWS": ["arn:aws:iam::1:root", "*"]}, "Action": "sts:AssumeRole"}
TLS_ONLY = {"Effect": "Deny", "Principal": "*", "Action": "s3:*", "Resource": "arn:aws:s3:::b/*",
            "Condition": {"Bool": {"aws:SecureTransport": "false"}}}  # fmt: skip
ORG_SCOPED = {**ANYONE, "Condition": {"StringEquals": {"aws:PrincipalOrgID": "o-abc123"}}}


@pytest.mark.parametrize(
    ("condition", "scoped"),
    [({"StringEquals": {"aws:SourceAccount": "123456789012"}}, True), ({"ArnLike": {"aws:PrincipalArn": "arn:aws:iam::1:role/x"}}, True),
     ({"StringEquals": {"aws:SourceAccount": "*"}}, False), ({"StringEqualsIfExists": {"aws:SourceAccount": "1"}}, False),
     ({"StringNotEquals": {"aws:PrincipalAccount": "1"}}, False), ({"Bool": {"aws:SecureTransport": "true"}}, False), (None, False)],
)  # fmt: skip
def test_scoping_conditions(condition, scoped):
    assert is_scoped(condition) is scoped


def test_anonymous_principals_fail_in_trust_and_resource_policies(violations):
    def bad():
        aws.iam.Role("trust-anyone", assume_role_policy=doc(ANY_AWS))
        secret = aws.secretsmanager.Secret("s", kms_key_id="arn:aws:kms:us-east-1:1:key/k")
        aws.secretsmanager.SecretPolicy("secret-open", secret_arn=secret.arn, policy=doc(ANYONE))
        aws.s3.BucketPolicy("bucket-open", bucket="b", policy=doc(TLS_ONLY, {**ANYONE, "Action": "s3:GetObject"}))
        aws.s3.AccessPoint("ap-open", bucket="b", policy=doc({**ANYONE, "Action": "s3:GetObject"}))
        aws.s3control.AccessPointPolicy("ap-policy-open", access_point_arn="arn:aws:s3:us-east-1:1:accesspoint/a",
                                        policy=doc({**ANYONE, "Action": "s3:GetObject"}))  # fmt: skip

    found = violations(bad, "no-anonymous-principals")
    assert sorted(v.urn.rsplit("::", 1)[1] for v in found) == [
        "ap-open", "ap-policy-open", "bucket-open", "secret-open", "trust-anyone"]  # fmt: skip
    assert "trust policy" in next(v.message for v in found if v.urn.endswith("trust-anyone"))


def test_named_scoped_and_deny_statements_pass(violations):
    def good():
        aws.iam.Role("trust-service", assume_role_policy=doc(
            {"Effect": "Allow", "Principal": {"Service": "pods.eks.amazonaws.com"}, "Action": ["sts:AssumeRole", "sts:TagSession"]}))  # fmt: skip
        aws.s3.BucketPolicy("tls-only", bucket="b", policy=doc(TLS_ONLY))
        aws.secretsmanager.SecretPolicy("org-only", secret_arn="arn:aws:secretsmanager:us-east-1:1:secret:s",
                                        policy=doc(ORG_SCOPED))  # fmt: skip

    assert violations(good, "no-anonymous-principals") == []
    assert list(
        open_statements(json.loads(doc({"Effect": "Allow", "NotPrincipal": {"AWS": "x"}, "Action": "s3:*"})))
    ) == ["#0"]


def test_admin_class_managed_policies_fail(violations):
    def bad():
        role = aws.iam.Role("r", assume_role_policy=doc({"Effect": "Allow", "Principal": {"Service": "ec2.amazonaws.com"},
                                                          "Action": "sts:AssumeRole"}))  # fmt: skip
        aws.iam.RolePolicyAttachment("admin", role=role.name, policy_arn="arn:aws:iam::aws:policy/AdministratorAccess")
        aws.iam.UserPolicyAttachment("power", user="u", policy_arn="arn:aws:iam::aws:policy/PowerUserAccess")
        aws.iam.GroupPolicyAttachment("iam", group="g", policy_arn="arn:aws:iam::aws:policy/IAMFullAccess")
        aws.iam.RolePolicyAttachment("sysadmin", role=role.name,
                                     policy_arn="arn:aws:iam::aws:policy/job-function/SystemAdministrator")  # fmt: skip

    def good():
        aws.iam.RolePolicyAttachment("workers", role="r",
                                     policy_arn="arn:aws:iam::aws:policy/AmazonEKSWorkerNodePolicy")  # fmt: skip
        # A customer-managed policy of the same name is judged by its document, not its name.
        aws.iam.RolePolicyAttachment("own", role="r", policy_arn="arn:aws:iam::123456789012:policy/AdministratorAccess")

    found = violations(bad, "iam-no-admin-managed-policies")
    assert sorted(v.urn.rsplit("::", 1)[1] for v in found) == ["admin", "iam", "power", "sysadmin"]
    assert violations(good, "iam-no-admin-managed-policies") == []


def test_access_points_keep_the_whole_public_access_block(violations):
    def good():
        aws.s3.AccessPoint("default", bucket="b")
        aws.s3.AccessPoint("explicit", bucket="b", public_access_block_configuration={
            "block_public_acls": True, "block_public_policy": True, "ignore_public_acls": True,
            "restrict_public_buckets": True})  # fmt: skip

    def bad():
        aws.s3.AccessPoint("open", bucket="b", public_access_block_configuration={
            "block_public_acls": True, "block_public_policy": False, "ignore_public_acls": True,
            "restrict_public_buckets": False})  # fmt: skip

    assert violations(good, "s3-access-point-public-access-block") == []
    (found,) = violations(bad, "s3-access-point-public-access-block")
    assert "blockPublicPolicy, restrictPublicBuckets off" in found.message


def test_service_linked_roles_only_for_auto_scaling_with_the_default_name(violations):
    def program():
        aws.iam.ServiceLinkedRole("autoscaling", aws_service_name="autoscaling.amazonaws.com")
        aws.iam.ServiceLinkedRole("suffixed", aws_service_name="autoscaling.amazonaws.com", custom_suffix="x")
        aws.iam.ServiceLinkedRole("other", aws_service_name="elasticbeanstalk.amazonaws.com")

    found = violations(program, "iam-service-linked-roles-allowed")
    assert sorted(v.urn.rsplit("::", 1)[1] for v in found) == ["other", "suffixed"]


def test_service_wide_managed_policies_fail(violations):
    """Issue 28: AWS managed policies that grant a whole service (every bucket, every queue of the account)."""

    def bad():
        role = aws.iam.Role("r", assume_role_policy=doc({"Effect": "Allow", "Principal": {"Service": "ec2.amazonaws.com"},
                                                          "Action": "sts:AssumeRole"}))  # fmt: skip
        aws.iam.RolePolicyAttachment("sqs", role=role.name, policy_arn="arn:aws:iam::aws:policy/AmazonSQSFullAccess")
        aws.iam.RolePolicyAttachment("s3", role=role.name, policy_arn="arn:aws:iam::aws:policy/AmazonS3FullAccess")
        aws.iam.RolePolicyAttachment(
            "lambda", role=role.name, policy_arn="arn:aws:iam::aws:policy/AWSLambda_FullAccess"
        )
        aws.iam.RolePolicyAttachment("ecr", role=role.name,
                                     policy_arn="arn:aws:iam::aws:policy/AmazonEC2ContainerRegistryPowerUser")  # fmt: skip
        aws.iam.Role("inline", assume_role_policy=doc({"Effect": "Allow", "Principal": {"Service": "ec2.amazonaws.com"},
                                                       "Action": "sts:AssumeRole"}),
                     managed_policy_arns=["arn:aws-cn:iam::aws:policy/AmazonDynamoDBFullAccess"])  # fmt: skip
        aws.iam.UserPolicyAttachment(
            "u", user="u", policy_arn="arn:aws:iam::aws:policy/job-function/DatabaseAdministrator"
        )
        aws.iam.GroupPolicyAttachment("g", group="g", policy_arn="arn:aws:iam::aws:policy/AmazonEKSAdminAccess")

    def good():
        for name in ("AmazonEKSWorkerNodePolicy", "AmazonEKS_CNI_Policy", "AmazonEC2ContainerRegistryReadOnly",
                     "AmazonSSMManagedInstanceCore", "AmazonS3ReadOnlyAccess"):  # fmt: skip
            aws.iam.RolePolicyAttachment(name, role="r", policy_arn=f"arn:aws:iam::aws:policy/{name}")
        # A customer-managed policy named alike is judged by its document (iam-no-wildcard-write).
        aws.iam.RolePolicyAttachment("own", role="r", policy_arn="arn:aws:iam::123456789012:policy/AmazonS3FullAccess")

    found = violations(bad, "iam-no-service-wide-managed-policies")
    assert sorted(v.urn.rsplit("::", 1)[1] for v in found) == ["ecr", "g", "inline", "lambda", "s3", "sqs", "u"]
    assert "AmazonSQSFullAccess" in next(v.message for v in found if v.urn.endswith("::sqs"))
    assert violations(good, "iam-no-service-wide-managed-policies") == []
    # The administrator class stays one violation, the other rule's.
    assert (
        violations(
            lambda: aws.iam.RolePolicyAttachment("a", role="r", policy_arn="arn:aws:iam::aws:policy/IAMFullAccess"),
            "iam-no-service-wide-managed-policies",
        )
        == []
    )
    # A team's accepted exception.
    allowed = violations(bad, "iam-no-service-wide-managed-policies", {"allowedPolicies": ["AmazonSQSFullAccess"]})
    assert "sqs" not in [v.urn.rsplit("::", 1)[1] for v in allowed]
