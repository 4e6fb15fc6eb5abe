"""The files of a local model directory, as the relative paths a manifest lists."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from inference_platform.artifacts.errors import InvalidInputError
from inference_platform.artifacts.manifest import COMPLETE_MARKER, MANIFEST_NAME, STAGING_DIR, check_relative_path


def list_files(root: Path) -> list[tuple[str, Path]]:
    """Every regular file under ``root`` (symlinked files are read through), sorted by path.

    A finished ``download`` directory can be re-published: its manifest copy, marker and staging
    area are skipped. Anywhere else those names are refused rather than silently left out.
    """
    if not root.is_dir():
        raise InvalidInputError(f"{root} is not a directory")
    skip = _bookkeeping(root)
    files: list[tuple[str, Path]] = []
    problems: list[str] = []

    # os.walk skips unreadable directories silently unless told otherwise.
    def unreadable(err: OSError) -> None:
        problems.append(f"cannot read {err.filename}: {err.strerror}")

    for dirpath, dirnames, filenames in os.walk(root, onerror=unreadable):
        here = Path(dirpath)
        for name in sorted(dirnames):
            if (here / name).is_symlink():
                problems.append(f"{here / name} is a symlinked directory: resolve or copy it first")
        dirnames[:] = sorted(d for d in dirnames if (here / d).relative_to(root).as_posix() not in skip)
        for name in sorted(filenames):
            path = here / name
            rel = path.relative_to(root).as_posix()
            if rel in skip:
                continue
            problem = check_relative_path(rel)
            if problem is None and not path.is_file():
                problem = f"{path} is not a regular file (or a dangling link)"
            if problem:
                problems.append(problem)
            else:
                files.append((rel, path))
    if problems:
        raise InvalidInputError(f"cannot publish {root}: " + "; ".join(problems))
    if not files:
        raise InvalidInputError(f"{root} holds no files to publish")
    return sorted(files)


def _bookkeeping(root: Path) -> set[str]:
    try:
        marker = (root / COMPLETE_MARKER).read_text().strip()
        manifest_digest = hashlib.sha256((root / MANIFEST_NAME).read_bytes()).hexdigest()
    except OSError:
        return set()
    return {MANIFEST_NAME, COMPLETE_MARKER, STAGING_DIR} if marker == manifest_digest else set()
