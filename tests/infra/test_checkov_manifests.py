"""Checkov on every stack's rendered Kubernetes manifests (issue 9 §7): each failure must be listed with
its reason in policies/checkov_skips.yaml, and each listed skip must still match something.

Checkov lives in its own virtualenv (``make checkov`` makes .venv-checkov; its pins cannot share ours).
Without it the tests skip saying so, except on CI (CI=true), where they fail."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from inference_platform.offline_plan.manifests import write_manifests
from tests.conftest import REPO, STACKS

SKIPS_FILE = REPO / "policies" / "checkov_skips.yaml"
CHECKOV_TIMEOUT_SECONDS = 300


def checkov_binary() -> Path:
    path = Path(os.environ.get("CHECKOV", REPO / ".venv-checkov" / "bin" / "checkov"))
    if path.is_file():
        return path
    message = f"checkov not found at {path}; run `make checkov` (or set CHECKOV to its path)"
    if os.environ.get("CI") == "true":
        pytest.fail(f"{message} (CI=true: tests must not skip)")
    pytest.skip(message)


def load_skips() -> dict[str, dict[str, Any]]:
    skips = yaml.safe_load(SKIPS_FILE.read_text())
    for check, entry in skips.items():
        assert set(entry) <= {"reason", "resources", "stacks"}, f"{check}: unknown keys {sorted(entry)}"
        assert entry.get("reason", "").strip(), f"{check}: every skip needs a reason"
    return skips


def skipped_by(skips: dict[str, dict[str, Any]], stack: str, check: str, resource: str) -> bool:
    """A ``resources`` item ending in ``*`` matches by prefix (Job names that carry a digest of their run)."""
    entry = skips.get(check)
    if entry is None or stack not in entry.get("stacks", [stack]):
        return False
    names = entry.get("resources", [resource])
    return any(resource == n or (n.endswith("*") and resource.startswith(n[:-1])) for n in names)


def run_checkov(binary: Path, directory: Path) -> list[dict[str, Any]]:
    """Checkov's failed checks on ``directory``; a run that does not report is an error, not a pass."""
    done = subprocess.run(
        [str(binary), "--framework", "kubernetes", "-d", str(directory), "-o", "json", "--quiet", "--compact"],
        capture_output=True,
        text=True,
        timeout=CHECKOV_TIMEOUT_SECONDS,
        env={**os.environ, "BC_SKIP_MAPPING": "TRUE", "CHECKOV_RUN_SCA_PACKAGE_SCAN_V2": "false"},
    )
    assert done.returncode in (0, 1), f"checkov exited {done.returncode}: {done.stderr[-2000:]}"
    reports = json.loads(done.stdout)
    reports = reports if isinstance(reports, list) else [reports]
    (report,) = [r for r in reports if r.get("check_type") == "kubernetes"]
    assert report["summary"]["passed"] > 0, "checkov checked nothing"
    return report["results"]["failed_checks"]


@pytest.fixture(scope="module")
def findings(stack_plan, tmp_path_factory) -> dict[str, list[tuple[str, str]]]:
    """(check id, resource) of every failure per stack; each stack scanned alone, so that graph checks
    (a NetworkPolicy covering a pod) never match across stacks."""
    binary = checkov_binary()
    out = {}
    for stack in STACKS:
        directory = tmp_path_factory.mktemp(f"manifests-{stack}")
        assert write_manifests(stack_plan(stack).run.resources, directory)
        out[stack] = sorted({(f["check_id"], f["resource"]) for f in run_checkov(binary, directory)})
    return out


@pytest.mark.parametrize("stack", STACKS)
def test_no_checkov_failure_outside_the_skip_list(findings, stack):
    skips = load_skips()
    unexplained = [
        f"{check} {resource}" for check, resource in findings[stack] if not skipped_by(skips, stack, check, resource)
    ]
    assert not unexplained, (
        f"{stack}: Checkov failures not in {SKIPS_FILE.relative_to(REPO)} (fix them, or add the check with "
        "its reason): " + "; ".join(unexplained)
    )


def test_every_skip_still_matches_a_finding(findings):
    skips = load_skips()
    used = {
        check
        for stack, found in findings.items()
        for check, resource in found
        if skipped_by(skips, stack, check, resource)
    }
    assert set(skips) <= used, f"stale entries in {SKIPS_FILE.name}: {sorted(set(skips) - used)}"


def test_the_skip_matcher_narrows_by_stack_and_resource():
    skips = {"CKV_A": {"reason": "r", "stacks": ["dev"], "resources": ["Pod.ns.p"]}, "CKV_B": {"reason": "r"}}
    assert skipped_by(skips, "dev", "CKV_A", "Pod.ns.p")
    assert not skipped_by(skips, "prod", "CKV_A", "Pod.ns.p")
    assert not skipped_by(skips, "dev", "CKV_A", "Pod.ns.other")
    assert skipped_by(skips, "npu", "CKV_B", "Anything.at.all")
    assert not skipped_by(skips, "dev", "CKV_C", "Pod.ns.p")
    prefixed = {"CKV_D": {"reason": "r", "resources": ["Job.ns.verification-*"]}}
    assert skipped_by(prefixed, "prod", "CKV_D", "Job.ns.verification-dc21830f68")
    assert not skipped_by(prefixed, "prod", "CKV_D", "Job.ns.engine-build-1")
    assert not skipped_by(prefixed, "prod", "CKV_D", "Job.other.verification-1")
