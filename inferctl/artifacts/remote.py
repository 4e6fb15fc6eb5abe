"""Reading a version's manifest and judging stored objects by what S3 already knows about them."""

from __future__ import annotations

import base64
from typing import Any

from botocore.exceptions import ClientError

from inferctl.artifacts.checksums import b64_to_hex
from inferctl.artifacts.errors import ArtifactError
from inferctl.artifacts.manifest import Manifest, ManifestFile
from inferctl.artifacts.report import Mismatch
from inferctl.artifacts.s3client import S3_ERRORS, describe_error
from inferctl.artifacts.uri import ArtifactLocation

_NOT_FOUND = {"404", "NoSuchKey", "NotFound"}


def read_manifest_bytes(client: Any, loc: ArtifactLocation) -> bytes | None:
    """The stored manifest, or None when the version has none. GET (not HEAD) so that a missing
    bucket answers NoSuchBucket instead of a bare 404 indistinguishable from a missing key."""
    try:
        response = client.get_object(Bucket=loc.bucket, Key=loc.manifest_key)
        with response["Body"] as body:
            return body.read()
    except ClientError as err:
        if err.response.get("Error", {}).get("Code") in _NOT_FOUND:
            return None
        raise describe_error(err, bucket=loc.bucket, key=loc.manifest_key) from None
    except S3_ERRORS as err:
        raise describe_error(err, bucket=loc.bucket, key=loc.manifest_key) from None


def read_manifest(client: Any, loc: ArtifactLocation) -> Manifest:
    data = read_manifest_bytes(client, loc)
    if data is None:
        raise ArtifactError(
            f"no manifest at s3://{loc.bucket}/{loc.manifest_key}: not a published version "
            "(wrong URI, or its upload never finished)"
        )
    return Manifest.from_json(data, source=f"s3://{loc.bucket}/{loc.manifest_key}")


def head_object(client: Any, loc: ArtifactLocation, path: str) -> dict[str, Any] | None:
    """HeadObject with stored checksums, or None when the object does not exist."""
    key = loc.key(path)
    try:
        return client.head_object(Bucket=loc.bucket, Key=key, ChecksumMode="ENABLED")
    except ClientError as err:
        if err.response.get("Error", {}).get("Code") in _NOT_FOUND:
            return None
        raise describe_error(err, bucket=loc.bucket, key=key) from None
    except S3_ERRORS as err:
        raise describe_error(err, bucket=loc.bucket, key=key) from None


def judge(entry: ManifestFile, head: dict[str, Any] | None, uri: str) -> Mismatch | bool | None:
    """A ``Mismatch``, True when S3's stored checksum proves the object, or None when only reading
    the data can tell (no SHA-256 stored, or a composite from parts of another size)."""
    if head is None:
        return Mismatch(entry.path, "missing", f"{entry.size} bytes", uri)
    if head["ContentLength"] != entry.size:
        return Mismatch(entry.path, "size", f"{entry.size} bytes", f"{head['ContentLength']} bytes")
    stored = head.get("ChecksumSHA256")
    if not stored:
        return None
    # AWS marks composites with ChecksumType and a -N suffix; some stores (moto's HEAD) drop both,
    # but a multipart object still shows the -N suffix on its ETag.
    is_composite = (
        head.get("ChecksumType") == "COMPOSITE"
        or "-" in stored
        or (head.get("ChecksumType") is None and "-" in head.get("ETag", ""))
    )
    digest = stored.split("-", 1)[0]
    if is_composite:
        return True if entry.composite_sha256 and digest == entry.composite_sha256.split("-", 1)[0] else None
    if digest == base64.b64encode(bytes.fromhex(entry.sha256)).decode():
        return True
    try:
        actual = b64_to_hex(digest)
    except ValueError:
        return None
    return Mismatch(entry.path, "sha256", entry.sha256, actual) if len(actual) == 64 else None
