"""mypy over the public surface: the components other teams import (inference_platform.components), the shared
error type and the extras' messages, as the installed package lays them out.

The repository keeps one folder per area and setup.py maps them into the namespace; mypy reads files, not
import hooks, so the test lays the namespace out as links to the folders and checks that. Its cache
(build/mypy-cache) makes a rerun take seconds; a cold run about half a minute.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.runtime_imports import FOLDERS, NAMESPACE, REPO

PUBLIC = (f"{NAMESPACE}.components", f"{NAMESPACE}.errors", f"{NAMESPACE}.extras")


@pytest.mark.timeout(900)
def test_the_public_surface_type_checks(tmp_path):
    package = tmp_path / NAMESPACE
    package.mkdir()
    for source in (REPO / NAMESPACE).iterdir():
        if source.suffix == ".py" or source.name == "py.typed":
            (package / source.name).symlink_to(source)
    for folder in FOLDERS:
        (package / folder).symlink_to(REPO / folder, target_is_directory=True)
    packages = [arg for name in PUBLIC for arg in ("-p", name)]
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(REPO / "pyproject.toml"),
         "--cache-dir", str(REPO / "build" / "mypy-cache"), *packages],
        cwd=tmp_path, capture_output=True, text=True, timeout=840, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]
