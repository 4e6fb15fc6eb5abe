"""tests/scheduling.py's xdist groups reach pytest-xdist's scheduler, and waiting tests start first.

The groups once did not: xdist's worker plugin registers after the conftest, so its hook ran first and turned the
marks into scheduling scopes before the conftest had added any; nothing failed, the groups were just ignored.
Checked on a pytest run of its own with the same plugin, as a worker sees it.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

from tests.conftest import REPO

CONFTEST = """
import pytest

pytest_plugins = ("tests.scheduling",)  # as tests/conftest.py registers it


@pytest.fixture(scope="session")
def stack_plan():
    return None


@pytest.fixture(scope="session")
def shared_stack():
    return None
"""
TESTS = """
import pytest


def test_plain():
    pass


def test_plans(stack_plan):
    pass


@pytest.mark.live
def test_shares_the_stack(shared_stack):
    pass


@pytest.mark.live
@pytest.mark.timeout(600)
def test_waits_longest():
    pass
"""


def test_the_groups_are_the_schedulers_scopes(tmp_path):
    (tmp_path / "conftest.py").write_text(CONFTEST)
    (tmp_path / "test_grouped.py").write_text(TESTS)
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    live: a live test\n")
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "1", "--dist", "loadgroup", "-v"],
        cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert "test_grouped.py::test_plans@stack-plans" in result.stdout, result.stdout
    assert "test_grouped.py::test_shares_the_stack@openai-stack" in result.stdout, result.stdout
    assert re.search(r"PASSED test_grouped\.py::test_plain\s*$", result.stdout, re.MULTILINE), result.stdout  # no group
    # One worker runs them in its order: the longest-bounded waiting test, the other waiting one, then the rest.
    ran = re.findall(r"PASSED test_grouped\.py::(\w+)", result.stdout)
    assert ran[:2] == ["test_waits_longest", "test_shares_the_stack"], ran
