"""``verify``: check every object of a version against its manifest without writing anything."""

from __future__ import annotations

import dataclasses
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import boto3
from boto3.s3.transfer import create_transfer_manager
from botocore.exceptions import ClientError

from inference_platform.artifacts import remote
from inference_platform.artifacts.checksums import HashingSink
from inference_platform.artifacts.manifest import ManifestFile
from inference_platform.artifacts.progress import Progress
from inference_platform.artifacts.report import Mismatch, VerifyReport
from inference_platform.artifacts.s3client import S3_ERRORS, describe_error, make_client
from inference_platform.artifacts.transfer import MIB, TransferSettings
from inference_platform.artifacts.uri import ArtifactLocation, parse_uri

# Hashing a stream needs its ranges in order, so s3transfer buffers early arrivals in memory:
# smaller ranges bound that buffer (max_in_memory_download_chunks x range size).
_HASH_RANGE = 16 * MIB


def verify(
    uri: str,
    *,
    session: boto3.Session | None = None,
    deep: bool = False,
    progress: bool = False,
    transfer: TransferSettings | None = None,
    expected_manifest_sha256: str | None = None,
) -> VerifyReport:
    """Check size and SHA-256 of every manifest file, and that nothing else lies under the version
    prefix. S3's stored SHA-256 settles a file when it can; otherwise (or with ``deep``) the object is
    streamed and hashed. Mismatches and unlisted objects are returned in the report, not raised; a
    missing manifest, one other than ``expected_manifest_sha256`` (``IntegrityError``) or an S3
    failure raises ``ArtifactError``."""
    loc = parse_uri(uri)
    pin = remote.check_pin(expected_manifest_sha256)
    settings = transfer or TransferSettings()
    client = make_client(session, settings)
    manifest = remote.read_manifest(client, loc, pin)
    unlisted = tuple(
        Mismatch(rel, "unlisted", "no object (not in the manifest)", loc.object_uri(rel))
        for rel in remote.unlisted_keys(client, loc, manifest)
    )
    with ThreadPoolExecutor(settings.max_concurrency) as pool:
        heads = list(pool.map(lambda f: remote.head_object(client, loc, f.path), manifest.files))
    mismatches: dict[str, Mismatch] = {}
    to_hash: list[ManifestFile] = []
    by_checksum = 0
    for entry, head in zip(manifest.files, heads, strict=True):
        verdict = remote.judge(entry, head, loc.object_uri(entry.path))
        if isinstance(verdict, Mismatch):
            mismatches[entry.path] = verdict
        elif verdict is True and not deep:
            by_checksum += 1
        else:
            to_hash.append(entry)
    for entry, mismatch in _hash_remote(client, loc, to_hash, settings, progress):
        if mismatch is not None:
            mismatches[entry.path] = mismatch
    ordered = tuple(mismatches[f.path] for f in manifest.files if f.path in mismatches)
    return VerifyReport(
        uri=loc.uri,
        manifest=manifest,
        mismatches=ordered,
        unlisted=unlisted,
        by_s3_checksum=by_checksum,
        by_download=len(to_hash),
    )


def _hash_remote(
    client: Any, loc: ArtifactLocation, entries: list[ManifestFile], settings: TransferSettings, progress: bool
) -> list[tuple[ManifestFile, Mismatch | None]]:
    if not entries:
        return []
    config = dataclasses.replace(settings, part_size=min(settings.part_size, _HASH_RANGE)).transfer_config()
    results: list[tuple[ManifestFile, Mismatch | None]] = []
    with (
        Progress("verify", sum(e.size for e in entries), enabled=progress) as bar,
        create_transfer_manager(client, config) as manager,
    ):
        sinks = [(entry, HashingSink(bar)) for entry in entries]
        # s3transfer writes to any object with write() and seekable(); its stubs ask for an IO.
        futures = [manager.download(loc.bucket, loc.key(e.path), sink) for e, sink in sinks]  # type: ignore[arg-type]  # see above
        for (entry, sink), future in zip(sinks, futures, strict=True):
            try:
                future.result()
            except ClientError as err:
                if err.response.get("Error", {}).get("Code") in ("404", "NoSuchKey"):
                    results.append(
                        (entry, Mismatch(entry.path, "missing", f"{entry.size} bytes", loc.object_uri(entry.path)))
                    )
                    continue
                raise describe_error(err, bucket=loc.bucket, key=loc.key(entry.path)) from None
            except S3_ERRORS as err:
                raise describe_error(err, bucket=loc.bucket, key=loc.key(entry.path)) from None
            if sink.size != entry.size:
                results.append((entry, Mismatch(entry.path, "size", f"{entry.size} bytes", f"{sink.size} bytes")))
            elif sink.hexdigest() != entry.sha256:
                results.append((entry, Mismatch(entry.path, "sha256", entry.sha256, sink.hexdigest())))
            else:
                results.append((entry, None))
    return results
