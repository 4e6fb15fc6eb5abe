"""What makes the distribution a release: one version that pyproject, the changelog and the package agree
on, the license, and the typing marker."""

from __future__ import annotations

import hashlib
import importlib.metadata as md
import re
import tomllib
from pathlib import Path

from packaging.version import Version

import inference_platform
from inference_platform import __version__
from tests.runtime_imports import REPO

# The Apache License 2.0 exactly as https://www.apache.org/licenses/LICENSE-2.0.txt serves it: the same
# bytes ship in s3transfer 0.19.3, googleapis-common-protos 1.75.0 and jsonpath-ng 1.16.0 (their
# dist-info LICENSE files, md5 3b83ef96387f14655fc854ddc3c6bd57), from which LICENSE was copied.
APACHE_2_SHA256 = "cfc7749b96f63bd31c3c42b5c471bf756814053e847c10f3eb003417bc523d30"
RELEASE = re.compile(r"^## (?P<version>\d+\.\d+\.\d+(?:\S*)?)(?: - (?P<date>\d{4}-\d{2}-\d{2}))?$", re.MULTILINE)


def _releases() -> list[str]:
    return [m["version"] for m in RELEASE.finditer((REPO / "CHANGELOG.md").read_text())]


def test_pyproject_reads_the_version_from_the_package():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert "version" not in project["project"] and "version" in project["project"]["dynamic"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "inference_platform.__version__"}


def test_the_newest_changelog_release_is_the_package_version():
    releases = _releases()
    assert releases and releases[0] == __version__, f"CHANGELOG.md's newest release {releases[:1]} != {__version__}"
    assert [Version(v) for v in releases] == sorted((Version(v) for v in releases), reverse=True)
    assert "## Unreleased" in (REPO / "CHANGELOG.md").read_text()


def test_the_installed_metadata_has_the_same_version():
    assert md.version("inference-platform") == __version__


def test_the_license_is_the_apache_2_text_unchanged():
    assert hashlib.sha256((REPO / "LICENSE").read_bytes()).hexdigest() == APACHE_2_SHA256
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert project["license"] == "Apache-2.0" and project["license-files"] == ["LICENSE"]


def test_the_package_is_marked_typed():
    assert (Path(inference_platform.__file__).parent / "py.typed").is_file()
