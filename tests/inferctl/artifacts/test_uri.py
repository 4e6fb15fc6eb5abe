"""Version URIs: s3://bucket/prefix/ with a trailing slash, refusing what S3 or a path cannot hold."""

from __future__ import annotations

import pytest

from inference_platform.artifacts.errors import InvalidInputError
from inference_platform.artifacts.uri import parse_uri


@pytest.mark.parametrize(
    ("uri", "bucket", "prefix"),
    [
        ("s3://models/models/llama/1/", "models", "models/llama/1/"),
        ("s3://models/models/llama/1", "models", "models/llama/1/"),
        ("s3://my.bucket-01/a/", "my.bucket-01", "a/"),
    ],
)
def test_parses_bucket_and_prefix(uri: str, bucket: str, prefix: str) -> None:
    loc = parse_uri(uri)
    assert (loc.bucket, loc.prefix) == (bucket, prefix)
    assert loc.manifest_key == prefix + "manifest.json"
    assert loc.object_uri("engine/rank0.engine") == f"s3://{bucket}/{prefix}engine/rank0.engine"


@pytest.mark.parametrize(
    ("uri", "reason"),
    [
        ("https://models/llama/1/", "must start with s3://"),
        ("s3://Models/llama/1/", "not a valid S3 bucket name"),
        ("s3://ab/llama/1/", "not a valid S3 bucket name"),
        ("s3://192.168.1.1/llama/1/", "not a valid S3 bucket name"),
        ("s3://models", "needs a key prefix"),
        ("s3://models/", "needs a key prefix"),
        ("s3://models/llama//1/", "empty, '.' or '..'"),
        ("s3://models/llama/../1/", "empty, '.' or '..'"),
    ],
)
def test_rejects_bad_uris_with_the_reason(uri: str, reason: str) -> None:
    with pytest.raises(InvalidInputError, match=reason) as caught:
        parse_uri(uri)
    assert caught.value.exit_code == 2
    assert uri in str(caught.value)
