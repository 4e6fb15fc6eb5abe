"""The manifest: canonical JSON that round-trips, strict parsing, and path rules that keep files inside."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from inference_platform.artifacts.errors import ArtifactError, IntegrityError, InvalidInputError
from inference_platform.artifacts.manifest import Manifest, ManifestFile, check_relative_path
from inference_platform.artifacts.metadata import ACCELERATORS, ModelMetadata

from .conftest import METADATA

SHA = "a" * 64
_segment = st.text("abcdefghijklmnopqrstuvwxyz0123456789_-.", min_size=1, max_size=12).filter(
    lambda s: s not in (".", "..")
)
_path = st.lists(_segment, min_size=1, max_size=3).map("/".join).filter(lambda p: check_relative_path(p) is None)


def _no_nesting(paths: list[str]) -> bool:
    return not any(other.startswith(p + "/") for p in paths for other in paths)


_files = (
    st.lists(_path, min_size=1, max_size=8, unique=True)
    .filter(_no_nesting)
    .flatmap(
        lambda paths: st.tuples(
            *(
                st.builds(
                    ManifestFile,
                    st.just(p),
                    st.integers(0, 2**40),
                    st.text("0123456789abcdef", min_size=64, max_size=64),
                    st.none() | st.builds(lambda n: f"{'A' * 43}=-{n}", st.integers(1, 10_000)),
                )
                for p in paths
            )
        )
    )
)


@st.composite
def _metadata(draw: st.DrawFn) -> ModelMetadata:
    accelerator = draw(st.sampled_from(sorted(ACCELERATORS)))
    return ModelMetadata(
        architecture=draw(st.sampled_from(["LlamaForCausalLM", "MixtralForCausalLM", "llama"])),
        precision=draw(st.sampled_from(sorted(ACCELERATORS[accelerator].precisions))),
        accelerator=accelerator,
        builder=draw(st.sampled_from(["tensorrt-llm", "neuronx-distributed-inference"])),
        builder_version=draw(st.from_regex(r"\A[0-9]{1,2}\.[0-9]{1,2}\.[0-9]{1,2}\Z")),
        tensor_parallel_size=draw(st.integers(1, 64)),
        pipeline_parallel_size=draw(st.integers(1, 16)),
    )


@given(files=_files, metadata=_metadata())
def test_round_trip_is_exact_and_canonical(files: tuple[ManifestFile, ...], metadata: ModelMetadata) -> None:
    manifest = Manifest(files=files, metadata=metadata, created_at="2026-07-20T12:00:00Z")
    data = manifest.to_json()
    again = Manifest.from_json(data, source="test")
    assert again == manifest
    assert again.to_json() == data
    assert again.sha256 == manifest.sha256
    assert [f.path for f in again.files] == sorted(f.path for f in files)


@given(st.lists(_segment, min_size=0, max_size=3), st.sampled_from(["..", ".", ""]), st.lists(_segment, max_size=2))
def test_paths_that_could_leave_the_directory_are_refused(before: list[str], bad: str, after: list[str]) -> None:
    assert check_relative_path("/".join([*before, bad, *after])) is not None
    assert check_relative_path("/" + "/".join([*before, "x"])) is not None


@pytest.mark.parametrize(
    ("paths", "reason"),
    [
        (["a", "a"], "unique"),
        (["a", "a/b"], "lies under another file"),
        (["manifest.json"], "reserved"),
        ([".complete"], "reserved"),
        ([".inferctl-download/x.part"], "reserved"),
        (["a\\b"], "'/' separators"),
        (["../etc/passwd"], "'..'"),
    ],
)
def test_invalid_file_lists_are_rejected(paths: list[str], reason: str) -> None:
    with pytest.raises(InvalidInputError, match=reason):
        Manifest(
            files=tuple(ManifestFile(p, 1, SHA) for p in paths), metadata=METADATA, created_at="2026-07-20T12:00:00Z"
        )


def _doc(**changes) -> bytes:
    doc = {
        "schema_version": 1,
        "created_at": "2026-07-20T12:00:00Z",
        "model": METADATA.to_dict(),
        "files": [{"path": "a", "size": 1, "sha256": SHA}],
    }
    doc.update(changes)
    return json.dumps(doc).encode()


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"not json", "Expecting value"),
        (b"[]", "not a JSON object"),
        (_doc(extra=1), "unknown keys"),
        (_doc(files=[{"path": "a", "size": 1}]), "missing key 'sha256'"),
        (_doc(files=[{"path": "a", "size": -1, "sha256": SHA}]), "size must be an integer"),
        (_doc(files=[{"path": "a", "size": 1, "sha256": "XYZ"}]), "sha256 must be 64"),
        (_doc(files=[]), "at least one file"),
        (_doc(created_at="yesterday"), "created_at"),
        (_doc(model={**METADATA.to_dict(), "precision": "fp9"}), "precision 'fp9'"),
    ],
)
def test_damaged_manifests_are_integrity_errors_naming_the_source(data: bytes, reason: str) -> None:
    with pytest.raises(IntegrityError, match=reason) as caught:
        Manifest.from_json(data, source="s3://models/x/1/manifest.json")
    assert "s3://models/x/1/manifest.json" in str(caught.value)
    assert caught.value.exit_code == 3


def test_a_newer_schema_asks_for_an_upgrade() -> None:
    with pytest.raises(ArtifactError, match="upgrade inferctl") as caught:
        Manifest.from_json(_doc(schema_version=2), source="m")
    assert not isinstance(caught.value, IntegrityError)
