"""The inference image's ECR repository: immutable, scanned, KMS-encrypted, with a lifecycle policy."""

from __future__ import annotations

import json

import pytest

from inference_platform.components.common.errors import ComponentArgsError
from inference_platform.components.serving.image_repository import (
    ImageRepository,
    ImageRepositoryArgs,
    lifecycle_policy,
)
from tests.conftest import one

KEY = "arn:aws:kms:us-west-2:123456789012:key/11111111-2222-3333-4444-555555555555"


def repository(**overrides):
    values = dict(name="inference-platform-dev/inference", kms_key_arn=KEY)
    values.update(overrides)
    return lambda: ImageRepository("images", ImageRepositoryArgs(**values))


def test_the_repository_is_immutable_scanned_and_encrypted_with_the_given_key(run_components):
    resources = run_components(repository()).resources
    repo = one(resources, "images-repository")
    assert repo.inputs["name"] == "inference-platform-dev/inference"
    assert repo.inputs["imageTagMutability"] == "IMMUTABLE"
    assert repo.inputs["imageScanningConfiguration"] == {"scanOnPush": True}
    assert repo.inputs["encryptionConfigurations"] == [{"encryptionType": "KMS", "kmsKey": KEY}]
    assert repo.parent.endswith("inference:images:ImageRepository::images")
    policy = one(resources, "images-lifecycle")
    assert repo.urn in policy.property_dependencies["repository"]
    assert json.loads(policy.inputs["policy"]) == lifecycle_policy(30, 7)


def test_production_protects_and_retains_the_repository(run_components):
    repo = one(run_components(repository(protect=True)).resources, "images-repository")
    assert repo.protect and repo.retain_on_delete and not repo.inputs.get("forceDelete")


def test_lifecycle_expires_untagged_images_first_and_keeps_the_newest():
    rules = lifecycle_policy(10, 3)["rules"]
    assert [r["rulePriority"] for r in rules] == [1, 2]
    assert rules[0]["selection"] == {"tagStatus": "untagged", "countType": "sinceImagePushed", "countUnit": "days",
                                     "countNumber": 3}  # fmt: skip
    # ECR requires the tagStatus "any" rule to have the lowest priority (highest number).
    assert rules[-1]["selection"] == {"tagStatus": "any", "countType": "imageCountMoreThan", "countNumber": 10}


def test_bad_arguments_are_named_together_before_anything_registers():
    with pytest.raises(ComponentArgsError) as err:
        repository(name="Bad Name", keep_images=0, force_delete=True, protect=True)()
    message = str(err.value)
    assert "name='Bad Name'" in message and "keep_images=0" in message and "force_delete and protect" in message
