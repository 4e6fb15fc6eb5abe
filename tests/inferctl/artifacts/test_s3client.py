"""The S3 client honours the AWS configuration chain; every S3 failure becomes one actionable line."""

from __future__ import annotations

import boto3
import pytest
from botocore.exceptions import ClientError, EndpointConnectionError, NoCredentialsError

from inference_platform.artifacts.s3client import describe_error, make_client
from inference_platform.artifacts.transfer import DEFAULT_MAX_ATTEMPTS, TransferSettings


def test_defaults_standard_retries_with_more_attempts() -> None:
    client = make_client(boto3.Session())
    assert client.meta.config.retries == {"mode": "standard", "total_max_attempts": DEFAULT_MAX_ATTEMPTS}
    assert client.meta.config.s3 in (None, {})


def test_environment_retry_settings_win_over_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "4")
    monkeypatch.setenv("AWS_RETRY_MODE", "adaptive")
    assert make_client(boto3.Session()).meta.config.retries == {"mode": "adaptive", "total_max_attempts": 4}
    explicit = make_client(boto3.Session(), TransferSettings(max_attempts=2))
    assert explicit.meta.config.retries["total_max_attempts"] == 2


def test_profile_and_endpoint_from_the_config_file(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    config = tmp_path / "config"
    config.write_text("[profile minio]\nregion = eu-west-1\nendpoint_url = http://127.0.0.1:9\nmax_attempts = 6\n")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(config))
    monkeypatch.setenv("AWS_PROFILE", "minio")
    monkeypatch.delenv("AWS_REGION")
    client = make_client()
    assert client.meta.region_name == "eu-west-1"
    assert client.meta.endpoint_url == "http://127.0.0.1:9"
    assert client.meta.config.s3 == {"addressing_style": "path"}
    assert client.meta.config.retries["total_max_attempts"] == 6


def _client_error(op: str, code: str, status: int, message: str = "", headers=None, attempts: int = 0, **error):
    response = {
        "Error": {"Code": code, "Message": message, **error},
        "ResponseMetadata": {"HTTPStatusCode": status, "HTTPHeaders": headers or {}, "RetryAttempts": attempts},
    }
    return ClientError(response, op)


@pytest.mark.parametrize(
    ("err", "expected"),
    [
        (_client_error("GetObject", "NoSuchBucket", 404), "bucket 'bkt' does not exist (NoSuchBucket)"),
        (
            _client_error("GetObject", "AccessDenied", 403, "Access Denied"),
            "access denied: s3:GetObject on arn:aws:s3:::bkt/m/1/a.bin (AccessDenied: Access Denied)",
        ),
        (_client_error("HeadObject", "403", 403), "a missing object also answers 403 without s3:ListBucket"),
        (_client_error("UploadPart", "AccessDenied", 403), "access denied: s3:PutObject on arn:aws:s3:::bkt/m/1/a.bin"),
        (
            _client_error("GetObject", "PermanentRedirect", 301, headers={"x-amz-bucket-region": "eu-west-1"}),
            "bucket 'bkt' is in region eu-west-1 (PermanentRedirect on GetObject): set AWS_REGION=eu-west-1",
        ),
        (
            _client_error("GetObject", "AuthorizationHeaderMalformed", 400, Region="ap-south-1"),
            "set AWS_REGION=ap-south-1",
        ),
        (_client_error("HeadObject", "301", 301), "is in another region"),
        (
            _client_error("GetObject", "SlowDown", 503, attempts=9),
            "S3 kept failing GetObject on s3://bkt/m/1/a.bin (SlowDown, HTTP 503) after 10 attempts",
        ),
        (_client_error("PutObject", "InternalError", 500, attempts=2), "after 3 attempts"),
        (_client_error("GetObject", "ExpiredToken", 400), "AWS rejected the credentials (ExpiredToken)"),
        (_client_error("GetObject", "NoSuchKey", 404), "object s3://bkt/m/1/a.bin does not exist"),
        (
            _client_error("GetObject", "InvalidRange", 416, "bad"),
            "GetObject on s3://bkt/m/1/a.bin failed (InvalidRange: bad",
        ),
        (NoCredentialsError(), "no usable AWS credentials"),
        (EndpointConnectionError(endpoint_url="http://127.0.0.1:9"), "cannot reach S3 at http://127.0.0.1:9"),
    ],
)
def test_errors_read_as_one_line(err: Exception, expected: str) -> None:
    message = str(describe_error(err, bucket="bkt", key="m/1/a.bin"))
    assert expected in message
    assert "\n" not in message
