"""The settings document the verification Job reads: every stack's settings survive the round trip, no
secret goes in, and a wrong or broken document exits 2."""

from __future__ import annotations

import json

import pytest

from inference_platform.errors import CommandError
from inference_platform.settings import SECRET_KEYS, stack_files
from inference_platform.settings.document import FORMAT, settings_document


@pytest.mark.parametrize("stack", ["dev", "prod", "npu"])
def test_round_trip(tmp_path, stack):
    settings = stack_files.load(stack)
    doc = settings_document(settings)
    assert doc["format"] == FORMAT and not set(doc["values"]) & set(SECRET_KEYS)
    path = tmp_path / "settings.json"
    path.write_text(json.dumps(doc))
    assert stack_files.load_document(path, stack) == settings


def test_wrong_stack_or_broken_document_exits_2(tmp_path):
    path = tmp_path / "settings.json"
    path.write_text(json.dumps(settings_document(stack_files.load("dev"))))
    with pytest.raises(CommandError, match="holds stack 'dev', not 'prod'") as err:
        stack_files.load_document(path, "prod")
    assert err.value.exit_code == 2
    doc = settings_document(stack_files.load("dev"))
    doc["values"]["loadTest"] = {"enabled": True, "targetRate": -1}
    path.write_text(json.dumps(doc))
    with pytest.raises(CommandError, match=r"loadTest\.targetRate") as err:
        stack_files.load_document(path, "dev")
    assert err.value.exit_code == 2
    path.write_text("{not json")
    with pytest.raises(CommandError, match="--settings-file: cannot read") as err:
        stack_files.load_document(path, "dev")
    assert err.value.exit_code == 2


def test_verify_reads_the_document_instead_of_the_stack_files(tmp_path, capsys):
    """``inferctl verify --settings-file``: a bad flag still exits 2 naming it, with the document's settings."""
    from inference_platform.inferctl.cli import main

    path = tmp_path / "settings.json"
    path.write_text(json.dumps(settings_document(stack_files.load("prod"))))
    code = main(["verify", "--stack", "prod", "--settings-file", str(path), "--url", "http://api.example.com",
                 "--api-key", "k", "--out", str(tmp_path / "out")])  # fmt: skip
    assert code == 2
    assert "a production stack is verified through TLS" in capsys.readouterr().err
