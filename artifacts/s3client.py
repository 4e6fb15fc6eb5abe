"""The S3 client (plain boto3 configuration chain) and the one-line meaning of its failures."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast
from urllib.parse import urlsplit

import boto3
from botocore.config import Config
from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    ConnectionClosedError,
    ConnectTimeoutError,
    CredentialRetrievalError,
    EndpointConnectionError,
    NoCredentialsError,
    PartialCredentialsError,
    ProfileNotFound,
    ReadTimeoutError,
)
from s3transfer.exceptions import RetriesExceededError

from inference_platform.artifacts.errors import ArtifactError
from inference_platform.artifacts.transfer import DEFAULT_MAX_ATTEMPTS, TransferSettings

if TYPE_CHECKING:
    # botocore-stubs' shapes of Config's retries and s3 (they exist only in the stubs).
    from botocore.config import _RetryDict, _S3Dict

S3_ERRORS = (ClientError, BotoCoreError, RetriesExceededError)
"""What an S3 call can raise that ``describe_error`` turns into one line."""

_AWS_HOST_SUFFIXES = (".amazonaws.com", ".amazonaws.com.cn", ".api.aws")
_IAM_ACTIONS = {
    "HeadObject": "s3:GetObject",
    "GetObject": "s3:GetObject",
    "PutObject": "s3:PutObject",
    "CreateMultipartUpload": "s3:PutObject",
    "UploadPart": "s3:PutObject",
    "CompleteMultipartUpload": "s3:PutObject",
    "AbortMultipartUpload": "s3:AbortMultipartUpload",
    "DeleteObject": "s3:DeleteObject",
    "ListObjectsV2": "s3:ListBucket",
}
_DENIED = {"AccessDenied", "403", "Forbidden", "AllAccessDisabled"}
_CREDENTIALS = {"InvalidAccessKeyId", "SignatureDoesNotMatch", "ExpiredToken", "InvalidToken", "TokenRefreshRequired"}
_REGION = {"PermanentRedirect", "301", "AuthorizationHeaderMalformed", "IllegalLocationConstraintException"}
_TRANSIENT = {"SlowDown", "Throttling", "ThrottlingException", "RequestLimitExceeded", "TooManyRequests",
              "ServiceUnavailable", "InternalError", "RequestTimeout", "503", "500", "502", "504"}  # fmt: skip


def make_client(session: boto3.Session | None = None, settings: TransferSettings | None = None):
    """An S3 client from the standard chain (profile, AWS_REGION, AWS_ENDPOINT_URL, credentials).

    Retries use botocore's standard/adaptive modes with backoff. A first client reveals what the
    chain resolved (retry mode, max attempts, endpoint); the second keeps it and adds what we need.
    """
    session = session or boto3.Session()
    settings = settings or TransferSettings()
    # Enough pooled connections for every transfer thread plus the checksum HEAD workers.
    base: dict[str, Any] = {
        "max_pool_connections": 2 * settings.max_concurrency + 2,
        "user_agent_extra": "inferctl-artifacts",
    }
    probe = session.client("s3", config=Config(**base))
    resolved = probe.meta.config.retries or {}  # type: ignore[attr-defined]  # set from its options; the stubs omit them
    retries: _RetryDict = {
        "mode": resolved.get("mode") or "standard",
        "total_max_attempts": settings.max_attempts or resolved.get("total_max_attempts") or DEFAULT_MAX_ATTEMPTS,
    }
    host = urlsplit(probe.meta.endpoint_url).hostname or ""
    # S3-compatible stores and emulators behind AWS_ENDPOINT_URL rarely serve bucket subdomains.
    s3: _S3Dict = {} if host.endswith(_AWS_HOST_SUFFIXES) else {"addressing_style": "path"}
    return session.client("s3", config=Config(**base, retries=retries, s3=s3))


def describe_error(err: Exception, *, bucket: str, key: str | None = None) -> ArtifactError:
    """One line naming what failed, on which resource, and what to do about it."""
    target = f"s3://{bucket}/{key}" if key is not None else f"s3://{bucket}"
    if isinstance(err, ClientError):
        return _client_error(err, bucket, key, target)
    if isinstance(err, NoCredentialsError | PartialCredentialsError | CredentialRetrievalError):
        return ArtifactError(
            f"no usable AWS credentials ({err}): set AWS_PROFILE, AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY "
            "or run with a role"
        )
    if isinstance(err, ProfileNotFound):
        return ArtifactError(f"{err}: check AWS_PROFILE and ~/.aws/config")
    if isinstance(err, EndpointConnectionError):
        return ArtifactError(
            f"cannot reach S3 at {err.kwargs.get('endpoint_url')} for {target}: "
            "check AWS_ENDPOINT_URL, AWS_REGION and the network"
        )
    if isinstance(err, ConnectTimeoutError | ReadTimeoutError | ConnectionClosedError | RetriesExceededError):
        return ArtifactError(f"transfer of {target} kept failing after retries: {err}")
    return ArtifactError(f"S3 request for {target} failed: {err}")


def _client_error(err: ClientError, bucket: str, key: str | None, target: str) -> ArtifactError:
    error = err.response.get("Error", {})
    meta = err.response.get("ResponseMetadata", {})
    code = str(error.get("Code", ""))
    status = meta.get("HTTPStatusCode")
    headers = meta.get("HTTPHeaders", {})
    op = err.operation_name
    detail = f"{code}: {error['Message']}" if error.get("Message") and error["Message"] != code else code
    if code == "NoSuchBucket":
        return ArtifactError(
            f"bucket {bucket!r} does not exist (NoSuchBucket): check the bucket name, account and endpoint"
        )
    # S3 adds Region to a redirect's error; botocore's stubs list Code and Message only.
    region = headers.get("x-amz-bucket-region") or cast("str | None", error.get("Region"))
    if code in _REGION or (region and status in (301, 400)):
        where = f"region {region}" if region else "another region"
        return ArtifactError(
            f"bucket {bucket!r} is in {where} ({code} on {op}): set AWS_REGION{'=' + region if region else ''}"
        )
    if code in _DENIED:
        action = _IAM_ACTIONS.get(op, f"s3:{op}")
        resource = f"arn:aws:s3:::{bucket}/{key}" if key is not None else f"arn:aws:s3:::{bucket}"
        hint = " (a missing object also answers 403 without s3:ListBucket)" if op == "HeadObject" else ""
        return ArtifactError(f"access denied: {action} on {resource} ({detail}){hint}")
    if code in _CREDENTIALS:
        return ArtifactError(f"AWS rejected the credentials ({detail}) on {op} {target}: refresh or fix them")
    if code in _TRANSIENT or (status or 0) >= 500 or status == 429:
        attempts = meta.get("RetryAttempts", 0) + 1
        reason = f"{code}, HTTP {status}" if code and code != str(status) else f"HTTP {status}"
        return ArtifactError(
            f"S3 kept failing {op} on {target} ({reason}) after {attempts} attempts: "
            "try again later or raise AWS_MAX_ATTEMPTS"
        )
    if code in ("404", "NoSuchKey", "NotFound"):
        return ArtifactError(f"object {target} does not exist")
    return ArtifactError(f"{op} on {target} failed ({detail}, HTTP {status})")
