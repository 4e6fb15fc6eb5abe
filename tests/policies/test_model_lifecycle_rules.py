"""model-objects-not-expired (issue 18 §3): lifecycle rules that expire or archive the model objects a stack
serves from, related to the bucket a rollout names in its s3:// URIs or to ModelStore's models bucket."""

from __future__ import annotations

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s
import pytest

from inference_platform.components.storage import ModelStore, ModelStoreArgs

RULE = "model-objects-not-expired"
URI = "s3://team-models/llm/llama/fp8/2026-11-30/"


def _served_by_a_pod(rules, *, inline=False, bucket="team-models"):
    def program():
        if inline:
            aws.s3.Bucket("models", bucket=bucket, lifecycle_rules=rules)
        else:
            b = aws.s3.Bucket("models", bucket=bucket)
            aws.s3.BucketLifecycleConfiguration("lifecycle", bucket=b.bucket, rules=rules)
        k8s.core.v1.Pod("server", metadata={"name": "server", "namespace": "inference"}, spec={
            "containers": [{"name": "triton", "image": "x", "args": ["--engine-uri", URI]}]})  # fmt: skip

    return program


GOOD = [
    {"id": "tidy", "status": "Enabled", "filter": {"prefix": ""},
     "expiration": {"expired_object_delete_marker": True}, "noncurrent_version_expiration": {"noncurrent_days": 30},
     "abort_incomplete_multipart_upload": {"days_after_initiation": 7}},
    {"id": "cheaper", "status": "Enabled", "filter": {"prefix": "llm/"},
     "transitions": [{"days": 30, "storage_class": "STANDARD_IA"}]},
    {"id": "scratch", "status": "Enabled", "filter": {"prefix": "scratch/"}, "expiration": {"days": 1}},
    {"id": "off", "status": "Disabled", "filter": {"prefix": ""}, "expiration": {"days": 1}},
]  # fmt: skip


def test_lifecycle_rules_that_keep_served_objects_readable_pass(violations):
    assert violations(_served_by_a_pod(GOOD), RULE) == []
    # Another bucket than the one served from may expire what it likes.
    assert violations(_served_by_a_pod([{"id": "x", "status": "Enabled", "filter": {"prefix": ""},
                                         "expiration": {"days": 1}}], bucket="team-scratch"), RULE) == []  # fmt: skip


@pytest.mark.parametrize(
    ("rule", "words"),
    [({"id": "all", "status": "Enabled", "filter": {"prefix": ""}, "expiration": {"days": 30}}, "expires current"),
     ({"id": "deep", "status": "Enabled", "filter": {"prefix": "llm/llama/"},
       "transitions": [{"days": 90, "storage_class": "DEEP_ARCHIVE"}]}, "to DEEP_ARCHIVE"),
     ({"id": "tagged", "status": "Enabled", "filter": {"tag": {"key": "tier", "value": "old"}},
       "transitions": [{"days": 90, "storage_class": "GLACIER"}]}, "to GLACIER"),
     ({"id": "and", "status": "Enabled", "filter": {"and": {"prefix": "llm/", "tags": {"a": "b"}}},
       "expiration": {"date": "2027-01-01T00:00:00Z"}}, "on a date")],
    ids=["expire-all", "deep-archive-prefix", "glacier-by-tag", "and-filter-date"],
)  # fmt: skip
def test_rules_expiring_or_archiving_served_objects_fail(violations, rule, words):
    (found,) = violations(_served_by_a_pod([rule]), RULE)
    assert words in found.message and "'llm/llama/fp8/2026-11-30/'" in found.message


def test_inline_bucket_lifecycle_rules_are_judged(violations):
    rules = [{"id": "old", "enabled": True, "prefix": "llm/", "expiration": {"days": 7}}]
    (found,) = violations(_served_by_a_pod(rules, inline=True), RULE)
    assert found.message.startswith("bucket models: rule old") and "expires current objects" in found.message
    assert violations(_served_by_a_pod([{**rules[0], "enabled": False}], inline=True), RULE) == []


def _model_store(extra_rules):
    def program():
        store = ModelStore("store", ModelStoreArgs(name_prefix="team", account_id="123456789012",
                                                   kms_key_arn="arn:aws:kms:us-east-1:123456789012:key/x"))  # fmt: skip
        if extra_rules:
            aws.s3.BucketLifecycleConfiguration("extra", bucket=store.bucket_name, rules=extra_rules,
                                                opts=pulumi.ResourceOptions(depends_on=[store]))  # fmt: skip

    return program


def test_the_model_stores_own_lifecycle_passes_and_an_expiry_on_its_models_bucket_fails(violations):
    assert violations(_model_store(None), RULE) == []
    found = violations(_model_store([{"id": "purge", "status": "Enabled", "filter": {"prefix": "models/"},
                                      "expiration": {"days": 14}}]), RULE)  # fmt: skip
    assert [v.urn.rsplit("::", 1)[-1] for v in found] == ["extra"]


@pytest.mark.parametrize("tier", ["ARCHIVE_ACCESS", "DEEP_ARCHIVE_ACCESS"])
def test_intelligent_tiering_archive_tiers_under_served_prefixes_fail(violations, tier):
    def program(prefix):
        b = aws.s3.Bucket("models", bucket="team-models")
        aws.s3.BucketIntelligentTieringConfiguration("tiering", bucket=b.bucket, name="archive",
                                                     filter={"prefix": prefix},
                                                     tierings=[{"access_tier": tier, "days": 180}])  # fmt: skip
        k8s.core.v1.ConfigMap("serving", metadata={"namespace": "inference"}, data={"ENGINE_URI": URI})

    (found,) = violations(lambda: program("llm/"), RULE)
    assert f"not read for 180 days to {tier}" in found.message
    assert violations(lambda: program("scratch/"), RULE) == []
