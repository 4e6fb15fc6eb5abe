"""S3 rules (KMS, public access, TLS-only, versioning, access logging), stateful protection in production
and storage least privilege: a passing and a failing fixture each."""

from __future__ import annotations

import json

import pulumi
import pulumi_aws as aws
import pytest

from inference_platform.components.storage.model_access import ModelAccess, ModelAccessArgs
from inference_platform.components.storage.model_store import ModelStore, ModelStoreArgs

KEY = "arn:aws:kms:us-west-2:123456789012:key/storage"
S3_RULES = ("s3-kms-encryption", "s3-public-access-blocked", "s3-tls-only", "s3-versioning", "s3-access-logging")


def model_store():
    ModelStore("store", ModelStoreArgs(name_prefix="demo", account_id="123456789012", kms_key_arn=KEY))


def bare_bucket():
    aws.s3.Bucket("bare")


def _names(found) -> list[str]:
    return sorted(v.urn.split("::")[-1] for v in found)


@pytest.mark.parametrize("policy", S3_RULES)
def test_the_model_store_passes(violations, policy):
    assert violations(model_store, policy) == []


@pytest.mark.parametrize("policy", S3_RULES)
def test_a_bucket_without_settings_fails(violations, policy):
    (found,) = violations(bare_bucket, policy)
    assert found.urn.endswith("::bare") and found.mandatory and "bare:" in found.message


def test_sse_s3_or_the_aws_managed_key_fail_kms_encryption_but_a_log_target_may_use_sse_s3(violations):
    def program():
        for name, default in (
            ("aes", {"sse_algorithm": "AES256"}),
            ("aws-managed", {"sse_algorithm": "aws:kms", "kms_master_key_id": "alias/aws/s3"}),
            ("cmk", {"sse_algorithm": "aws:kms", "kms_master_key_id": KEY}),
            ("logs", {"sse_algorithm": "AES256"}),
        ):
            bucket = aws.s3.Bucket(name)
            aws.s3.BucketServerSideEncryptionConfiguration(
                f"{name}-sse", bucket=bucket.bucket, rules=[{"apply_server_side_encryption_by_default": default}]
            )
            if name == "cmk":
                source = bucket
            if name == "logs":
                aws.s3.BucketLogging(
                    "cmk-logging", bucket=source.bucket, target_bucket=bucket.bucket, target_prefix="l/"
                )

    found = violations(program, "s3-kms-encryption")
    assert _names(found) == ["aes", "aws-managed"]
    assert "AES256" in next(v.message for v in found if v.urn.endswith("::aes"))


def test_inline_legacy_settings_count_and_literal_bucket_names_relate(violations):
    def program():
        aws.s3.Bucket(
            "inline",
            bucket="inline-bucket",
            server_side_encryption_configuration={
                "rule": {
                    "apply_server_side_encryption_by_default": {"sse_algorithm": "aws:kms", "kms_master_key_id": KEY}
                }
            },
            versioning={"enabled": True},
        )
        aws.s3.BucketPublicAccessBlock(
            "named",
            bucket="inline-bucket",
            block_public_acls=True,
            block_public_policy=True,
            ignore_public_acls=True,
            restrict_public_buckets=True,
        )

    for policy in ("s3-kms-encryption", "s3-versioning", "s3-public-access-blocked"):
        assert violations(program, policy) == [], policy


def test_a_partial_public_access_block_fails_naming_the_open_setting(violations):
    def program():
        bucket = aws.s3.Bucket("b")
        aws.s3.BucketPublicAccessBlock(
            "b-pab",
            bucket=bucket.bucket,
            block_public_acls=True,
            block_public_policy=True,
            ignore_public_acls=True,
            restrict_public_buckets=False,
        )

    (found,) = violations(program, "s3-public-access-blocked")
    assert "restrictPublicBuckets" in found.message


def _bucket_with_policy(statement):
    def program():
        bucket = aws.s3.Bucket("b")
        aws.s3.BucketPolicy(
            "b-policy",
            bucket=bucket.bucket,
            policy=bucket.arn.apply(lambda arn: json.dumps({"Version": "2012-10-17", "Statement": [statement(arn)]})),
        )

    return program


@pytest.mark.parametrize(
    ("statement", "passes"),
    [
        (
            lambda arn: {
                "Effect": "Deny",
                "Principal": "*",
                "Action": "s3:*",
                "Resource": [arn, f"{arn}/*"],
                "Condition": {"Bool": {"aws:SecureTransport": "false"}},
            },
            True,
        ),
        (
            lambda arn: {
                "Effect": "Deny",
                "Principal": {"AWS": "*"},
                "Action": ["s3:*"],
                "Resource": [arn, f"{arn}/*"],
                "Condition": {"Bool": {"aws:SecureTransport": False}},
            },
            True,
        ),
        (
            lambda arn: {
                "Effect": "Deny",
                "Principal": "*",
                "Action": "s3:*",
                "Resource": f"{arn}/*",
                "Condition": {"Bool": {"aws:SecureTransport": "false"}},
            },
            False,
        ),
        (
            lambda arn: {
                "Effect": "Deny",
                "Principal": "*",
                "Action": "s3:GetObject",
                "Resource": [arn, f"{arn}/*"],
                "Condition": {"Bool": {"aws:SecureTransport": "false"}},
            },
            False,
        ),
        (
            lambda arn: {
                "Effect": "Allow",
                "Principal": {"AWS": "arn:aws:iam::123456789012:root"},
                "Action": "s3:GetObject",
                "Resource": f"{arn}/*",
            },
            False,
        ),
    ],
)
def test_tls_only_needs_a_deny_of_everything_without_secure_transport(violations, statement, passes):
    found = violations(_bucket_with_policy(statement), "s3-tls-only")
    assert (found == []) is passes, found


