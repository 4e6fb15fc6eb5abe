"""Interrupted downloads: a re-run keeps what verified, fetches only the rest, and never trusts junk."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from inference_platform.artifacts import ArtifactError, TransferSettings, download, downloader, upload
from inference_platform.artifacts.localfs import exclusive, promote
from inference_platform.artifacts.transfer import MIB

from .conftest import METADATA, Store
from .test_faults import assert_no_partial_model

# One request at a time makes "the Nth file" well defined; largest files are fetched first.
SERIAL = TransferSettings(part_size=5 * MIB, max_concurrency=1)
FILES = {
    "a-big.engine": bytes(range(256)) * (44 * 1024),  # 11 MiB: three ranged GETs
    "b.bin": b"b" * 300_000,
    "c.bin": b"c" * 200_000,
    "d.json": b'{"d": 1}',
}


class Interrupted(Exception):
    """Stands in for a dropped connection or a killed process in the middle of a transfer."""


@pytest.fixture
def published(inprocess_store: Store, make_model) -> Store:
    upload(make_model(FILES), inprocess_store.uri(), METADATA, session=inprocess_store.session, transfer=SERIAL)
    return inprocess_store


def _part(rel: str) -> str:
    return hashlib.sha256(rel.encode()).hexdigest()[:32] + ".part"


def _fetched(watch) -> set[str]:
    return {url.rsplit("/", 1)[-1] for url in watch.ops("GetObject") if not url.endswith("manifest.json")}


def test_rerun_fetches_only_what_the_interrupted_run_did_not_verify(
    published: Store, tmp_path: Path, faults, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, dest = published, tmp_path / "model"
    promoted: list[Path] = []

    def promote_then_die_on_the_third(source: Path, target: Path) -> None:
        if len(promoted) == 2:
            raise Interrupted("killed")
        promote(source, target)
        promoted.append(target)

    monkeypatch.setattr(downloader, "promote", promote_then_die_on_the_third)
    with pytest.raises(Interrupted):
        download(store.uri(), dest, session=store.session, transfer=SERIAL)
    monkeypatch.undo()
    kept = {p.name for p in dest.iterdir() if p.is_file()}
    assert kept == {p.name for p in promoted} and len(kept) == 2
    assert not (dest / ".complete").exists()
    assert all((dest / rel).read_bytes() == FILES[rel] for rel in kept)
    # Transfers that finished but were never checked wait in staging; they are hashed, not refetched.
    waiting = {rel for rel in FILES if (dest / ".inferctl-download" / _part(rel)).exists()}

    rerun = faults(store.session)
    download(store.uri(), dest, session=store.session, transfer=SERIAL)
    assert _fetched(rerun) == set(FILES) - kept - waiting
    assert all((dest / rel).read_bytes() == data for rel, data in FILES.items())
    # Staging keeps only the journal: the record of what verified, which a re-run checks against.
    assert (dest / ".complete").exists() and [p.name for p in (dest / ".inferctl-download").iterdir()] == [
        "journal.json"
    ]


def test_a_file_cut_off_mid_way_is_fetched_again_whole(published: Store, tmp_path: Path, faults) -> None:
    store, dest = published, tmp_path / "model"
    first = faults(store.session)
    first.raise_on("GetObject", Interrupted("connection lost"), key="a-big.engine", nth=2)
    with pytest.raises(Interrupted):
        download(store.uri(), dest, session=store.session, transfer=SERIAL)
    assert not (dest / "a-big.engine").exists()
    assert_no_partial_model(dest, FILES)

    rerun = faults(store.session)
    download(store.uri(), dest, session=store.session, transfer=SERIAL)
    assert len(rerun.ops("GetObject", "a-big.engine")) == 3
    assert (dest / "a-big.engine").read_bytes() == FILES["a-big.engine"]


def test_leftovers_of_a_killed_run_are_sorted_out(published: Store, tmp_path: Path, faults) -> None:
    """Killed hard: a finished but unpromoted .part, a torn temp file, a torn file under a final name."""
    store, dest = published, tmp_path / "model"
    staging = dest / ".inferctl-download"
    staging.mkdir(parents=True)
    part = _part("b.bin")
    (staging / part).write_bytes(FILES["b.bin"])
    (staging / (part + ".a1B2c3D4")).write_bytes(b"torn")
    (dest / "c.bin").write_bytes(FILES["c.bin"][:1000])
    (dest / "d.json").write_bytes(b'{"d": 2}')  # right size, wrong bytes
    (dest / "unrelated.txt").write_bytes(b"kept")

    watch = faults(store.session)
    download(store.uri(), dest, session=store.session, transfer=SERIAL)
    assert _fetched(watch) == {"a-big.engine", "c.bin", "d.json"}
    assert all((dest / rel).read_bytes() == data for rel, data in FILES.items())
    assert (dest / "unrelated.txt").read_bytes() == b"kept"


def test_a_complete_directory_with_a_damaged_file_is_repaired(published: Store, tmp_path: Path, faults) -> None:
    store, dest = published, tmp_path / "model"
    download(store.uri(), dest, session=store.session, transfer=SERIAL)
    (dest / "b.bin").write_bytes(b"short")
    watch = faults(store.session)
    download(store.uri(), dest, session=store.session, transfer=SERIAL)
    assert _fetched(watch) == {"b.bin"}
    assert (dest / "b.bin").read_bytes() == FILES["b.bin"]


def test_another_version_in_the_directory_is_replaced_not_mixed(published: Store, make_model, tmp_path: Path) -> None:
    store, dest = published, tmp_path / "model"
    download(store.uri(), dest, session=store.session, transfer=SERIAL)
    v2 = {**FILES, "b.bin": b"B" * 300_000}
    upload(make_model(v2, name="v2"), store.uri("2"), METADATA, session=store.session, transfer=SERIAL)
    manifest = download(store.uri("2"), dest, session=store.session, transfer=SERIAL)
    assert (dest / ".complete").read_text().strip() == manifest.sha256
    assert all((dest / rel).read_bytes() == data for rel, data in v2.items())


def test_two_downloads_into_one_directory_do_not_interleave(published: Store, tmp_path: Path) -> None:
    dest = tmp_path / "model"
    dest.mkdir()
    with exclusive(dest), pytest.raises(ArtifactError, match="another inferctl download is writing"):
        download(published.uri(), dest, session=published.session, transfer=SERIAL)
