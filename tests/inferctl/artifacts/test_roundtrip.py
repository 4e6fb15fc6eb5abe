"""upload -> verify -> download against moto, in-process and over HTTP."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import boto3
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from inference_platform.artifacts import ArtifactError, IntegrityError, Manifest, download, upload, uploader, verify
from inference_platform.artifacts.manifest import check_relative_path

from .conftest import METADATA, SMALL_TRANSFER, Store, model_files, sha256

JOURNAL = ".inferctl-download/journal.json"


def _tree(root: Path) -> dict[str, bytes]:
    """Every file but the download journal (its identities differ per run; test_trust covers it)."""
    files = {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}
    assert JOURNAL in files
    return {rel: data for rel, data in files.items() if rel != JOURNAL}


def test_round_trip_with_multipart_and_single_part_files(store: Store, make_model, tmp_path: Path) -> None:
    files = model_files()
    manifest = upload(make_model(files), store.uri(), METADATA, session=store.session, transfer=SMALL_TRANSFER)

    entries = {f.path: f for f in manifest.files}
    assert {p: (e.size, e.sha256) for p, e in entries.items()} == {p: (len(d), sha256(d)) for p, d in files.items()}
    assert entries["engine/rank0.engine"].composite_sha256.endswith("-3")
    assert entries["engine/rank1.engine"].composite_sha256 is None
    stored = store.client.get_object(Bucket=store.bucket, Key=store.key("manifest.json"))["Body"].read()
    assert Manifest.from_json(stored, source="test") == manifest
    assert json.loads(stored)["model"]["accelerator_arch"] == "sm90"

    report = verify(store.uri(), session=store.session, transfer=SMALL_TRANSFER)
    assert report.ok
    assert (report.by_s3_checksum, report.by_download) == (len(files), 0)
    deep = verify(store.uri(), session=store.session, transfer=SMALL_TRANSFER, deep=True)
    assert deep.ok and (deep.by_s3_checksum, deep.by_download) == (0, len(files))

    dest = tmp_path / "model"
    assert download(store.uri(), dest, session=store.session, transfer=SMALL_TRANSFER) == manifest
    assert _tree(dest) == {**files, "manifest.json": manifest.to_json(), ".complete": f"{manifest.sha256}\n".encode()}


def test_a_second_download_of_a_complete_directory_fetches_no_data(
    inprocess_store: Store, make_model, tmp_path: Path, faults
) -> None:
    store = inprocess_store
    upload(make_model(), store.uri(), METADATA, session=store.session, transfer=SMALL_TRANSFER)
    download(store.uri(), tmp_path / "m", session=store.session, transfer=SMALL_TRANSFER)
    watch = faults(store.session)
    download(store.uri(), tmp_path / "m", session=store.session, transfer=SMALL_TRANSFER)
    assert [op for op, _ in watch.calls] == ["GetObject"]  # the manifest only


def test_an_existing_version_is_not_overwritten_without_force(store: Store, make_model) -> None:
    first = upload(make_model(), store.uri(), METADATA, session=store.session, transfer=SMALL_TRANSFER)
    replacement = make_model({"model.bin": b"new weights"}, name="v2")
    with pytest.raises(ArtifactError, match=r"already a published version .* pass --force") as caught:
        upload(replacement, store.uri(), METADATA, session=store.session, transfer=SMALL_TRANSFER)
    assert caught.value.exit_code == 1
    assert verify(store.uri(), session=store.session).manifest == first

    second = upload(replacement, store.uri(), METADATA, force=True, session=store.session, transfer=SMALL_TRANSFER)
    assert [f.path for f in second.files] == ["model.bin"]
    assert verify(store.uri(), session=store.session).manifest == second


@pytest.mark.motoserver
def test_the_manifest_is_the_last_request_of_an_upload(server_store: Store, make_model, faults) -> None:
    watch = faults(server_store.session)
    upload(make_model(), server_store.uri(), METADATA, session=server_store.session, transfer=SMALL_TRANSFER)
    writes = [url for op, url in watch.calls if op in ("PutObject", "CompleteMultipartUpload", "UploadPart")]
    assert writes[-1].endswith("/manifest.json")
    assert sum(url.endswith("/manifest.json") for url in writes) == 1


@pytest.mark.motoserver
def test_a_failed_data_upload_leaves_no_manifest(server_store: Store, make_model, faults) -> None:
    store = server_store
    injected = faults(store.session)
    injected.error("PutObject", 500, "InternalError", key="config.json")
    with pytest.raises(
        ArtifactError, match=r"S3 kept failing PutObject on s3://.*/config.json \(InternalError, HTTP 500\)"
    ):
        upload(make_model(), store.uri(), METADATA, session=store.session, transfer=SMALL_TRANSFER)
    with pytest.raises(ArtifactError, match=r"no manifest at .* not a published version"):
        verify(store.uri(), session=store.session)


def test_a_file_changed_between_hashing_and_sending_gets_no_manifest(
    inprocess_store: Store, make_model, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = inprocess_store
    real_hash = uploader.hash_file

    def hash_of_an_older_config(path: Path, part_size, on_bytes=None):
        size, digest, composite = real_hash(path, part_size, on_bytes)
        if path.name == "config.json":
            digest = sha256(b"what config.json held when it was hashed")
        return size, digest, composite

    monkeypatch.setattr(uploader, "hash_file", hash_of_an_older_config)
    with pytest.raises(IntegrityError, match=r"1 of 6 files stored under .* differ from what was hashed") as caught:
        upload(make_model(), store.uri(), METADATA, session=store.session, transfer=SMALL_TRANSFER)
    assert [(m.path, m.problem) for m in caught.value.mismatches] == [("config.json", "sha256")]
    with pytest.raises(ArtifactError, match="no manifest at"):
        verify(store.uri(), session=store.session)


@pytest.mark.motoserver
def test_force_removes_the_old_manifest_before_replacing_data(server_store: Store, make_model, faults) -> None:
    store = server_store
    upload(make_model(), store.uri(), METADATA, session=store.session, transfer=SMALL_TRANSFER)
    injected = faults(store.session)
    injected.error("PutObject", 503, "SlowDown", key="config.json")
    with pytest.raises(ArtifactError, match="SlowDown"):
        upload(make_model(), store.uri(), METADATA, force=True, session=store.session, transfer=SMALL_TRANSFER)
    # Half-replaced data must not be vouched for by the old manifest.
    with pytest.raises(ArtifactError, match="no manifest at"):
        verify(store.uri(), session=store.session)


def test_a_concurrent_publisher_loses_instead_of_mixing(inprocess_store: Store, make_model) -> None:
    store = inprocess_store
    rival = boto3.Session().client("s3")

    def rival_publishes_first(request, **kwargs):
        # A second publisher's manifest lands while ours is on its way.
        if request.method == "PUT" and request.url.endswith("/manifest.json"):
            rival.put_object(Bucket=store.bucket, Key=store.key("manifest.json"), Body=b"{}")

    store.session.events.register_first("before-send.s3.PutObject", rival_publishes_first)
    with pytest.raises(ArtifactError, match="published by someone else meanwhile"):
        upload(make_model(), store.uri(), METADATA, session=store.session, transfer=SMALL_TRANSFER)
    assert store.client.get_object(Bucket=store.bucket, Key=store.key("manifest.json"))["Body"].read() == b"{}"


_versions = itertools.count()
_names = st.lists(
    st.text("abcdefghij_-.", min_size=1, max_size=8).filter(lambda s: check_relative_path(s) is None),
    min_size=1,
    max_size=5,
    unique=True,
)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(contents=_names.flatmap(lambda names: st.fixed_dictionaries({n: st.binary(max_size=4096) for n in names})))
def test_any_tree_comes_back_byte_for_byte(inprocess_store: Store, tmp_path: Path, contents: dict[str, bytes]) -> None:
    version = str(next(_versions))
    src = tmp_path / f"src-{version}"
    for rel, data in contents.items():
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_bytes(data)
    uri = inprocess_store.uri(version)
    upload(src, uri, METADATA, session=inprocess_store.session)
    dest = tmp_path / f"dest-{version}"
    download(uri, dest, session=inprocess_store.session)
    assert {k: v for k, v in _tree(dest).items() if k not in ("manifest.json", ".complete")} == contents


def test_files_are_hashed_on_several_threads_as_they_land(
    inprocess_store: Store, make_model, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One hashing thread binds a download from 16 connections (planners/cold_start.py): the files that land about
    together are hashed at once. Each hash here waits (bounded) until another one runs beside it."""
    import threading

    from inference_platform.artifacts import downloader

    store = inprocess_store
    files = model_files()
    manifest = upload(make_model(files), store.uri(), METADATA, session=store.session, transfer=SMALL_TRANSFER)
    lock, together, running, peak = threading.Lock(), threading.Event(), [0], [0]
    real = downloader.hash_file

    def watched(path: Path, part_size: int | None) -> tuple[int, str, str | None]:
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
            if running[0] > 1:
                together.set()
        together.wait(timeout=2)  # one thread only: nothing else can start until this returns
        try:
            return real(path, part_size)
        finally:
            with lock:
                running[0] -= 1

    monkeypatch.setattr(downloader, "hash_file", watched)
    monkeypatch.setattr(downloader, "hash_threads", lambda: 4, raising=False)
    dest = tmp_path / "model"
    assert download(store.uri(), dest, session=store.session, transfer=SMALL_TRANSFER) == manifest
    assert peak[0] > 1
    assert _tree(dest) == {**files, "manifest.json": manifest.to_json(), ".complete": f"{manifest.sha256}\n".encode()}
