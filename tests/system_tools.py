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
