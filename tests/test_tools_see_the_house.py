"""Standard tools resolve imports the way the installed package does (docs/architecture.md, "Tools see the
house"): ruff counts ``inference_platform`` as first-party, and mypy, from the repository root with the project's
configuration, finds ``inference_platform.<folder>`` through the links tools/namespace_links.py lays out."""

from __future__ import annotations

import subprocess
import sys
import tomllib

import pytest

from tests.conftest import REPO
from tests.runtime_imports import FOLDERS
from tools import namespace_links

CONFIG = tomllib.loads((REPO / "pyproject.toml").read_text())


def test_the_links_cover_the_root_package_and_every_mapped_folder(tmp_path):
    package = namespace_links.lay_out(tmp_path)
    for folder in FOLDERS:
        assert (package / folder).resolve() == (REPO / folder).resolve()
        assert (package / folder / "__init__.py").is_file()
    assert (package / "__init__.py").resolve() == (REPO / "inference_platform" / "__init__.py").resolve()
    assert (package / "py.typed").is_file()
    namespace_links.lay_out(tmp_path)  # again: replaces, never nests
    assert not (package / "catalog" / "catalog").exists()


def test_the_tools_point_at_the_links_and_ruff_knows_the_house():
    root = str(namespace_links.DEFAULT_ROOT)
    assert CONFIG["tool"]["mypy"]["mypy_path"] == root
    assert CONFIG["tool"]["pyright"]["extraPaths"] == [root]
    assert "inference_platform" in CONFIG["tool"]["ruff"]["lint"]["isort"]["known-first-party"]


# It rewrites build/namespace: not while tests/packaging/test_types.py has mypy read it.
@pytest.mark.xdist_group("namespace-links")
def test_mypy_from_the_repository_root_resolves_the_namespace(tmp_path):
    namespace_links.main(["--root", str(REPO / namespace_links.DEFAULT_ROOT)])
    probe = tmp_path / "probe.py"
    probe.write_text(
        "from inference_platform.catalog import instance\nfrom inference_platform.settings import Settings\n"
        "reveal_type(instance)\nreveal_type(Settings.production)\n"
    )
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(REPO / "pyproject.toml"), "--follow-imports=silent",
         "--cache-dir", str(tmp_path / "cache"), str(probe)],
        cwd=REPO, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert "InstanceType" in result.stdout and "Cannot find implementation" not in result.stdout, result.stdout
