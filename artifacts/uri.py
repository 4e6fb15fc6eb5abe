"""``s3://bucket/prefix/`` locations of a model version and the keys of the objects under it."""

from __future__ import annotations

import re
from dataclasses import dataclass

from inference_platform.artifacts.errors import InvalidInputError
from inference_platform.artifacts.manifest import MANIFEST_NAME

# S3's rules for bucket names (no dotted-IP names, 3..63 characters); see "Bucket naming rules".
_BUCKET_RE = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")
_IP_RE = re.compile(r"^\d+\.\d+\.\d+\.\d+$")


@dataclass(frozen=True)
class ArtifactLocation:
    """A model version: every object lives under ``prefix`` (which ends with ``/``) in ``bucket``."""

    bucket: str
    prefix: str

    @property
    def uri(self) -> str:
        return f"s3://{self.bucket}/{self.prefix}"

    @property
    def manifest_key(self) -> str:
        return self.prefix + MANIFEST_NAME

    def key(self, relative_path: str) -> str:
        return self.prefix + relative_path

    def object_uri(self, relative_path: str) -> str:
        return f"s3://{self.bucket}/{self.key(relative_path)}"


def parse_uri(uri: str) -> ArtifactLocation:
    """Parse ``s3://bucket/models/<name>/<version>/``; a missing trailing slash is added."""
    problem = None
    bucket, _, prefix = uri.removeprefix("s3://").partition("/")
    if not uri.startswith("s3://"):
        problem = "must start with s3://"
    elif not _BUCKET_RE.match(bucket) or _IP_RE.match(bucket) or ".." in bucket:
        problem = f"bucket name {bucket!r} is not a valid S3 bucket name"
    elif not prefix.strip("/"):
        problem = "needs a key prefix for the version, e.g. s3://bucket/models/<name>/<version>/"
    elif any(part in ("", ".", "..") for part in prefix.rstrip("/").split("/")):
        problem = "key prefix must not contain empty, '.' or '..' segments"
    if problem:
        raise InvalidInputError(f"artifact URI {uri!r} {problem}")
    return ArtifactLocation(bucket=bucket, prefix=prefix.rstrip("/") + "/")
