"""The lane's bucket: the model store's hardening (one definition, components/storage/bucket_controls.py), a
lifecycle for its transient files, access logs to the stack's log bucket, protection in production."""

from __future__ import annotations

import json

import pytest

from inference_platform.components.batch.bucket import BatchBucket, BatchBucketArgs
from inference_platform.components.batch.documents import LANE_PREFIXES, lifecycle_rules
from inference_platform.components.common.errors import ComponentArgsError
from inference_platform.components.storage.model_store import ModelStore, ModelStoreArgs
from tests.conftest import by_type, one

KEY = "arn:aws:kms:us-east-1:123456789012:key/11111111-2222-3333-4444-555555555555"


def bucket_args(**overrides) -> BatchBucketArgs:
    values = dict(name_prefix="inference-platform-prod", kms_key_arn=KEY, log_bucket="inference-platform-prod-logs-x")
    values.update(overrides)
    return BatchBucketArgs(**values)


@pytest.fixture
def lane(run_components):
    return run_components(lambda: BatchBucket("batch", bucket_args())).resources


def test_the_bucket_is_hardened_like_the_model_bucket(lane, run_components):
    models = run_components(
        lambda: ModelStore("store", ModelStoreArgs(name_prefix="p", account_id="123456789012", kms_key_arn=KEY))
    ).resources
    for suffix in ("encryption", "public-access", "ownership", "versioning"):
        ours, theirs = one(lane, f"batch-bucket-{suffix}").inputs, one(models, f"store-models-{suffix}").inputs
        assert {k: v for k, v in ours.items() if k != "bucket"} == {k: v for k, v in theirs.items() if k != "bucket"}
    policy = json.loads(one(lane, "batch-bucket-policy").inputs["policy"])
    sids = [s["Sid"] for s in policy["Statement"]]
    assert sids == ["DenyInsecureTransport", "DenyUploadsWithoutSseKms", "DenyUploadsWithAnotherKey"]


def test_files_and_results_expire_and_housekeeping_runs(lane):
    rules = {r["id"]: r for r in one(lane, "batch-bucket-lifecycle").inputs["rules"]}
    assert set(rules) == {"expire-files", "expire-results", "housekeeping"}
    for prefix in LANE_PREFIXES:
        rule = rules[f"expire-{prefix.rstrip('/')}"]
        assert rule["filter"] == {"prefix": prefix} and rule["expiration"] == {"days": 30}
    assert rules["housekeeping"]["noncurrentVersionExpiration"] == {"noncurrentDays": 1}
    assert rules["housekeeping"]["abortIncompleteMultipartUpload"] == {"daysAfterInitiation": 1}


def test_access_logs_go_to_the_stack_log_bucket_under_their_own_prefix(lane):
    logging = one(lane, "batch-bucket-logging").inputs
    assert logging["targetBucket"] == "inference-platform-prod-logs-x"
    assert logging["targetPrefix"] == "batch/"


def test_the_model_store_log_bucket_admits_the_lanes_bucket_by_name_prefix(run_components):
    source = "arn:aws:s3:::inference-platform-prod-batch-*"
    args = ModelStoreArgs(name_prefix="inference-platform-prod", account_id="123456789012", kms_key_arn=KEY,
                          log_sources=[source])  # fmt: skip
    resources = run_components(lambda: ModelStore("store", args)).resources
    statement = json.loads(one(resources, "store-logs-policy").inputs["policy"])["Statement"][-1]
    sources = statement["Condition"]["ArnLike"]["aws:SourceArn"]
    assert source in sources and len(sources) == 2
    lane = run_components(lambda: BatchBucket("batch", bucket_args())).resources
    prefix = one(lane, "batch-bucket").inputs["bucketPrefix"]
    assert prefix == "inference-platform-prod-batch-" and source.endswith(f":::{prefix}*")


def test_production_protects_and_retains_the_bucket_and_its_configuration(run_components):
    resources = run_components(lambda: BatchBucket("batch", bucket_args(protect=True))).resources
    bucket = one(resources, "batch-bucket")
    assert bucket.protect and bucket.retain_on_delete
    for r in resources:
        if r.custom:
            assert r.retain_on_delete, r.urn
    assert all(b.inputs["forceDestroy"] is False for b in by_type(resources, "aws:s3/bucket:Bucket"))


def test_bad_arguments_are_refused_together():
    with pytest.raises(ComponentArgsError) as err:
        BatchBucket("batch", bucket_args(retention_days=0, protect=True, force_destroy=True))
    assert "retention_days=0" in str(err.value) and "force_destroy and protect" in str(err.value)


def test_lifecycle_rules_have_stable_ids():
    assert [r["id"] for r in lifecycle_rules(retention_days=7)] == ["expire-files", "expire-results", "housekeeping"]
