"""make without a usable Python says so in one sentence (GNU make then exits 2), never a traceback."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from tests.runtime_imports import REPO


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_venv_without_a_python_that_can_make_one(tmp_path):
    result = subprocess.run(
        ["make", "-s", "-C", str(REPO), "PYTHON=/nonexistent/python3", f"VENV={tmp_path / 'venv'}", "venv"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert result.returncode == 2
    first = result.stderr.splitlines()[0]
    assert first.startswith(f"make: no Python that can create {tmp_path / 'venv'} (PYTHON='/nonexistent/python3')")
    assert "apt-get install python3-venv" in first and "Traceback" not in result.stderr
    assert not (tmp_path / "venv").exists()
