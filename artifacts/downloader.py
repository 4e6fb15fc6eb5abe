"""``download``: fetch a version into a directory that is marked complete only once all of it verified.

Layout of the target directory:
  <files of the manifest>    only ever verified content under these names
  .inferctl-download/        staging: ``<id>.part`` files and the journal of verified files; at the
                             end only the journal stays (the record the next run checks against)
  manifest.json, .complete   written last; ``.complete`` holds the manifest's SHA-256

A re-run after an interruption keeps every file already verified (the journal spares re-hashing
it), promotes fully fetched ``.part`` files that hash right, and fetches the rest from scratch:
s3transfer writes ranges in parallel, so a cut-off ``.part`` has holes, not a valid prefix.
Files that are not in the manifest are left alone; one that is, but holds other bytes, is replaced.

A re-run over a complete directory trusts neither the marker nor the sizes: every file must still
be the very file that hashed right (size, mtime, ctime, inode in the journal), else it is hashed
again and refetched if wrong. ``deep`` hashes every file whatever the journal says (media faults
leave a file's identity unchanged).
"""

from __future__ import annotations

import hashlib
import queue
import shutil
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Any, Literal

import boto3
from boto3.s3.transfer import ProgressCallbackInvoker, create_transfer_manager
from botocore.exceptions import ClientError
from s3transfer.subscribers import BaseSubscriber

from inference_platform.artifacts import remote
from inference_platform.artifacts.checksums import hash_file, hash_threads
from inference_platform.artifacts.errors import ArtifactError
from inference_platform.artifacts.localfs import Journal, exclusive, fsync_path, promote, write_atomic
from inference_platform.artifacts.manifest import COMPLETE_MARKER, MANIFEST_NAME, STAGING_DIR, Manifest, ManifestFile
from inference_platform.artifacts.progress import Progress
from inference_platform.artifacts.report import Mismatch, integrity_error
from inference_platform.artifacts.s3client import S3_ERRORS, describe_error, make_client
from inference_platform.artifacts.transfer import TransferSettings
from inference_platform.artifacts.uri import ArtifactLocation, parse_uri

_JOURNAL = "journal.json"


def download(
    uri: str,
    dest: Path,
    *,
    session: boto3.Session | None = None,
    progress: bool = False,
    transfer: TransferSettings | None = None,
    deep: bool = False,
    expected_manifest_sha256: str | None = None,
) -> Manifest:
    """Download and verify every file of ``uri`` into ``dest``; return the manifest.

    ``expected_manifest_sha256`` pins the version: any other manifest is refused before anything is
    written. ``deep`` re-hashes every local file instead of trusting the journal's file identities.
    Raises ``IntegrityError`` for another manifest than the pinned one or listing each file that is
    missing or does not match (the directory then stays unmarked), ``ArtifactError`` for S3 or
    file-system failures.
    """
    loc = parse_uri(uri)
    pin = remote.check_pin(expected_manifest_sha256)
    settings = transfer or TransferSettings()
    client = make_client(session, settings)
    manifest = remote.read_manifest(client, loc, pin)
    dest = Path(dest)
    try:
        dest.mkdir(parents=True, exist_ok=True)
        with exclusive(dest):
            if deep or not is_complete(dest, manifest):
                _download_into(client, loc, manifest, dest, settings, progress, deep=deep)
    except OSError as err:
        raise ArtifactError(f"cannot write into {dest}: {err.strerror} ({err.filename or dest})") from None
    return manifest


def is_complete(dest: Path, manifest: Manifest) -> bool:
    """True when ``dest`` is marked complete for exactly this manifest and every file is still the
    one that hashed right (its identity in the journal): a file rewritten since, even to the same
    size, or restored to its old mtime, fails this and is hashed again."""
    try:
        if (dest / COMPLETE_MARKER).read_text().strip() != manifest.sha256:
            return False
    except OSError:
        return False
    journal = Journal(dest / STAGING_DIR / _JOURNAL, manifest.sha256)
    return all(journal.is_verified(f.path, dest / f.path, f.sha256) for f in manifest.files)


def _download_into(
    client: Any,
    loc: ArtifactLocation,
    manifest: Manifest,
    dest: Path,
    settings: TransferSettings,
    progress: bool,
    *,
    deep: bool,
) -> None:
    # Unmark first: from here until the end the directory must not look servable.
    (dest / COMPLETE_MARKER).unlink(missing_ok=True)
    (dest / MANIFEST_NAME).unlink(missing_ok=True)
    staging = dest / STAGING_DIR
    staging.mkdir(exist_ok=True)
    journal = Journal(staging / _JOURNAL, manifest.sha256, trust=not deep)
    todo = _settle_local(dest, staging, manifest, journal)
    mismatches = _fetch(client, loc, dest, staging, todo, journal, settings, progress)
    if mismatches:
        order = [f.path for f in manifest.files]
        mismatches.sort(key=lambda m: order.index(m.path))
        raise integrity_error(loc.uri, len(manifest.files), tuple(mismatches))
    missing = [f.path for f in manifest.files if not journal.is_verified(f.path, dest / f.path, f.sha256)]
    if missing:
        raise ArtifactError(f"{dest / missing[0]} changed while the download ran: run the download again")
    for directory in {(dest / f.path).parent for f in manifest.files}:
        fsync_path(directory)
    write_atomic(dest / MANIFEST_NAME, manifest.to_json(), staging / "manifest.tmp")
    write_atomic(dest / COMPLETE_MARKER, f"{manifest.sha256}\n".encode(), staging / "marker.tmp")
    _clear_staging(staging)  # the journal stays: it is the record a re-run checks every file against


