"""serving.artifacts.{engine,tokenizer}ManifestSha256 (issue 9 §5): production pins the manifests it
serves; a missing or malformed pin ends `inferctl plan` with exit 2 naming the key."""

from __future__ import annotations

import copy

import pytest
import yaml

from inference_platform.inferctl.cli import main as inferctl
from tests.conftest import REPO
from tests.settings.test_inference import _stack_file, problems, stack_values

KEYS = ("serving.artifacts.engineManifestSha256", "serving.artifacts.tokenizerManifestSha256")


def _serving(stack: str, artifacts: dict | None) -> dict:
    serving = copy.deepcopy(stack_values(stack)["serving"])
    serving.pop("artifacts", None)
    if artifacts is not None:
        serving["artifacts"] = artifacts
    return serving


@pytest.mark.parametrize("stack", ["prod", "npu"])
def test_production_requires_both_pins(stack: str) -> None:
    assert stack_values(stack)["serving"]["artifacts"].keys() == {"engineManifestSha256", "tokenizerManifestSha256"}
    found = problems({"serving": _serving(stack, None)}, stack)
    assert all("production serves only the pinned version" in found[key] for key in KEYS)


def test_development_accepts_no_pin_and_validates_a_given_one() -> None:
    assert "artifacts" not in stack_values("dev")["serving"]
    bad = {"engineManifestSha256": "sha256:" + "a" * 64, "tokenizerManifestSha256": "A" * 64}
    found = problems({"serving": _serving("dev", bad)})
    assert all("64 lower-case hex digits" in found[key] for key in KEYS), found


def test_plan_exits_2_naming_the_missing_pin(tmp_path, capsys) -> None:
    stack_file = _stack_file(tmp_path, "prod", {})
    doc = yaml.safe_load(stack_file.read_text())
    doc["config"]["inference-platform:serving"] = _serving("prod", {"engineManifestSha256": "e" * 64})
    stack_file.write_text(yaml.safe_dump(doc))
    code = inferctl(["plan", "--stack", "prod", "--stack-file", str(stack_file), "--program", str(REPO),
                     "--out", str(tmp_path / "out"), "--quiet"])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2 and f"{KEYS[1]}: missing" in err and KEYS[0] not in err, err
