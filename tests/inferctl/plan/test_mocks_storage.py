"""Offline outputs of storage and secrets resources: AWS formats, determinism, and passwords that honour
length, alphabet and minimum counts."""

from __future__ import annotations

import re
import string

import pytest

from inference_platform.offline_plan import mocks
from inference_platform.offline_plan.mocks import MockContext
from inference_platform.offline_plan.mocks_storage import OUTPUTS, random_password

CTX = MockContext.for_region("us-east-1")


def test_every_storage_output_is_merged_into_the_plan_mocks():
    assert all(mocks.OUTPUTS[token] is fn for token, fn in OUTPUTS.items())


@pytest.mark.parametrize(
    ("inputs", "alphabet"),
    [
        ({"length": 48.0, "special": False}, string.ascii_letters + string.digits),
        ({"length": 40.0, "special": True, "overrideSpecial": "-_"}, string.ascii_letters + string.digits + "-_"),
        ({"length": 32.0, "upper": False, "special": False}, string.ascii_lowercase + string.digits),
        ({"length": 20.0}, string.ascii_letters + string.digits + "!@#$%&*()-_=+[]{}<>:?"),
    ],
)
def test_passwords_have_the_requested_length_and_alphabet(inputs, alphabet):
    value = random_password("key", inputs)
    assert len(value) == int(inputs["length"]) and set(value) <= set(alphabet)
    assert value == random_password("key", inputs) and value != random_password("other", inputs)


def test_minimum_counts_are_met():
    value = random_password("k", {"length": 12.0, "minUpper": 3.0, "minNumeric": 4.0, "special": False})
    assert sum(c.isupper() for c in value) >= 3 and sum(c.isdigit() for c in value) >= 4 and len(value) == 12


def test_buckets_get_s3_names_arns_and_domains():
    out = OUTPUTS["aws:s3/bucket:Bucket"]("store-models", {"bucketPrefix": "demo-models-"}, CTX, "ignored")
    name = out["bucket"]
    assert out["id"] == name and re.fullmatch(r"demo-models-[0-9a-f]{26}", name)
    assert (
        out["arn"] == f"arn:aws:s3:::{name}" and out["bucketRegionalDomainName"] == f"{name}.s3.us-east-1.amazonaws.com"
    )
    assert OUTPUTS["aws:s3/bucket:Bucket"]("b", {"bucket": "exact"}, CTX, "")["bucket"] == "exact"


def test_file_systems_secrets_and_associations_look_like_aws():
    fs = OUTPUTS["aws:fsx/lustreFileSystem:LustreFileSystem"]("cache-fs", {}, CTX, "")
    assert re.fullmatch(r"fs-[0-9a-f]{17}", fs["id"]) and fs["dnsName"] == f"{fs['id']}.fsx.us-east-1.amazonaws.com"
    assert re.fullmatch(r"[0-9a-z]{8}", fs["mountName"])
    secret = OUTPUTS["aws:secretsmanager/secret:Secret"]("s", {"namePrefix": "demo/api-key-1-"}, CTX, "")
    assert re.fullmatch(
        r"arn:aws:secretsmanager:us-east-1:123456789012:secret:demo/api-key-1-[0-9a-f]{26}-[0-9a-f]{6}", secret["arn"]
    )
    association = OUTPUTS["aws:eks/podIdentityAssociation:PodIdentityAssociation"]("a", {"clusterName": "c"}, CTX, "")
    assert association["associationArn"].startswith("arn:aws:eks:us-east-1:123456789012:podidentityassociation/c/a-")


def test_a_password_result_is_plain_so_the_program_must_mark_it_secret():
    out = OUTPUTS["random:index/randomPassword:RandomPassword"]("k", {"length": 32.0, "special": False}, CTX, "")
    assert isinstance(out["result"], str) and len(out["result"]) == 32
