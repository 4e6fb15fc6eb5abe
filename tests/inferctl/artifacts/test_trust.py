"""Trust nothing that was not verified (issue 9 §5): a complete download is re-checked against what
verified, a pinned manifest is the only one accepted, and stray objects in a version are reported."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from inference_platform.artifacts import IntegrityError, InvalidInputError, Manifest, download, upload, verify
from inference_platform.inferctl.cli import main

from .conftest import METADATA, SMALL_TRANSFER, Store, model_files, sha256

SHARD = "engine/rank1.engine"
JOURNAL = Path(".inferctl-download") / "journal.json"


@pytest.fixture
def published(inprocess_store: Store, make_model) -> tuple[Store, dict[str, bytes], Manifest]:
    files = model_files()
    manifest = upload(
        make_model(files), inprocess_store.uri(), METADATA, session=inprocess_store.session, transfer=SMALL_TRANSFER
    )
    return inprocess_store, files, manifest


def _corrupt_in_place(path: Path) -> None:
    """Same size, other bytes, and the old mtime put back: only ctime and content tell."""
    before = path.stat()
    data = bytearray(path.read_bytes())
    data[100] ^= 0xFF
    path.write_bytes(bytes(data))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert path.stat().st_size == before.st_size and path.stat().st_mtime_ns == before.st_mtime_ns


def _gets(watch) -> set[str]:
    return {url.split("/models/llama/1/", 1)[1] for url in watch.ops("GetObject") if "manifest.json" not in url}


def test_a_complete_download_corrupted_later_is_repaired_on_rerun(published, tmp_path: Path, faults) -> None:
    store, files, _ = published
    dest = tmp_path / "model"
    download(store.uri(), dest, session=store.session, transfer=SMALL_TRANSFER)
    _corrupt_in_place(dest / SHARD)

    watch = faults(store.session)
    download(store.uri(), dest, session=store.session, transfer=SMALL_TRANSFER)
    assert (dest / SHARD).read_bytes() == files[SHARD]
    assert _gets(watch) == {SHARD}, "only the changed file is hashed again and refetched"
    assert (dest / ".complete").exists()


def test_an_untouched_complete_download_is_neither_fetched_nor_rehashed(
    published, tmp_path: Path, faults, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, _, _ = published
    dest = tmp_path / "model"
    download(store.uri(), dest, session=store.session, transfer=SMALL_TRANSFER)
    assert json.loads((dest / JOURNAL).read_text())["files"].keys() == set(model_files())

    from inference_platform.artifacts import downloader

    hashed: list[Path] = []
    monkeypatch.setattr(downloader, "hash_file", lambda path, *a: hashed.append(path) or (0, "", None))
    watch = faults(store.session)
    download(store.uri(), dest, session=store.session, transfer=SMALL_TRANSFER)
    assert hashed == [] and _gets(watch) == set()


def test_deep_catches_what_the_recorded_identities_cannot(published, tmp_path: Path) -> None:
    """A fault below the file system (bit rot) keeps size, mtime, ctime and inode: only reading tells."""
    store, files, manifest = published
    dest = tmp_path / "model"
    download(store.uri(), dest, session=store.session, transfer=SMALL_TRANSFER)
    _corrupt_in_place(dest / SHARD)
    journal = json.loads((dest / JOURNAL).read_text())
    st = (dest / SHARD).stat()
    journal["files"][SHARD] = [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev, sha256(files[SHARD])]
    (dest / JOURNAL).write_text(json.dumps(journal))

    download(store.uri(), dest, session=store.session, transfer=SMALL_TRANSFER)
    assert (dest / SHARD).read_bytes() != files[SHARD], "the fast check trusts an identical identity"
    download(store.uri(), dest, session=store.session, transfer=SMALL_TRANSFER, deep=True)
    assert all((dest / rel).read_bytes() == data for rel, data in files.items())
    assert (dest / ".complete").read_text().strip() == manifest.sha256


def _swap(store: Store, manifest: Manifest, files: dict[str, bytes]) -> Manifest:
    """Replace one file and its manifest entry together: the version stays self-consistent."""
    evil = b"\x00" * len(files[SHARD])
    store.client.put_object(Bucket=store.bucket, Key=store.key(SHARD), Body=evil, ChecksumAlgorithm="SHA256")
    entries = tuple(type(f)(f.path, f.size, sha256(evil)) if f.path == SHARD else f for f in manifest.files)
    return Manifest(files=entries, metadata=manifest.metadata, created_at=manifest.created_at)


def _drop_entry(store: Store, manifest: Manifest, files: dict[str, bytes]) -> Manifest:
    """Remove an entry (and its object): a model served without, say, one tokenizer file."""
    store.client.delete_object(Bucket=store.bucket, Key=store.key("tokenizer/special_tokens_map.json"))
    entries = tuple(f for f in manifest.files if f.path != "tokenizer/special_tokens_map.json")
    return Manifest(files=entries, metadata=manifest.metadata, created_at=manifest.created_at)


@pytest.mark.parametrize("tamper", [_swap, _drop_entry], ids=["swapped-together", "entry-removed"])
def test_a_consistent_but_unpinned_manifest_is_refused(published, tmp_path: Path, tamper) -> None:
    store, files, original = published
    forged = tamper(store, original, files)
    store.client.put_object(Bucket=store.bucket, Key=store.key("manifest.json"), Body=forged.to_json())
    # Without a pin the forgery is indistinguishable from a published version.
    assert verify(store.uri(), session=store.session).ok

    dest = tmp_path / "model"
    for action in (
        lambda: verify(store.uri(), session=store.session, expected_manifest_sha256=original.sha256),
        lambda: download(store.uri(), dest, session=store.session, expected_manifest_sha256=original.sha256),
    ):
        with pytest.raises(IntegrityError, match=f"has sha256 {forged.sha256}, not the pinned {original.sha256}") as e:
            action()
        assert e.value.exit_code == 3
    assert not dest.exists(), "refused before anything was written"


def test_the_pinned_manifest_is_accepted_and_a_bad_pin_is_a_usage_error(published, tmp_path: Path) -> None:
    store, _, manifest = published
    got = download(store.uri(), tmp_path / "m", session=store.session, expected_manifest_sha256=manifest.sha256.upper())
    assert got.sha256 == manifest.sha256
    assert verify(store.uri(), session=store.session, expected_manifest_sha256=manifest.sha256).ok
    with pytest.raises(InvalidInputError, match="not 64 hex digits") as caught:
        download(store.uri(), tmp_path / "n", session=store.session, expected_manifest_sha256="sha256:abc")
    assert caught.value.exit_code == 2


def test_verify_reports_objects_the_manifest_does_not_list(published, tmp_path: Path) -> None:
    store, _, _ = published
    for rel in ("engine/rank9.engine", "extra/notes.txt"):
        store.client.put_object(Bucket=store.bucket, Key=store.key(rel), Body=b"planted")
    store.client.put_object(Bucket=store.bucket, Key="models/llama/10/other.bin", Body=b"another version")
    report = verify(store.uri(), session=store.session)
    assert not report.ok and report.mismatches == ()
    assert [(m.path, m.problem) for m in report.unlisted] == [
        ("engine/rank9.engine", "unlisted"),
        ("extra/notes.txt", "unlisted"),
    ]
    with pytest.raises(IntegrityError, match="2 objects under s3://models/models/llama/1/ not in the manifest") as e:
        report.raise_for_mismatches()
    assert e.value.exit_code == 3 and len(e.value.mismatches) == 2
    # A download fetches only what the manifest lists: the planted objects never reach a model directory.
    download(store.uri(), tmp_path / "m", session=store.session)
    assert not (tmp_path / "m" / "extra").exists() and not (tmp_path / "m" / "engine" / "rank9.engine").exists()


def test_cli_pin_deep_and_unlisted(published, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store, _, manifest = published
    uri, dest = store.uri(), str(tmp_path / "m")
    assert main(["artifacts", "download", uri, dest, "--manifest-sha256", manifest.sha256, "--deep"]) == 0
    assert main(["artifacts", "download", uri, dest, "--manifest-sha256", "0" * 64]) == 3
    assert main(["artifacts", "verify", uri, "--manifest-sha256", "xyz"]) == 2
    store.client.put_object(Bucket=store.bucket, Key=store.key("stray.bin"), Body=b"x")
    assert main(["artifacts", "verify", uri]) == 3
    err = capsys.readouterr().err
    assert "not the pinned 0000" in err and "stray.bin: not in the manifest, yet stored at s3://models/" in err
