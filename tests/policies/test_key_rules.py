"""kms-key-rotation and kms-no-wildcard-principal: a passing and failing fixture each."""

from __future__ import annotations

import json

import pulumi_aws as aws

from inference_platform.components.keys.kms import Keys, KeysArgs


def our_keys():
    Keys("keys", KeysArgs(alias_prefix="p", account_id="123456789012", region="us-west-2"))


def test_our_keys_pass_both_rules(violations):
    assert violations(our_keys, "kms-key-rotation") == []
    assert violations(our_keys, "kms-no-wildcard-principal") == []


def test_a_key_without_rotation_fails_but_asymmetric_keys_are_exempt(violations):
    def program():
        aws.kms.Key("plain")
        aws.kms.Key("signing", customer_master_key_spec="RSA_2048", key_usage="SIGN_VERIFY")

    (found,) = violations(program, "kms-key-rotation")
    assert found.urn.endswith("::plain")


def test_wildcard_principals_fail_in_keys_and_key_policies(violations):
    anyone = json.dumps(
        {
            "Statement": [
                {"Sid": "Open", "Effect": "Allow", "Principal": {"AWS": ["*"]}, "Action": "kms:*", "Resource": "*"}
            ]
        }
    )
    deny_all = json.dumps({"Statement": [{"Effect": "Deny", "Principal": "*", "Action": "kms:*", "Resource": "*"}]})

    def program():
        aws.kms.Key("open", enable_key_rotation=True, policy=anyone)
        aws.kms.KeyPolicy("open-policy", key_id="k", policy=anyone)
        aws.kms.Key("deny", enable_key_rotation=True, policy=deny_all)

    found = violations(program, "kms-no-wildcard-principal")
    assert sorted(v.urn.split("::")[-1] for v in found) == ["open", "open-policy"]
    assert "Open" in found[0].message


def test_wildcard_principals_scoped_to_the_callers_account_pass(violations):
    # AWS's own pattern (the aws/ebs key policy): anyone of this account, through EBS only.
    through_ebs = json.dumps({"Statement": [{
        "Sid": "EbsForTheAccount", "Effect": "Allow", "Principal": {"AWS": "*"}, "Action": ["kms:Decrypt", "kms:CreateGrant"],
        "Resource": "*", "Condition": {"StringEquals": {"kms:CallerAccount": "123456789012",
                                                        "kms:ViaService": "ec2.us-east-1.amazonaws.com"}}}]})  # fmt: skip
    loose = json.dumps({"Statement": [{
        "Sid": "OnlyThroughEbs", "Effect": "Allow", "Principal": "*", "Action": "kms:Decrypt", "Resource": "*",
        "Condition": {"StringEquals": {"kms:ViaService": "ec2.us-east-1.amazonaws.com"}}}]})  # fmt: skip

    def program():
        aws.kms.Key("scoped", enable_key_rotation=True, policy=through_ebs)
        aws.kms.Key("any-account", enable_key_rotation=True, policy=loose)

    found = violations(program, "kms-no-wildcard-principal")
    assert [v.urn.split("::")[-1] for v in found] == ["any-account"]
