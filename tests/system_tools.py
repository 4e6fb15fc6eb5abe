"""System tools some tests run for real (Prometheus, promtool): found on PATH, else skipped with how to
install them, except on CI (CI=true), where a missing tool fails the test instead of hiding it."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

INSTALL_HINT = "install it with `make system-deps` (Debian/Ubuntu package `prometheus`)"


def require_tool(name: str) -> Path:
    found = shutil.which(name)
    if found:
        return Path(found)
    message = f"{name} is not on PATH; {INSTALL_HINT}"
    if os.environ.get("CI") == "true":
        pytest.fail(f"{message} (CI=true: tests must not skip)")
    pytest.skip(message)


def require_pypi(what: str) -> None:
    """Before pip must install from the index (a cached environment needs none): skip without PyPI, naming
    ``what`` cannot be built, except when ``CI`` is set, where that fails the test instead."""
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(urllib.request.Request("https://pypi.org/simple/", method="HEAD"), timeout=10):
            return
    except (urllib.error.URLError, OSError) as err:
        if os.environ.get("CI"):
            pytest.fail(f"PyPI is unreachable in CI ({err}); {what} cannot be built")
        pytest.skip(f"PyPI is unreachable ({err}); set CI to make this a failure")
