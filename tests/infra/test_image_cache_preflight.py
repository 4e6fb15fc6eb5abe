"""coldStart.imagePull cached: the preview reads the cache's snapshot and stops, naming coldStart.imageCache.snapshotId
and the fix, when its volumes could not be the stack's (infra/image_cache.py). A volume restored from a snapshot takes
the snapshot's encryption and the launch template may not set any, so this is where the storage key is held."""

from __future__ import annotations

from types import SimpleNamespace

import pulumi
import pulumi_aws as aws
import pytest

from inference_platform.infra.image_cache import image_cache_preflight
from tests.settings.test_inference import load

STORAGE_KEY = "arn:aws:kms:us-east-1:123456789012:key/storage"
SERVED = load({}, "prod").inference.image.digest
TAG = "inference.platform/cached-image"
GOOD = {"state": "completed", "encrypted": True, "kms_key_id": STORAGE_KEY, "volume_size": 100,
        "tags": {TAG: f"123456789012.dkr.ecr.us-east-1.amazonaws.com/serving:2026.12.1@{SERVED}"}}  # fmt: skip
STALE = f"123456789012.dkr.ecr.us-east-1.amazonaws.com/serving:2026.11.9@sha256:{'e' * 64}"


@pytest.fixture
def aws_answers(monkeypatch):
    """Answers get_snapshot and get_alias as ``snapshot`` / ``alias`` say (None: the call fails)."""

    def use(snapshot, alias=STORAGE_KEY):
        def get_snapshot(snapshot_ids, **_):
            if snapshot is None:
                raise Exception("InvalidSnapshot.NotFound")
            return SimpleNamespace(**snapshot)

        def get_alias(name, **_):
            if alias is None:
                raise Exception("NotFoundException")
            return SimpleNamespace(target_key_arn=alias)

        monkeypatch.setattr(aws.ebs, "get_snapshot", get_snapshot)
        monkeypatch.setattr(aws.kms, "get_alias", get_alias)

    return use


def test_the_snapshot_the_builder_makes_passes(aws_answers):
    aws_answers(GOOD)
    image_cache_preflight(load({}, "prod"))


@pytest.mark.parametrize(
    ("snapshot", "alias", "words"),
    [
        (None, STORAGE_KEY, "cannot be read"),
        ({**GOOD, "state": "pending"}, STORAGE_KEY, "is pending, not completed"),
        ({**GOOD, "encrypted": False, "kms_key_id": ""}, STORAGE_KEY, "is not encrypted"),
        (GOOD, None, "does not exist yet"),
        ({**GOOD, "kms_key_id": "arn:aws:kms:us-east-1:123456789012:key/other"}, STORAGE_KEY, "not the stack's storage key"),
        ({**GOOD, "volume_size": 200}, STORAGE_KEY, "never smaller than its snapshot"),
        ({**GOOD, "tags": {TAG: STALE}}, STORAGE_KEY, f"holds {STALE} (its {TAG} tag), not the stack's"),
        ({**GOOD, "tags": {}}, STORAGE_KEY, "holds an image it does not name"),
    ],
)  # fmt: skip
def test_a_snapshot_its_volumes_could_not_use_stops_the_preview_naming_the_key(aws_answers, snapshot, alias, words):
    aws_answers(snapshot, alias)
    with pytest.raises(pulumi.RunError) as err:
        image_cache_preflight(load({}, "prod"))
    message = str(err.value)
    assert message.startswith("coldStart.imageCache.snapshotId: ") and words in message
    assert "inferctl image-cache build" in message or "wait for it" in message or "sizeGib" in message


def test_a_stack_without_the_cache_reads_nothing(aws_answers):
    aws_answers(None, None)
    image_cache_preflight(load({"coldStart": {"imagePull": "parallel"}}, "prod"))
