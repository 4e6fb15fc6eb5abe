"""The package's stable names, and the promise that the CLI starts without importing boto3."""

from __future__ import annotations

import subprocess
import sys

import inference_platform.artifacts as artifacts
from inference_platform.errors import CommandError


def test_every_documented_name_resolves() -> None:
    assert sorted(artifacts.__all__) == sorted(artifacts._EXPORTS)
    for name in artifacts.__all__:
        assert name in artifacts.__doc__
        assert getattr(artifacts, name).__name__ == name
    assert issubclass(artifacts.ArtifactError, CommandError)
    assert issubclass(artifacts.IntegrityError, artifacts.ArtifactError)


def test_help_does_not_import_boto3() -> None:
    code = (
        "import sys; from inference_platform.inferctl.cli import build_parser; build_parser(); "
        "print(sorted(m for m in ('boto3', 'botocore', 's3transfer', 'tqdm') if m in sys.modules))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert result.stdout.strip() == "[]"
