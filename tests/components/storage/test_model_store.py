"""Model store: two private, versioned buckets; SSE-KMS on models, SSE-S3 on access logs; TLS-only
policies; lifecycle rules; access logging; protect/retain and force-destroy."""

from __future__ import annotations

import json

import pytest

from inference_platform.components.common.errors import ComponentArgsError
from inference_platform.components.storage.model_store import LifecycleArgs, ModelStore, ModelStoreArgs, lifecycle_rules
from tests.conftest import by_type, one

KEY = "arn:aws:kms:us-west-2:123456789012:key/11111111-2222-3333-4444-555555555555"
ACCOUNT = "123456789012"


def store_args(**overrides) -> ModelStoreArgs:
    values = dict(name_prefix="inference-platform-dev", account_id=ACCOUNT, kms_key_arn=KEY)
    values.update(overrides)
    return ModelStoreArgs(**values)


@pytest.fixture
def store(run_components):
    return run_components(lambda: ModelStore("store", store_args())).resources


def _policy(resources, name):
    return json.loads(one(resources, name).inputs["policy"])


def test_two_buckets_named_for_the_stack_and_their_role(store):
    buckets = {b.name: b for b in by_type(store, "aws:s3/bucket:Bucket")}
    assert set(buckets) == {"store-models", "store-logs"}
    assert buckets["store-models"].inputs["bucketPrefix"] == "inference-platform-dev-models-"
    assert buckets["store-logs"].inputs["tags"]["bucket-role"] == "access-logs"
    assert all(len(b.inputs["bucketPrefix"]) <= 37 for b in buckets.values())


def test_model_bucket_uses_the_storage_key_with_a_bucket_key_and_the_log_bucket_sse_s3(store):
    (models,) = one(store, "store-models-encryption").inputs["rules"]
    assert models["applyServerSideEncryptionByDefault"] == {"sseAlgorithm": "aws:kms", "kmsMasterKeyId": KEY}
    assert models["bucketKeyEnabled"] is True and models["blockedEncryptionTypes"] == ["SSE-C"]
    (logs,) = one(store, "store-logs-encryption").inputs["rules"]
    assert logs["applyServerSideEncryptionByDefault"] == {"sseAlgorithm": "AES256"}


@pytest.mark.parametrize("bucket", ["models", "logs"])
def test_both_buckets_are_private_owner_enforced_and_versioned(store, bucket):
    block = one(store, f"store-{bucket}-public-access").inputs
    assert all(
        block[f] is True for f in ("blockPublicAcls", "blockPublicPolicy", "ignorePublicAcls", "restrictPublicBuckets")
    )
    assert one(store, f"store-{bucket}-ownership").inputs["rule"] == {"objectOwnership": "BucketOwnerEnforced"}
    assert one(store, f"store-{bucket}-versioning").inputs["versioningConfiguration"] == {"status": "Enabled"}


def test_every_sub_resource_follows_its_bucket_by_property_dependency(store):
    buckets = {b.name: b.urn for b in by_type(store, "aws:s3/bucket:Bucket")}
    for r in store:
        if r.type.startswith("aws:s3/bucket") and r.type != "aws:s3/bucket:Bucket":
            owner = buckets["store-logs"] if r.name.startswith("store-logs") else buckets["store-models"]
            assert r.property_dependencies["bucket"] == [owner], r.urn


