"""The GPU check (gpu_check/run.sh) cannot run here (no GPU, no Docker); what can be checked is:
the script parses, builds on the one pinned tag (inference_image/llmapi/release.py) without repeating it, its
serving section is one the settings accept, and its expected output is exactly the checks checks.py runs."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess

from inference_platform.settings.base import CheckContext
from inference_platform.settings.serving import ServingSettings
from tests.conftest import REPO

HERE = REPO / "gpu_check"  # a dev tool: not in the images (checks.py needs the openai client)
SCRIPT = HERE / "run.sh"


def _checks_module():
    spec = importlib.util.spec_from_file_location("gpu_checks", HERE / "checks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_script_parses_and_fails_fast():
    subprocess.run(["bash", "-n", str(SCRIPT)], check=True, timeout=30)
    text = SCRIPT.read_text()
    assert text.startswith("#!/usr/bin/env bash\n") and "\nset -euo pipefail\n" in text


def test_the_image_is_built_on_the_pinned_tag_read_from_the_one_pin():
    text = SCRIPT.read_text()
    assert "from inference_platform.inference_image.llmapi.release import TRITON_TAG" in text
    assert '--build-arg "TRITON_TAG=$tag"' in text and "inference_image/Dockerfile" in text
    assert re.search(r"^ARG TRITON_TAG=", (REPO / "inference_image" / "Dockerfile").read_text(), re.M)
    assert not re.search(r"\d\d\.\d\d-trtllm-python-py3", text), "the tag is repeated in the script"


def test_artifacts_go_through_the_manifest_and_the_entrypoint_verifies_them():
    text = SCRIPT.read_text()
    assert "inferctl artifacts upload" in text and "--engine-uri" in text and "/health" in text


def test_the_serving_section_is_accepted_by_the_settings():
    doc = json.loads((HERE / "serving.json").read_text())
    settings = ServingSettings.model_validate(doc)
    assert settings.problems(CheckContext(stack="gpu-check", environment="development", region=None)) == []
    assert settings.guided_decoding.backend != "none"  # the json-schema and round-trip checks need it


def test_the_expected_output_lists_every_check_in_order():
    names = [name for name, _ in _checks_module().checks(None, "m")]
    expected = (HERE / "expected_output.txt").read_text().splitlines()
    assert expected == [f"PASS {name}" for name in names] and len(names) == len(set(names)) == 11
