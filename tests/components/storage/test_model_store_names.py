"""Model store bucket names (issue 17 §5): the prefix keeps a short stack's name, hashes a long one
instead of cutting it (blue and green stacks stay apart), and is never a reason to replace a bucket."""

from __future__ import annotations

import pytest

from inference_platform.components.storage.model_store import ModelStore
from tests.components.storage.test_model_store import store_args
from tests.conftest import one


def _buckets(run_components, name_prefix):
    found = run_components(lambda: ModelStore("store", store_args(name_prefix=name_prefix))).resources
    return one(found, "store-models"), one(found, "store-logs")


def test_a_short_prefix_is_kept(run_components):
    models, logs = _buckets(run_components, "inference-platform-dev")
    assert models.inputs["bucketPrefix"] == "inference-platform-dev-models-"
    assert logs.inputs["bucketPrefix"] == "inference-platform-dev-logs-"


@pytest.mark.parametrize(
    ("blue", "green"),
    [("inference-platform-production-us-east-1a-blue", "inference-platform-production-us-east-1a-green"),
     ("inference-platform-production-us-433ba2", "inference-platform-production-us-2f644e")],
)  # fmt: skip
def test_long_prefixes_are_hashed_not_cut(run_components, blue, green):
    (b, _), (g, _) = _buckets(run_components, blue), _buckets(run_components, green)
    assert b.inputs["bucketPrefix"] != g.inputs["bucketPrefix"]
    assert len(b.inputs["bucketPrefix"]) <= 37  # pulumi-aws: bucket_prefix at most 37


def test_a_changed_prefix_never_replaces_a_bucket(run_components):
    for bucket in _buckets(run_components, "inference-platform-dev"):
        assert "bucketPrefix" in bucket.ignore_changes
