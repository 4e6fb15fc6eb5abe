"""Which local files a version publishes, and the names it refuses instead of skipping silently."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from inference_platform.artifacts.errors import InvalidInputError
from inference_platform.artifacts.tree import list_files


def _write(root: Path, rel: str, data: bytes = b"x") -> None:
    (root / rel).parent.mkdir(parents=True, exist_ok=True)
    (root / rel).write_bytes(data)


def test_lists_nested_files_sorted_and_follows_file_links(tmp_path: Path) -> None:
    for rel in ("b.json", "engine/rank0.engine", "a/z.txt"):
        _write(tmp_path, rel)
    os.symlink(tmp_path / "b.json", tmp_path / "link.json")
    assert [rel for rel, _ in list_files(tmp_path)] == ["a/z.txt", "b.json", "engine/rank0.engine", "link.json"]


def test_reserved_names_and_broken_entries_are_all_reported(tmp_path: Path) -> None:
    _write(tmp_path, "manifest.json")
    _write(tmp_path, ".complete", b"not the digest")
    _write(tmp_path, "ok.bin")
    os.symlink(tmp_path / "gone", tmp_path / "dangling")
    (tmp_path / "realdir").mkdir()
    os.symlink(tmp_path / "realdir", tmp_path / "dirlink")
    with pytest.raises(InvalidInputError) as caught:
        list_files(tmp_path)
    message = str(caught.value)
    for expected in ("'manifest.json' is reserved", "'.complete' is reserved", "dangling", "symlinked directory"):
        assert expected in message


def test_a_finished_download_can_be_republished(tmp_path: Path) -> None:
    _write(tmp_path, "model.bin")
    manifest = b'{"whatever": 1}\n'
    _write(tmp_path, "manifest.json", manifest)
    _write(tmp_path, ".complete", (hashlib.sha256(manifest).hexdigest() + "\n").encode())
    _write(tmp_path, ".inferctl-download/journal.json")
    assert [rel for rel, _ in list_files(tmp_path)] == ["model.bin"]


def test_empty_and_missing_directories(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="holds no files"):
        list_files(tmp_path)
    with pytest.raises(InvalidInputError, match="is not a directory"):
        list_files(tmp_path / "absent")