def _settle_local(dest: Path, staging: Path, manifest: Manifest, journal: Journal) -> list[ManifestFile]:
    """Keep what already verifies, drop what does not; return the files still to fetch."""
    candidates: list[tuple[ManifestFile, Path]] = []
    for entry in manifest.files:
        final = dest / entry.path
        if journal.is_verified(entry.path, final, entry.sha256):
            continue
        for path in (final, staging / _part_name(entry.path)):
            if path.is_file() and path.stat().st_size == entry.size:
                candidates.append((entry, path))
    with ThreadPoolExecutor(hash_threads()) as pool:
        digests = list(pool.map(lambda c: hash_file(c[1], None)[1], candidates))
    for (entry, path), sha256 in zip(candidates, digests, strict=True):
        final = dest / entry.path
        if sha256 == entry.sha256 and not journal.is_verified(entry.path, final, entry.sha256):
            if path != final:
                promote(path, final)
            journal.record(entry.path, final, sha256)
    todo = []
    for entry in manifest.files:
        final = dest / entry.path
        if not journal.is_verified(entry.path, final, entry.sha256):
            # A wrong file under a final name (older version, torn copy) goes now, not after the fetch.
            if final.is_file() or final.is_symlink():
                final.unlink()
            todo.append(entry)
    _clear_staging(staging)
    return todo


def _clear_staging(staging: Path) -> None:
    """Everything in staging but the journal."""
    for leftover in staging.iterdir():
        if leftover.is_dir():
            shutil.rmtree(leftover)
        elif leftover.name != _JOURNAL:
            leftover.unlink()


def _fetch(
    client: Any,
    loc: ArtifactLocation,
    dest: Path,
    staging: Path,
    todo: list[ManifestFile],
    journal: Journal,
    settings: TransferSettings,
    progress: bool,
) -> list[Mismatch]:
    """Download into staging on the transfer manager's threads; hash each file as it lands on ``hash_threads()``
    threads of its own, and promote here as each verifies.

    Several hashers: files land about together at the end of a download (the transfer manager fetches many at once,
    largest first), and one thread hashes at one core's SHA-256 rate (catalog/transfer_rates.py SHA256_PER_CORE),
    slower than 16 S3 connections deliver (planners/cold_start.py)."""
    finished: queue.Queue = queue.Queue()
    mismatches = []
    with (
        Progress("download", sum(f.size for f in todo), enabled=progress) as bar,
        ThreadPoolExecutor(hash_threads()) as hashers,
        create_transfer_manager(client, settings.transfer_config()) as manager,
    ):
        for entry in sorted(todo, key=lambda f: -f.size):
            subscribers = [ProgressCallbackInvoker(bar), _Finished(finished, entry)]
            manager.download(loc.bucket, loc.key(entry.path), str(staging / _part_name(entry.path)), None, subscribers)
        hashing: dict[Future, ManifestFile] = {}
        for _ in todo:
            entry, future = finished.get()
            try:
                future.result()
            except ClientError as err:
                if err.response.get("Error", {}).get("Code") not in ("404", "NoSuchKey"):
                    raise describe_error(err, bucket=loc.bucket, key=loc.key(entry.path)) from None
                mismatches.append(Mismatch(entry.path, "missing", f"{entry.size} bytes", loc.object_uri(entry.path)))
                continue
            except S3_ERRORS as err:
                raise describe_error(err, bucket=loc.bucket, key=loc.key(entry.path)) from None
            hashing[hashers.submit(hash_file, staging / _part_name(entry.path), None)] = entry
            for done in [f for f in hashing if f.done()]:
                mismatches += _settle_part(done.result(), hashing.pop(done), dest, staging, journal)
        for done in as_completed(hashing):
            mismatches += _settle_part(done.result(), hashing[done], dest, staging, journal)
    return mismatches


def _settle_part(
    hashed: tuple[int, str, str | None], entry: ManifestFile, dest: Path, staging: Path, journal: Journal
) -> list[Mismatch]:
    """Promote a landed file that hashed right (on the calling thread: the journal is not shared); drop one that
    did not and say why."""
    size, sha256, _ = hashed
    part = staging / _part_name(entry.path)
    if size != entry.size or sha256 != entry.sha256:
        part.unlink()
        problem: Literal["size", "sha256"] = "size" if size != entry.size else "sha256"
        expected, actual = (f"{entry.size} bytes", f"{size} bytes") if problem == "size" else (entry.sha256, sha256)
        return [Mismatch(entry.path, problem, expected, actual)]
    promote(part, dest / entry.path)
    journal.record(entry.path, dest / entry.path, sha256)
    return []


class _Finished(BaseSubscriber):
    """Hands each finished transfer (done or failed) to the thread that verifies it."""

    def __init__(self, finished: queue.Queue, entry: ManifestFile) -> None:
        self._finished = finished
        self._entry = entry

    def on_done(self, future: Any, **kwargs: Any) -> None:
        self._finished.put((self._entry, future))


def _part_name(rel: str) -> str:
    return hashlib.sha256(rel.encode()).hexdigest()[:32] + ".part"
