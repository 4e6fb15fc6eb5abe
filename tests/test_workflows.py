"""The GitHub workflows pass both workflow checks (run in `make test`): the GitHub workflow JSON schema
(check-jsonschema's vendored copy, offline) and zizmor's offline audit with no finding of medium
severity or above; every action is pinned by a full commit SHA."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
WORKFLOWS = sorted((REPO / ".github" / "workflows").glob("*.yml"))
BIN = Path(sys.executable).parent


def _run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd=REPO, check=False)


def test_the_workflows_exist():
    assert {w.name for w in WORKFLOWS} >= {"preview.yml", "deploy.yml", "deploy-stack.yml"}


def test_workflows_match_the_github_workflow_schema():
    result = _run(str(BIN / "check-jsonschema"), "--builtin-schema", "vendor.github-workflows", *map(str, WORKFLOWS))
    assert result.returncode == 0, result.stdout + result.stderr


def test_zizmor_finds_nothing_of_medium_severity_or_above():
    result = _run(str(BIN / "zizmor"), "--offline", "--min-severity", "medium", "--no-progress", ".github/workflows")
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("workflow", WORKFLOWS, ids=lambda p: p.name)
def test_every_action_is_pinned_by_commit_sha(workflow):
    for line in workflow.read_text().splitlines():
        match = re.match(r"\s*(?:-\s*)?uses:\s*(\S+)", line)
        if match and not match.group(1).startswith("./"):
            assert re.fullmatch(r"[\w.-]+/[\w./-]+@[0-9a-f]{40}", match.group(1)), line
            assert re.search(r"#\s*v\d", line), f"name the tag the SHA stands for: {line}"


def test_production_is_behind_its_environment_and_verify_is_last():
    deploy = (REPO / ".github" / "workflows" / "deploy.yml").read_text()
    assert "environment: production" in deploy
    stack = (REPO / ".github" / "workflows" / "deploy-stack.yml").read_text()
    steps = stack.split("\n      - ")
    assert "inferctl verify --stack" in steps[-1]
    assert "environment: ${{ inputs.environment }}" in stack
