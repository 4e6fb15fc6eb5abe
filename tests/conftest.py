"""One mock engine for every test: the offline plan's recording engine (inference_platform.offline_plan.engine).

``stack_plan(name)`` plans a shipped stack once per session; ``run_components(fn)`` runs component
code under the same engine and returns what it registered.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from inference_platform.offline_plan.engine import ProgramRun, run_function
from inference_platform.offline_plan.recorder import RecordedResource

# Seconds per area at the end of every run (tests/area_report.py); nothing the run starts outlives it (tests/reaper.py);
# one local OpenAI stack per worker for the tests that only send it requests (tests/shared_stack.py); which worker
# runs what, in which order (tests/scheduling.py).
pytest_plugins = ("tests.area_report", "tests.reaper", "tests.shared_stack", "tests.scheduling")

REPO = Path(__file__).resolve().parents[1]
STACKS = ("dev", "prod", "npu")


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO


@pytest.fixture(scope="session")
def stack_plan() -> Callable[[str], Any]:
    """Plan of a shipped stack (program run + policy results), computed once per session."""
    from inference_platform.inferctl.plan.command import make_plan

    cache: dict[str, Any] = {}

    def get(stack: str) -> Any:
        if stack not in cache:
            cache[stack] = make_plan(REPO, stack)
        return cache[stack]

    return get


@pytest.fixture
def aws_env(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """Fake credentials and empty AWS config files: nothing can reach real AWS."""
    for name in list(os.environ):
        if name.startswith("AWS_"):
            monkeypatch.delenv(name)
    empty = tmp_path_factory.mktemp("aws-home")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(empty / "config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(empty / "credentials"))
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


@pytest.fixture
def run_components() -> Callable[..., ProgramRun]:
    return run_function


def by_type(resources: list[RecordedResource], type_: str) -> list[RecordedResource]:
    return [r for r in resources if r.type == type_]


def one(resources: list[RecordedResource], name: str) -> RecordedResource:
    found = [r for r in resources if r.name == name]
    assert len(found) == 1, f"expected one resource named {name}, found {[r.urn for r in found]}"
    return found[0]
