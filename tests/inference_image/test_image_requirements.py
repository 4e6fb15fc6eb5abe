"""The image's Python requirements resolve together with what the base image ships (pip's resolver).

Needs PyPI: pip fetches package metadata (``--dry-run``, nothing is installed). Without PyPI the
resolution tests skip, unless ``CI`` is set: there an unreachable index is a failure, not a pass.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from packaging.requirements import Requirement

IMAGE = Path(__file__).resolve().parents[2] / "inference_image"
REQUIREMENTS = IMAGE / "requirements-image.txt"
CONSTRAINTS = IMAGE / "base_image_constraints.txt"
PYPI = "https://pypi.org/simple/"
PIP_TIMEOUT = 240
# The base image's interpreter and platform (recorded in base_image_constraints.txt).
PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64")


def _requirements(path: Path) -> list[Requirement]:
    lines = (line.split("#", 1)[0].strip() for line in path.read_text().splitlines())
    return [Requirement(line) for line in lines if line]


def _base_python() -> str:
    match = re.search(r"^# python: (\d+\.\d+)$", CONSTRAINTS.read_text(), re.MULTILINE)
    assert match, f"{CONSTRAINTS} must record the base image's Python"
    return match.group(1)


@pytest.fixture(scope="module")
def pypi() -> None:
    try:
        with urllib.request.urlopen(urllib.request.Request(PYPI, method="HEAD"), timeout=10):
            return
    except (urllib.error.URLError, OSError) as err:
        if os.environ.get("CI"):
            pytest.fail(f"PyPI is unreachable in CI ({err}); the image requirements cannot be checked")
        pytest.skip(f"PyPI is unreachable ({err}); set CI to make this a failure")


def _resolve(tmp_path: Path, *requirement_files: Path) -> subprocess.CompletedProcess[str]:
    platforms = [arg for platform in PLATFORMS for arg in ("--platform", platform)]
    files = [arg for path in requirement_files for arg in ("-r", str(path))]
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--dry-run",
            "--ignore-installed",
            "--quiet",
            "--report",
            str(tmp_path / "report.json"),
            "--python-version",
            _base_python(),
            "--only-binary=:all:",
            *platforms,
            *files,
        ],
        capture_output=True,
        text=True,
        timeout=PIP_TIMEOUT,
        check=False,
    )


def test_nothing_the_base_pins_is_asked_for_again():
    pinned = {req.name.lower() for req in _requirements(CONSTRAINTS)} | {"tokenizers"}  # transformers' own
    asked = {req.name.lower() for req in _requirements(REQUIREMENTS)}
    assert asked.isdisjoint(pinned), asked & pinned
    for req in _requirements(REQUIREMENTS):
        assert req.specifier and any(s.operator == "<" for s in req.specifier), f"{req} needs an upper bound"


@pytest.mark.network
def test_image_requirements_resolve_with_the_base_images_packages(pypi, tmp_path):
    result = _resolve(tmp_path, REQUIREMENTS, CONSTRAINTS)
    errors = "\n".join(line for line in result.stderr.splitlines() if not line.startswith("WARNING"))
    assert result.returncode == 0, f"pip cannot resolve the image requirements with the base image's:\n{errors}"
    assert (tmp_path / "report.json").is_file()


@pytest.mark.network
def test_the_resolver_catches_the_conflict_the_image_had(pypi, tmp_path):
    """The check can fail: a ``tokenizers`` below what the base's transformers==4.57.1 needs (>=0.22)."""
    broken = tmp_path / "broken.txt"
    broken.write_text(REQUIREMENTS.read_text() + "tokenizers>=0.20,<0.22\n")
    result = _resolve(tmp_path, broken, CONSTRAINTS)
    assert result.returncode != 0
    assert "tokenizers" in result.stderr and "conflict" in result.stderr.lower()
