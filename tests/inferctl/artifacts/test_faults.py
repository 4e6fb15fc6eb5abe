"""Damaged versions: each fault is named per file by verify, refused by download, and no partial
model is ever left looking servable."""

from __future__ import annotations

import hashlib
import io
from collections.abc import Callable
from pathlib import Path

import pytest
from boto3.s3.transfer import TransferConfig

from inference_platform.artifacts import ArtifactError, IntegrityError, Manifest, ManifestFile, download, upload, verify
from inference_platform.artifacts.transfer import MIB

from .conftest import METADATA, SMALL_TRANSFER, Store, model_files, sha256

SHARD = "engine/rank1.engine"  # single part
BIG = "engine/rank0.engine"  # three parts


@pytest.fixture
def published(store: Store, make_model) -> tuple[Store, dict[str, bytes]]:
    files = model_files()
    upload(make_model(files), store.uri(), METADATA, session=store.session, transfer=SMALL_TRANSFER)
    return store, files


def _put(store: Store, rel: str, data: bytes, **extra) -> None:
    store.client.put_object(Bucket=store.bucket, Key=store.key(rel), Body=data, **extra)


def _flip(data: bytes, at: int = 1000) -> bytes:
    return data[:at] + bytes([data[at] ^ 0x01]) + data[at + 1 :]


def assert_no_partial_model(dest: Path, files: dict[str, bytes]) -> None:
    """Not marked; every final name holds right bytes; staging holds at most whole, right ``.part``s."""
    assert not (dest / ".complete").exists()
    assert not (dest / "manifest.json").exists()
    for rel, data in files.items():
        if (dest / rel).exists():
            assert (dest / rel).read_bytes() == data, f"{rel} left under its final name with wrong content"
    parts = {hashlib.sha256(rel.encode()).hexdigest()[:32] + ".part": data for rel, data in files.items()}
    for leftover in (dest / ".inferctl-download").iterdir():
        if leftover.name != "journal.json":
            assert parts.get(leftover.name) == leftover.read_bytes(), f"torn or wrong staging file {leftover.name}"


def _check_fault(store: Store, files: dict[str, bytes], tmp_path: Path, expected: tuple[str, str, str, str]) -> None:
    report = verify(store.uri(), session=store.session, transfer=SMALL_TRANSFER)
    assert not report.ok
    assert [(m.path, m.problem, m.expected, m.actual) for m in report.mismatches] == [expected]
    with pytest.raises(IntegrityError) as caught:
        report.raise_for_mismatches()
    assert caught.value.exit_code == 3 and expected[0] in str(caught.value)

    dest = tmp_path / "model"
    with pytest.raises(IntegrityError) as caught:
        download(store.uri(), dest, session=store.session, transfer=SMALL_TRANSFER)
    assert [(m.path, m.problem) for m in caught.value.mismatches] == [expected[:2]]
    assert f"1 of {len(files)} files of {store.uri()} do not match the manifest: {expected[0]}" in str(caught.value)
    assert not (dest / expected[0]).exists()
    assert_no_partial_model(dest, files)


def test_truncated_object(published, tmp_path: Path) -> None:
    store, files = published
    _put(store, SHARD, files[SHARD][:-100])
    size = len(files[SHARD])
    _check_fault(store, files, tmp_path, (SHARD, "size", f"{size} bytes", f"{size - 100} bytes"))


@pytest.mark.parametrize("stored_checksum", [{}, {"ChecksumAlgorithm": "SHA256"}], ids=["crc32", "sha256"])
def test_one_flipped_byte(published, tmp_path: Path, stored_checksum: dict) -> None:
    store, files = published
    bad = _flip(files[SHARD])
    _put(store, SHARD, bad, **stored_checksum)
    _check_fault(store, files, tmp_path, (SHARD, "sha256", sha256(files[SHARD]), sha256(bad)))
    report = verify(store.uri(), session=store.session, transfer=SMALL_TRANSFER)
    # A stored SHA-256 settles the file without reading it back; a CRC32 does not.
    assert report.by_download == (0 if stored_checksum else 1)


