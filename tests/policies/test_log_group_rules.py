"""log-groups-encrypted-retained (issue 18 §3): a CloudWatch log group without a customer key or a retention."""

from __future__ import annotations

import pulumi_aws as aws

RULE = "log-groups-encrypted-retained"
KEY = "arn:aws:kms:us-east-1:123456789012:key/x"


def test_a_log_group_with_a_key_and_a_retention_passes(violations):
    def program():
        aws.cloudwatch.LogGroup("app", kms_key_id=KEY, retention_in_days=30)

    assert violations(program, RULE) == []


def test_log_groups_without_a_key_or_kept_for_ever_fail(violations):
    def program():
        aws.cloudwatch.LogGroup("bare")
        aws.cloudwatch.LogGroup("never-expires", kms_key_id=KEY, retention_in_days=0)

    found = {(v.urn.rsplit("::", 1)[-1], v.message.split(" is ")[0]) for v in violations(program, RULE)}
    assert found == {("bare", "kmsKeyId"), ("bare", "retentionInDays"), ("never-expires", "retentionInDays")}
