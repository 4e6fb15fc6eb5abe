"""Whole-file and composite SHA-256 in one pass, checked against a slice-by-slice reference."""

from __future__ import annotations

import base64
import hashlib
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from inference_platform.artifacts.checksums import HashingSink, b64_to_hex, hash_file


def _reference_composite(data: bytes, part: int) -> str:
    parts = [hashlib.sha256(data[i : i + part]).digest() for i in range(0, len(data), part)]
    return base64.b64encode(hashlib.sha256(b"".join(parts)).digest()).decode() + f"-{len(parts)}"


@settings(max_examples=60)
@given(data=st.binary(min_size=1, max_size=600), part=st.integers(1, 97))
def test_composite_matches_the_part_by_part_definition(tmp_path_factory, data: bytes, part: int) -> None:
    path = tmp_path_factory.mktemp("h") / "f"
    path.write_bytes(data)
    size, sha256, composite = hash_file(path, part)
    assert (size, sha256) == (len(data), hashlib.sha256(data).hexdigest())
    assert composite == _reference_composite(data, part)


def test_single_part_files_have_no_composite(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"hello")
    seen: list[int] = []
    assert hash_file(path, None, seen.append) == (5, hashlib.sha256(b"hello").hexdigest(), None)
    assert sum(seen) == 5


def test_hashing_sink_hashes_in_order_and_is_not_seekable() -> None:
    sink = HashingSink()
    for chunk in (b"ab", b"", b"cd"):
        sink.write(chunk)
    assert (sink.size, sink.hexdigest(), sink.seekable()) == (4, hashlib.sha256(b"abcd").hexdigest(), False)


def test_b64_to_hex_ignores_the_part_suffix() -> None:
    digest = hashlib.sha256(b"x").digest()
    assert b64_to_hex(base64.b64encode(digest).decode() + "-3") == digest.hex()