def test_model_bucket_policy_denies_plain_http_and_uploads_with_other_encryption(store):
    arn = one(store, "store-models").outputs["arn"]
    sids = {s["Sid"]: s for s in _policy(store, "store-models-policy")["Statement"]}
    tls = sids["DenyInsecureTransport"]
    assert tls["Effect"] == "Deny" and tls["Principal"] == "*" and tls["Action"] == "s3:*"
    assert tls["Resource"] == [arn, f"{arn}/*"]
    assert tls["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
    algorithm = sids["DenyUploadsWithoutSseKms"]["Condition"]["StringNotEqualsIfExists"]
    assert algorithm == {"s3:x-amz-server-side-encryption": "aws:kms"}
    key = sids["DenyUploadsWithAnotherKey"]["Condition"]["StringNotEqualsIfExists"]
    assert key == {"s3:x-amz-server-side-encryption-aws-kms-key-id": KEY}
    assert all(s["Effect"] == "Deny" for s in sids.values())


def test_access_logs_go_to_the_log_bucket_which_admits_only_s3_log_delivery_for_this_bucket(store):
    logging = one(store, "store-models-logging")
    assert logging.property_dependencies["targetBucket"] == [one(store, "store-logs").urn]
    assert logging.inputs["targetObjectKeyFormat"] == {"partitionedPrefix": {"partitionDateSource": "EventTime"}}
    assert one(store, "store-logs-policy").urn in logging.dependencies
    statements = {s["Sid"]: s for s in _policy(store, "store-logs-policy")["Statement"]}
    delivery = statements["AllowServerAccessLogDelivery"]
    assert delivery["Principal"] == {"Service": "logging.s3.amazonaws.com"} and delivery["Action"] == "s3:PutObject"
    assert delivery["Condition"] == {
        "ArnLike": {"aws:SourceArn": [one(store, "store-models").outputs["arn"]]},
        "StringEquals": {"aws:SourceAccount": ACCOUNT},
    }
    assert "DenyInsecureTransport" in statements


def test_lifecycle_expires_old_versions_moves_cold_objects_and_aborts_uploads(store):
    rules = {r["id"]: r for r in one(store, "store-models-lifecycle").inputs["rules"]}
    assert set(rules) == {"noncurrent-versions", "cold-prefix", "cold-tag"}
    old = rules["noncurrent-versions"]
    assert old["noncurrentVersionExpiration"] == {"noncurrentDays": 90.0}
    assert old["noncurrentVersionTransitions"] == [{"noncurrentDays": 30.0, "storageClass": "STANDARD_IA"}]
    assert old["abortIncompleteMultipartUpload"] == {"daysAfterInitiation": 7.0}
    assert rules["cold-prefix"]["filter"] == {"prefix": "archive/"}
    assert rules["cold-tag"]["filter"] == {"tag": {"key": "tier", "value": "cold"}}
    assert rules["cold-tag"]["transitions"] == [{"days": 30.0, "storageClass": "STANDARD_IA"}]
    logs = one(store, "store-logs-lifecycle").inputs["rules"][0]
    assert logs["expiration"] == {"days": 365.0} and logs["noncurrentVersionExpiration"] == {"noncurrentDays": 365.0}
    versioning = one(store, "store-models-versioning").urn
    assert versioning in one(store, "store-models-lifecycle").dependencies


def test_lifecycle_rules_follow_their_settings():
    rules = lifecycle_rules(
        LifecycleArgs(
            noncurrent_version_transition_days=None,
            cold_prefix=None,
            cold_storage_class="INTELLIGENT_TIERING",
            cold_transition_days=1,
        )
    )
    assert [r["id"] for r in rules] == ["noncurrent-versions", "cold-tag"]
    assert "noncurrent_version_transitions" not in rules[0]
    assert rules[1]["transitions"] == [{"days": 1, "storage_class": "INTELLIGENT_TIERING"}]
    assert [r["id"] for r in lifecycle_rules(LifecycleArgs(cold_prefix=None, cold_tag=None))] == ["noncurrent-versions"]


@pytest.mark.parametrize("protect", [True, False])
def test_protected_stores_protect_and_retain_buckets_and_retain_every_setting(run_components, protect):
    resources = run_components(lambda: ModelStore("store", store_args(protect=protect))).resources
    children = [r for r in resources if r.custom]
    assert children and all(r.parent == one(resources, "store").urn for r in children)
    for r in children:
        is_bucket = r.type == "aws:s3/bucket:Bucket"
        assert r.protect is (protect and is_bucket), r.urn
        assert r.retain_on_delete is protect, r.urn


def test_force_destroy_reaches_both_buckets_and_excludes_protection(run_components):
    resources = run_components(lambda: ModelStore("store", store_args(force_destroy=True))).resources
    assert all(b.inputs["forceDestroy"] is True for b in by_type(resources, "aws:s3/bucket:Bucket"))
    with pytest.raises(ComponentArgsError, match="force_destroy and protect"):
        ModelStore("store", store_args(force_destroy=True, protect=True))


def test_bad_arguments_are_reported_together():
    bad = LifecycleArgs(
        noncurrent_version_transition_days=100,
        noncurrent_version_expiration_days=90,
        abort_incomplete_multipart_upload_days=0,
        cold_storage_class="GLACIER",
        cold_prefix="/cold",
    )
    with pytest.raises(ComponentArgsError) as err:
        ModelStore("store", store_args(lifecycle=bad, model_prefix="models", access_log_retention_days=-1))
    text = str(err.value)
    for expected in (
        "abort_incomplete_multipart_upload_days=0",
        "must come before",
        "GLACIER",
        "model_prefix='models'",
        "cold_prefix='/cold'",
        "access_log_retention_days=-1",
    ):
        assert expected in text


def test_a_long_name_prefix_still_fits_s3s_prefix_limit(run_components):
    prefix = "Inference_Platform-" + "x" * 60
    resources = run_components(lambda: ModelStore("store", store_args(name_prefix=prefix))).resources
    for bucket in by_type(resources, "aws:s3/bucket:Bucket"):
        value = bucket.inputs["bucketPrefix"]
        assert len(value) <= 37 and value == value.lower() and "_" not in value
