"""serve-local's work directory: what it keeps across restarts, what it renders anew, and who may use it.

Kept (so a client configured once keeps working after a restart): the clients' API keys (``api-keys.json``, or
``--api-key-file``) and the edge's CA and certificate (``edge/tls/``, :mod:`.edge_tls`). Rendered anew at every
start: the model repository, checkpoint and Triton backends (``model/``), the edge's bootstrap and the batch
lane's files (``batch/``). A folder that holds anything else is refused, so ``--work-dir ~`` never has its
files mixed with ours; one serve-local at a time holds the folder (an exclusive lock on its marker file).
"""

from __future__ import annotations

import fcntl
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from inference_platform.errors import CommandError

MARKER = ".inferctl-serve-local"
KEY_FILE = "api-keys.json"
EDGE = "edge"
MODEL = "model"
BATCH = "batch"
RENDERED = (MODEL, BATCH)
"""Emptied at each start."""


@dataclass(frozen=True)
class WorkDir:
    root: Path

    @property
    def model(self) -> Path:
        return self.root / MODEL

    @property
    def edge(self) -> Path:
        return self.root / EDGE

    @property
    def batch(self) -> Path:
        return self.root / BATCH

    @property
    def key_file(self) -> Path:
        return self.root / KEY_FILE

    @property
    def ca(self) -> Path:
        return self.edge / "tls" / "ca.pem"


@contextmanager
def claimed(root: Path) -> Iterator[WorkDir]:
    """``root`` made ready for one run and held until the block ends; CommandError (exit 2) when it holds files
    serve-local did not write, or another serve-local holds it."""
    marker = root / MARKER
    if root.exists() and not root.is_dir():
        raise CommandError(f"--work-dir {root} is not a directory", exit_code=2)
    if root.is_dir() and any(root.iterdir()) and not marker.is_file():
        raise CommandError(
            f"--work-dir {root} holds files serve-local did not write: give a new or empty folder (serve-local "
            "keeps its keys and CA there across restarts)",
            exit_code=2,
        )
    root.mkdir(parents=True, exist_ok=True)
    fd = os.open(marker, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "?"
            raise CommandError(
                f"--work-dir {root} is in use by another serve-local (pid {holder}): stop it, or give another folder",
                exit_code=2,
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        for name in RENDERED:
            shutil.rmtree(root / name, ignore_errors=True)
        yield WorkDir(root)
    finally:
        os.close(fd)  # releases the lock
