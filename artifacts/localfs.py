"""Crash-safe local writes for ``download``: atomic replace, fsync, a lock, and the resume journal."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections.abc import Iterator
from pathlib import Path

from inference_platform.artifacts.errors import ArtifactError


@contextlib.contextmanager
def exclusive(directory: Path) -> Iterator[None]:
    """Hold an advisory lock on ``directory`` itself (no lock file to leave behind)."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ArtifactError(f"another inferctl download is writing {directory}: wait for it to finish") from None
        yield
    finally:
        os.close(fd)


def fsync_path(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def promote(source: Path, target: Path) -> None:
    """Move a verified file to its final name: durable content first, then one atomic rename."""
    fsync_path(source)
    target.parent.mkdir(parents=True, exist_ok=True)
    os.replace(source, target)


def write_atomic(target: Path, data: bytes, scratch: Path) -> None:
    """Write ``data`` under ``target`` via ``scratch`` (same file system), never half-written."""
    with scratch.open("wb") as stream:
        stream.write(data)
        stream.flush()
        os.fsync(stream.fileno())
    os.replace(scratch, target)
    fsync_path(target.parent)


class Journal:
    """Files verified for one manifest, each with the identity of the file that hashed right.

    The identity is (size, mtime_ns, ctime_ns, inode, device): a write changes mtime and ctime, a
    replacement the inode, and ``os.utime`` can restore mtime but never ctime. A file whose identity
    still matches is the file that was hashed, so a re-run need not read it again; any change means
    it is hashed again. It survives a finished download (kept in the staging directory), so a re-run
    over a complete directory checks every file this way instead of trusting the marker and sizes.
    Silent media corruption keeps the identity: ``download(deep=True)`` hashes everything.
    """

    def __init__(self, path: Path, manifest_sha256: str, *, trust: bool = True) -> None:
        self._path = path
        self._manifest = manifest_sha256
        self._files: dict[str, list] = {}
        if not trust:
            return
        with contextlib.suppress(OSError, ValueError, TypeError, KeyError):
            data = json.loads(path.read_text())
            if data["manifest_sha256"] == manifest_sha256:
                self._files = dict(data["files"])

    def is_verified(self, rel: str, path: Path, sha256: str) -> bool:
        record = self._files.get(rel)
        if record is None:
            return False
        try:
            return record == [*_identity(path), sha256]
        except OSError:
            return False

    def record(self, rel: str, path: Path, sha256: str) -> None:
        self._files[rel] = [*_identity(path), sha256]
        scratch = self._path.with_name(self._path.name + ".tmp")
        scratch.write_text(json.dumps({"manifest_sha256": self._manifest, "files": self._files}))
        os.replace(scratch, self._path)


def _identity(path: Path) -> list[int]:
    st = path.stat()
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev]