def test_flipped_byte_in_a_multipart_object(published, tmp_path: Path) -> None:
    store, files = published
    bad = _flip(files[BIG], at=7 * MIB)
    store.client.upload_fileobj(
        io.BytesIO(bad), store.bucket, store.key(BIG), ExtraArgs={"ChecksumAlgorithm": "SHA256"},
        Config=TransferConfig(multipart_threshold=5 * MIB, multipart_chunksize=5 * MIB),
    )  # fmt: skip
    _check_fault(store, files, tmp_path, (BIG, "sha256", sha256(files[BIG]), sha256(bad)))


def test_same_bytes_in_other_parts_is_not_a_mismatch(published) -> None:
    """A composite over 6 MiB parts differs from ours over 5 MiB: read it back, do not cry wolf."""
    store, files = published
    store.client.upload_fileobj(
        io.BytesIO(files[BIG]), store.bucket, store.key(BIG), ExtraArgs={"ChecksumAlgorithm": "SHA256"},
        Config=TransferConfig(multipart_threshold=6 * MIB, multipart_chunksize=6 * MIB),
    )  # fmt: skip
    report = verify(store.uri(), session=store.session, transfer=SMALL_TRANSFER)
    assert report.ok and report.by_download == 1


def test_missing_object(published, tmp_path: Path) -> None:
    store, files = published
    store.client.delete_object(Bucket=store.bucket, Key=store.key(SHARD))
    where = f"s3://{store.bucket}/{store.key(SHARD)}"
    _check_fault(store, files, tmp_path, (SHARD, "missing", f"{len(files[SHARD])} bytes", where))


def test_manifest_listing_a_file_that_is_absent(published, tmp_path: Path) -> None:
    store, files = published
    manifest = verify(store.uri(), session=store.session).manifest
    ghost = ManifestFile("engine/rank2.engine", 42, "0" * 64)
    edited = Manifest(files=(*manifest.files, ghost), metadata=manifest.metadata, created_at=manifest.created_at)
    _put(store, "manifest.json", edited.to_json())
    where = f"s3://{store.bucket}/{store.key(ghost.path)}"
    _check_fault(store, {**files, ghost.path: b""}, tmp_path, (ghost.path, "missing", "42 bytes", where))


def test_several_faults_are_each_reported(published, tmp_path: Path) -> None:
    store, files = published
    _put(store, SHARD, files[SHARD][:10])
    _put(store, "config.json", b"{}")
    store.client.delete_object(Bucket=store.bucket, Key=store.key("empty.txt"))
    report = verify(store.uri(), session=store.session, transfer=SMALL_TRANSFER)
    assert {(m.path, m.problem) for m in report.mismatches} == {
        (SHARD, "size"),
        ("config.json", "size"),
        ("empty.txt", "missing"),
    }
    with pytest.raises(IntegrityError, match=f"3 of {len(files)} files"):
        download(store.uri(), tmp_path / "m", session=store.session, transfer=SMALL_TRANSFER)
    assert_no_partial_model(tmp_path / "m", files)


@pytest.mark.parametrize(
    ("damage", "reason"),
    [
        (lambda s: s.client.delete_object(Bucket=s.bucket, Key=s.key("manifest.json")), "no manifest at s3://"),
        (lambda s: _put(s, "manifest.json", b'{"schema_version": 1}'), "manifest s3://.* is invalid"),
    ],
    ids=["missing", "damaged"],
)
def test_missing_or_damaged_manifest(published, tmp_path: Path, damage: Callable[[Store], None], reason: str) -> None:
    store, _ = published
    damage(store)
    for action in (
        lambda: verify(store.uri(), session=store.session),
        lambda: download(store.uri(), tmp_path / "m", session=store.session),
    ):
        with pytest.raises(ArtifactError, match=reason) as caught:
            action()
        assert "\n" not in str(caught.value)
    assert not (tmp_path / "m").exists()


def test_missing_bucket(store: Store, tmp_path: Path) -> None:
    with pytest.raises(ArtifactError, match=r"bucket 'no-such-bucket' does not exist \(NoSuchBucket\)"):
        download("s3://no-such-bucket/models/x/1/", tmp_path / "m", session=store.session)
