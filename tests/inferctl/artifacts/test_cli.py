"""``inferctl artifacts`` through ``inference_platform.inferctl.cli.main``: exit codes, one-line errors, no tracebacks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from inference_platform.inferctl.cli import main

from .conftest import METADATA, Store

FLAGS = [
    "--architecture", "LlamaForCausalLM", "--precision", "fp8", "--tp", "2",
    "--accelerator", "nvidia-h100", "--builder", "tensorrt-llm", "--builder-version", "0.17.0",
]  # fmt: skip


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["artifacts", *argv])
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


def _error_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert lines and lines[-1].startswith("inferctl artifacts: ")
    return lines[-1]


@pytest.mark.motoserver
def test_upload_verify_download_over_the_endpoint_url(server_store: Store, make_model, tmp_path: Path, capsys) -> None:
    uri = server_store.uri()
    code, out, err = _run(capsys, "upload", str(make_model()), uri, *FLAGS, "--part-size-mib", "5", "--no-progress")
    assert code == 0 and out.startswith("uploaded 6 files (") and err == ""
    code, out, _ = _run(capsys, "verify", uri)
    assert code == 0 and "6 by S3 checksum, 0 by reading them back" in out
    code, out, _ = _run(capsys, "download", uri, str(tmp_path / "m"), "--concurrency", "2")
    assert code == 0 and "marked complete" in out
    assert (tmp_path / "m" / ".complete").exists()


def test_metadata_file_with_flag_overrides(inprocess_store: Store, make_model, tmp_path: Path, capsys) -> None:
    meta = tmp_path / "meta.json"
    meta.write_text(json.dumps({**METADATA.to_dict(), "accelerator_arch": ""}))
    code, _, _ = _run(capsys, "upload", str(make_model()), inprocess_store.uri(), "--metadata", str(meta), "--pp", "2")
    assert code == 0
    body = inprocess_store.client.get_object(Bucket="models", Key=inprocess_store.key("manifest.json"))["Body"]
    model = json.loads(body.read())["model"]
    assert (model["pipeline_parallel_size"], model["tensor_parallel_size"], model["accelerator_arch"]) == (2, 2, "sm90")


def test_refuses_to_overwrite_a_version(inprocess_store: Store, make_model, capsys) -> None:
    src, uri = str(make_model()), inprocess_store.uri()
    assert _run(capsys, "upload", src, uri, *FLAGS)[0] == 0
    code, _, err = _run(capsys, "upload", src, uri, *FLAGS)
    assert code == 1
    assert (
        err
        == f"inferctl artifacts: {uri} is already a published version (it has a manifest): pass --force to replace it\n"
    )
    assert _run(capsys, "upload", src, uri, *FLAGS, "--force")[0] == 0


def test_bad_input_exits_2_naming_every_problem(inprocess_store: Store, make_model, capsys) -> None:
    flags = [*FLAGS]
    flags[flags.index("fp8")] = "fp9"
    flags[flags.index("2")] = "0"
    code, _, err = _run(capsys, "upload", str(make_model()), inprocess_store.uri(), *flags)
    assert code == 2
    assert err.count("\n") == 1
    assert "precision 'fp9' is not one of" in err and "tensor_parallel_size must be an integer >= 1" in err
    code, _, err = _run(capsys, "verify", "s3://models/x/1/", "--part-size-mib", "1")
    assert code == 2 and "part size must be at least 5 MiB" in err
    code, _, err = _run(capsys, "download", "gs://models/x/1/", "out")
    assert code == 2 and err == "inferctl artifacts: artifact URI 'gs://models/x/1/' must start with s3://\n"


def test_each_mismatch_gets_a_line_and_the_exit_code_is_3(inprocess_store: Store, make_model, tmp_path, capsys) -> None:
    uri, client = inprocess_store.uri(), inprocess_store.client
    assert _run(capsys, "upload", str(make_model()), uri, *FLAGS)[0] == 0
    client.put_object(Bucket="models", Key=inprocess_store.key("config.json"), Body=b"{}")
    client.delete_object(Bucket="models", Key=inprocess_store.key("empty.txt"))
    for argv in (["verify", uri], ["download", uri, str(tmp_path / "m")]):
        code, _, err = _run(capsys, *argv)
        assert code == 3
        lines = err.splitlines()
        assert len(lines) == 3
        assert lines[0].startswith("  config.json: size expected 36 bytes, actual 2 bytes")
        assert lines[1].startswith("  empty.txt: missing (expected 0 bytes, found no object at s3://models/")
        assert _error_line(err) == f"inferctl artifacts: 2 of 6 files of {uri} do not match the manifest"
    assert not (tmp_path / "m" / ".complete").exists()


def test_missing_version_is_one_line(inprocess_store: Store, tmp_path: Path, capsys) -> None:
    code, out, err = _run(capsys, "download", inprocess_store.uri("404"), str(tmp_path / "m"))
    assert code == 1 and out == ""
    key = inprocess_store.key("manifest.json", "404")
    assert err == (
        f"inferctl artifacts: no manifest at s3://models/{key}: not a published version "
        "(wrong URI, or its upload never finished)\n"
    )


def test_progress_goes_to_stderr_only(inprocess_store: Store, make_model, tmp_path: Path, capsys) -> None:
    code, out, err = _run(capsys, "upload", str(make_model()), inprocess_store.uri(), *FLAGS, "--progress")
    assert code == 0 and out.count("\n") == 1
    assert "upload" in err and "B/s" in err
    code, out, err = _run(capsys, "download", inprocess_store.uri(), str(tmp_path / "m"), "--progress")
    assert code == 0 and "download" in err and out.count("\n") == 1
