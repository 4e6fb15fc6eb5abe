"""SHA-256 of local files and streams, and the checksum values S3 stores for them.

S3 keeps a full-object SHA-256 for single-part uploads but only a *composite* for multipart ones:
base64(SHA-256(part digest 1 || ... || part digest N)) followed by ``-N``. A composite says nothing
about the whole-file SHA-256, so the uploader computes it from the same bytes (knowing the part
size) and the manifest records it; ``verify`` then compares like with like.
"""

from __future__ import annotations

import base64
import hashlib
import os
import threading
from collections.abc import Callable
from pathlib import Path

from inference_platform.catalog.transfer_rates import HASH_THREADS

_BLOCK = 8 * 1024 * 1024  # large reads keep hashlib (which drops the GIL) busy between syscalls


def hash_threads() -> int:
    """How many files to hash at once: ``HASH_THREADS``, no more than the CPUs this process may run on."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cpus = os.cpu_count() or 1
    return max(1, min(HASH_THREADS, cpus))


def hash_file(
    path: Path, part_size: int | None, on_bytes: Callable[[int], None] | None = None
) -> tuple[int, str, str | None]:
    """(size, hex SHA-256, composite checksum for ``part_size`` parts or None) in one read pass."""
    whole = hashlib.sha256()
    part_digests: list[bytes] = []
    part = hashlib.sha256()
    in_part = 0
    size = 0
    with path.open("rb") as stream:
        while True:
            want = _BLOCK if part_size is None else min(_BLOCK, part_size - in_part)
            block = stream.read(want)
            if not block:
                break
            whole.update(block)
            size += len(block)
            if on_bytes is not None:
                on_bytes(len(block))
            if part_size is not None:
                part.update(block)
                in_part += len(block)
                if in_part == part_size:
                    part_digests.append(part.digest())
                    part, in_part = hashlib.sha256(), 0
    if part_size is None:
        return size, whole.hexdigest(), None
    if in_part or not part_digests:
        part_digests.append(part.digest())
    return size, whole.hexdigest(), composite(part_digests)


def composite(part_digests: list[bytes]) -> str:
    combined = hashlib.sha256(b"".join(part_digests)).digest()
    return f"{base64.b64encode(combined).decode()}-{len(part_digests)}"


def b64_to_hex(value: str) -> str:
    return base64.b64decode(value.split("-", 1)[0]).hex()


class HashingSink:
    """A write-only, non-seekable target for s3transfer: it hashes bytes as they arrive in order.

    Being non-seekable makes s3transfer still fetch ranges in parallel but hand them over in
    order, so a remote object can be hashed without touching the disk.
    """

    def __init__(self, on_bytes: Callable[[int], None] | None = None) -> None:
        self._sha256 = hashlib.sha256()
        self._lock = threading.Lock()
        self._on_bytes = on_bytes
        self.size = 0

    def write(self, data: bytes) -> int:
        with self._lock:
            self._sha256.update(data)
            self.size += len(data)
        if self._on_bytes is not None:
            self._on_bytes(len(data))
        return len(data)

    def seekable(self) -> bool:
        return False

    def hexdigest(self) -> str:
        return self._sha256.hexdigest()
