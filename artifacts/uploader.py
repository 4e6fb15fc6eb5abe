"""``upload``: publish a directory as a version; the manifest goes last, so until it lands the
version does not exist and a reader never sees half of it."""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import boto3
from boto3.s3.transfer import ProgressCallbackInvoker, create_transfer_manager
from botocore.exceptions import ClientError

from inference_platform.artifacts import remote
from inference_platform.artifacts.checksums import hash_file, hash_threads
from inference_platform.artifacts.errors import ArtifactError, IntegrityError
from inference_platform.artifacts.manifest import Manifest, ManifestFile, utc_now
from inference_platform.artifacts.metadata import ModelMetadata
from inference_platform.artifacts.progress import Progress
from inference_platform.artifacts.report import Mismatch
from inference_platform.artifacts.s3client import S3_ERRORS, describe_error, make_client
from inference_platform.artifacts.transfer import TransferSettings
from inference_platform.artifacts.tree import list_files
from inference_platform.artifacts.uri import ArtifactLocation, parse_uri

# S3 computes the same SHA-256 from the bytes it receives (per part for multipart uploads).
_EXTRA_ARGS = {"ChecksumAlgorithm": "SHA256"}


def upload(
    src_dir: Path,
    uri: str,
    metadata: ModelMetadata,
    *,
    force: bool = False,
    session: boto3.Session | None = None,
    progress: bool = False,
    transfer: TransferSettings | None = None,
) -> Manifest:
    """Upload every file under ``src_dir`` to ``uri`` and then its manifest; return the manifest.

    An existing version (manifest present) is refused unless ``force``; with ``force`` its manifest
    is deleted before any data is replaced, so the version is absent, never mixed, until done.
    """
    loc = parse_uri(uri)
    settings = transfer or TransferSettings()
    files = list_files(Path(src_dir))
    client = make_client(session, settings)
    replacing = remote.read_manifest_bytes(client, loc) is not None
    if replacing and not force:
        raise ArtifactError(f"{loc.uri} is already a published version (it has a manifest): pass --force to replace it")
    entries = _hash_and_upload(client, loc, files, settings, progress, replacing)
    _check_stored(client, loc, entries, settings)
    manifest = Manifest(files=tuple(entries), metadata=metadata, created_at=utc_now())
    # Conditional write: a concurrent publisher of the same version loses instead of mixing files.
    condition = {} if force else {"IfNoneMatch": "*"}
    try:
        client.put_object(
            Bucket=loc.bucket,
            Key=loc.manifest_key,
            Body=manifest.to_json(),
            ContentType="application/json",
            **_EXTRA_ARGS,
            **condition,
        )
    except ClientError as err:
        if err.response.get("Error", {}).get("Code") in ("PreconditionFailed", "ConditionalRequestConflict"):
            raise ArtifactError(
                f"{loc.uri} was published by someone else meanwhile: pass --force to replace it"
            ) from None
        raise describe_error(err, bucket=loc.bucket, key=loc.manifest_key) from None
    except S3_ERRORS as err:
        raise describe_error(err, bucket=loc.bucket, key=loc.manifest_key) from None
    return manifest


def _hash_and_upload(
    client: Any,
    loc: ArtifactLocation,
    files: list[tuple[str, Path]],
    settings: TransferSettings,
    progress: bool,
    replacing: bool,
) -> list[ManifestFile]:
    """Upload every file while a few threads hash the same files; the manifest needs the hashes
    only at the end, so hashing costs no wall time where it keeps pace with the network."""
    try:
        sizes = {rel: path.stat().st_size for rel, path in files}
    except OSError as err:
        raise ArtifactError(f"cannot read {err.filename}: {err.strerror}") from None
    # Largest first: the long transfers start early and small files fill in at the end.
    ordered = sorted(files, key=lambda item: -sizes[item[0]])
    with (
        Progress("upload", sum(sizes.values()), enabled=progress) as bar,
        ThreadPoolExecutor(hash_threads()) as hashers,
        create_transfer_manager(client, settings.transfer_config()) as manager,
    ):
        try:
            hashes = [hashers.submit(hash_file, path, settings.upload_part_size(sizes[rel])) for rel, path in ordered]
            if replacing:
                _delete_manifest(client, loc)
            uploads = [
                manager.upload(str(path), loc.bucket, loc.key(rel), dict(_EXTRA_ARGS), [ProgressCallbackInvoker(bar)])
                for rel, path in ordered
            ]
            for (rel, path), upload_future in zip(ordered, uploads, strict=True):
                _wait_upload(upload_future, loc, rel, path)
            return [_entry(rel, path, sizes[rel], done) for (rel, path), done in zip(ordered, hashes, strict=True)]
        except BaseException:
            # Queued hashes of files that will never be published would otherwise run to the end.
            hashers.shutdown(wait=False, cancel_futures=True)
            raise


def _wait_upload(future: Any, loc: ArtifactLocation, rel: str, path: Path) -> None:
    try:
        future.result()
    except S3_ERRORS as err:
        raise describe_error(err, bucket=loc.bucket, key=loc.key(rel)) from None
    except OSError as err:
        raise ArtifactError(f"cannot read {path}: {err.strerror}") from None


def _entry(rel: str, path: Path, stat_size: int, hashed: Future) -> ManifestFile:
    try:
        size, sha256, composite = hashed.result()
    except OSError as err:
        raise ArtifactError(f"cannot read {path}: {err.strerror}") from None
    if size != stat_size:
        raise ArtifactError(f"{path} changed size while it was read: stop writing to it and retry")
    return ManifestFile(rel, size, sha256, composite)


def _check_stored(client: Any, loc: ArtifactLocation, entries: list[ManifestFile], settings: TransferSettings) -> None:
    """Compare what S3 stored with what was hashed: a file rewritten between the two reads is
    caught here, before a manifest could vouch for bytes nobody hashed. (A store that keeps no
    SHA-256 is checked on size only.)"""
    with ThreadPoolExecutor(settings.max_concurrency) as pool:
        heads = list(pool.map(lambda e: remote.head_object(client, loc, e.path), entries))
    bad = tuple(
        verdict
        for entry, head in zip(entries, heads, strict=True)
        if isinstance(verdict := remote.judge(entry, head, loc.object_uri(entry.path)), Mismatch)
    )
    if bad:
        raise IntegrityError(
            f"{len(bad)} of {len(entries)} files stored under {loc.uri} differ from what was hashed "
            f"(did a file change while it was sent?); no manifest written: {bad[0]}",
            bad,
        )


def _delete_manifest(client: Any, loc: ArtifactLocation) -> None:
    try:
        client.delete_object(Bucket=loc.bucket, Key=loc.manifest_key)
    except S3_ERRORS as err:
        raise describe_error(err, bucket=loc.bucket, key=loc.manifest_key) from None
