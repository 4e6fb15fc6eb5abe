"""Reading a version's manifest and judging stored objects by what S3 already knows about them."""

from __future__ import annotations

import base64
import re
from typing import Any

from botocore.exceptions import ClientError

from inference_platform.artifacts.checksums import b64_to_hex
from inference_platform.artifacts.errors import ArtifactError, IntegrityError, InvalidInputError
from inference_platform.artifacts.manifest import MANIFEST_NAME, Manifest, ManifestFile
from inference_platform.artifacts.report import Mismatch
from inference_platform.artifacts.s3client import S3_ERRORS, describe_error
from inference_platform.artifacts.uri import ArtifactLocation

_NOT_FOUND = {"404", "NoSuchKey", "NotFound"}
_SHA256_RE = re.compile(r"^[0-9a-f]{64}$")


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


def read_manifest(client: Any, loc: ArtifactLocation, expected_sha256: str | None = None) -> Manifest:
    """The version's manifest; with ``expected_sha256`` (a pin) any other manifest is an
    ``IntegrityError``: a manifest swapped together with its files, or one with an entry removed, is
    self-consistent, and only a pin kept outside the bucket tells it from the published one."""
    data = read_manifest_bytes(client, loc)
    if data is None:
        raise ArtifactError(
            f"no manifest at s3://{loc.bucket}/{loc.manifest_key}: not a published version "
            "(wrong URI, or its upload never finished)"
        )
    manifest = Manifest.from_json(data, source=f"s3://{loc.bucket}/{loc.manifest_key}")
    if expected_sha256 is not None and manifest.sha256 != expected_sha256:
        raise IntegrityError(
            f"manifest s3://{loc.bucket}/{loc.manifest_key} has sha256 {manifest.sha256}, not the pinned "
            f"{expected_sha256}: refusing it (replaced or edited after publication, or the pin is stale)"
        )
    return manifest


def check_pin(expected_sha256: str | None) -> str | None:
    """The pin in canonical form (lower-case hex), or ``InvalidInputError``."""
    if expected_sha256 is None:
        return None
    pin = expected_sha256.strip().lower()
    if not _SHA256_RE.match(pin):
        raise InvalidInputError(f"manifest sha256 pin {expected_sha256!r} is not 64 hex digits")
    return pin


def unlisted_keys(client: Any, loc: ArtifactLocation, manifest: Manifest) -> list[str]:
    """Objects under the version prefix that the manifest does not list (nor is the manifest):
    something wrote into a published version, or a replaced version left files behind."""
    listed = {f.path for f in manifest.files} | {MANIFEST_NAME}
    extra = []
    try:
        for page in client.get_paginator("list_objects_v2").paginate(Bucket=loc.bucket, Prefix=loc.prefix):
            extra += [c["Key"][len(loc.prefix) :] for c in page.get("Contents", [])]
    except S3_ERRORS as err:
        raise describe_error(err, bucket=loc.bucket) from None  # ListBucket is granted on the bucket ARN
    return sorted(rel for rel in extra if rel not in listed)


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