def test_suspended_versioning_fails(violations):
    def program():
        bucket = aws.s3.Bucket("b")
        aws.s3.BucketVersioning("b-v", bucket=bucket.bucket, versioning_configuration={"status": "Suspended"})

    (found,) = violations(program, "s3-versioning")
    assert "Suspended" in found.message


def test_only_log_targets_are_exempt_from_access_logging(violations):
    def program():
        logs = aws.s3.Bucket("logs")
        data = aws.s3.Bucket("data")
        aws.s3.BucketLogging("data-logging", bucket=data.bucket, target_bucket=logs.bucket, target_prefix="d/")
        aws.s3.Bucket("silent")

    assert _names(violations(program, "s3-access-logging")) == ["silent"]


STATEFUL = {
    "bucket": lambda opts: aws.s3.Bucket("bucket", opts=opts),
    "key": lambda opts: aws.kms.Key("key", enable_key_rotation=True, opts=opts),
    "secret": lambda opts: aws.secretsmanager.Secret("secret", kms_key_id=KEY, opts=opts),
    "fs": lambda opts: aws.fsx.LustreFileSystem(
        "fs",
        deployment_type="PERSISTENT_2",
        storage_capacity=1200,
        subnet_ids="subnet-1",
        per_unit_storage_throughput=250,
        opts=opts,
    ),
    # Issue 28 R8: queued lines and dead-letter evidence, images, the rate-limit counters.
    "queue": lambda opts: aws.sqs.Queue("queue", opts=opts),
    "repository": lambda opts: aws.ecr.Repository("repository", opts=opts),
    "cache": lambda opts: aws.elasticache.ReplicationGroup("cache", description="d", opts=opts),
    "table": lambda opts: aws.dynamodb.Table("table", hash_key="k", attributes=[{"name": "k", "type": "S"}], opts=opts),
}


@pytest.mark.parametrize("kind", sorted(STATEFUL))
def test_production_stateful_resources_must_be_protected(violations, kind):
    def unprotected():
        STATEFUL[kind](None)

    def protected():
        STATEFUL[kind](pulumi.ResourceOptions(protect=True, retain_on_delete=True))

    (found,) = violations(unprotected, "stateful-resources-protected", {"production": True})
    assert found.urn.endswith(f"::{kind}") and "protect" in found.message
    assert violations(protected, "stateful-resources-protected", {"production": True}) == []
    assert violations(unprotected, "stateful-resources-protected", {"production": False}) == []
    assert violations(unprotected, "stateful-resources-protected") == []


def test_a_queue_of_five_minute_notices_is_not_state(violations):
    def program():
        aws.sqs.Queue("interruptions", message_retention_seconds=300)
        aws.sqs.Queue("work", message_retention_seconds=301)

    found = violations(program, "stateful-resources-protected", {"production": True})
    assert _names(found) == ["work"]


def test_the_protected_types_are_configurable(violations):
    def program():
        aws.cloudwatch.LogGroup("audit")
        aws.s3.Bucket("bucket")

    found = violations(
        program, "stateful-resources-protected", {"production": True, "types": ["aws:cloudwatch/logGroup:LogGroup"]}
    )
    assert _names(found) == ["audit"]


def _role_policy(document):
    def program():
        aws.iam.RolePolicy("grant", role="r", policy=json.dumps({"Version": "2012-10-17", "Statement": document}))

    return program


@pytest.mark.parametrize(
    ("statements", "words"),
    [
        ([{"Effect": "Allow", "Action": "s3:*", "Resource": "arn:aws:s3:::b/*"}], ["s3:*"]),
        ([{"Effect": "Allow", "Action": ["s3:GetObject"], "Resource": "*"}], ["every resource"]),
        (
            [{"Effect": "Allow", "Action": "secretsmanager:*", "Resource": "arn:aws:secretsmanager:::secret:x"}],
            ["secretsmanager:*"],
        ),
        ([{"Effect": "Allow", "Action": "*", "Resource": "*"}], ["allows *", "every resource"]),
        ([{"Effect": "Allow", "NotAction": "iam:*", "Resource": "*"}], ["NotAction"]),
    ],
)
def test_wildcard_storage_grants_fail(violations, statements, words):
    (found,) = violations(_role_policy(statements), "storage-least-privilege")
    for word in words:
        assert word in found.message


def test_named_grants_pass_and_other_services_are_out_of_scope(violations):
    statements = [
        {"Effect": "Allow", "Action": ["s3:GetObject"], "Resource": "arn:aws:s3:::b/models/*"},
        {"Effect": "Allow", "Action": ["ec2:DescribeInstances"], "Resource": "*"},
        {"Effect": "Deny", "Action": "s3:*", "Resource": "*"},
    ]
    assert violations(_role_policy(statements), "storage-least-privilege") == []


def test_inline_role_policies_are_judged_and_the_model_roles_pass(violations):
    def program():
        aws.iam.Role(
            "inline",
            assume_role_policy="{}",
            inline_policies=[
                {
                    "name": "p",
                    "policy": json.dumps({"Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]}),
                }
            ],
        )
        ModelAccess(
            "access",
            ModelAccessArgs(bucket_arn="arn:aws:s3:::b", model_prefix="models/", kms_key_arn=KEY, region="us-west-2"),
        )

    assert _names(violations(program, "storage-least-privilege")) == ["inline"]
