"""The batch image's Python environment, rebuilt from batch/Dockerfile's own pip steps (tests/inference_image/
image_env.py), runs both roles: a batch goes through an API and a worker started with that environment's
interpreter, outside the repository, with nothing of the development virtualenv. The environment holds only
the package and batch/requirements.txt's few libraries: no Pulumi, no accelerator or tokenizer libraries.

Needs PyPI when the environment must be (re)built (cached under build/image-env/); without it the test skips
unless CI is set.
"""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from tests.batch.lane_requests import chat_line, file_lines, submit, wait_finished
from tests.inference_image.image_env import REPO, entrypoint, image_env
from tests.inference_image.test_image_environment import _pypi

pytestmark = [pytest.mark.network, pytest.mark.motoserver, pytest.mark.live, pytest.mark.timeout(1200)]

DOCKERFILE = REPO / "batch" / "Dockerfile"
ALLOWED_TOP_LEVEL = {"aiohttp", "boto3", "prometheus-client", "inference-platform"}
"""What batch/requirements.txt names, and our package (their own dependencies come along)."""
FORBIDDEN = ("pulumi", "torch", "tritonclient", "tensorrt", "tokenizers", "numpy", "nvidia")


@pytest.fixture(scope="module")
def batch_env(tmp_path_factory):
    env = image_env(DOCKERFILE, tmp_path_factory.mktemp("batch-image"), before_pip=_pypi)
    print(f"\nbatch image environment ready in {env.seconds:.1f}s ({env.venv})", file=sys.stderr)
    return env


def test_the_image_runs_unprivileged_and_its_entrypoint_is_the_roles_module():
    text = DOCKERFILE.read_text()
    assert entrypoint(DOCKERFILE) == ["python", "-m", "inference_platform.batch"]
    assert re.search(r"^USER 1000:1000$", text, re.MULTILINE)
    assert re.search(r"^ARG PYTHON_DIGEST=$", text, re.MULTILINE) and "${PYTHON_DIGEST:+@${PYTHON_DIGEST}}" in text
    for line in (REPO / "batch" / "requirements.txt").read_text().splitlines():
        if line and not line.startswith("#"):
            assert re.search(r">=[\d.]+,<[\d.]+$", line), f"{line}: not a bounded range"


def test_the_environment_holds_only_the_lanes_libraries(batch_env):
    listed = subprocess.run(
        [str(batch_env.bin / "python"), "-m", "pip", "list", "--format=freeze", "--not-required"],
        capture_output=True, text=True, check=True, timeout=120,
    ).stdout  # fmt: skip
    top = {line.split("==")[0].lower().replace("_", "-") for line in listed.splitlines() if "==" in line}
    assert top - {"pip", "setuptools"} == ALLOWED_TOP_LEVEL
    everything = subprocess.run(
        [str(batch_env.bin / "python"), "-m", "pip", "list", "--format=freeze"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.lower()
    assert not [name for name in FORBIDDEN if re.search(rf"^{name}", everything, re.MULTILINE)]


def test_both_roles_run_a_batch_in_the_image_environment(batch_env, lane_factory, serving):
    lane = lane_factory()
    lane.python = str(batch_env.bin / "python")
    lane.env.pop("PYTHONPATH")  # the image's own installed package, not the repository
    api = lane.api()
    lane.worker(BATCH_SERVING_URL=serving.url)
    client = api.openai()
    lines = [chat_line(i) for i in range(20)]
    done = wait_finished(client, submit(client, lines).id, timeout=60)
    assert done.status == "completed"
    assert [o["custom_id"] for o in file_lines(client, done.output_file_id)] == [x["custom_id"] for x in lines]
    module = subprocess.run(
        [lane.python, "-c", "import inference_platform.batch as b; print(b.__file__)"],
        capture_output=True, text=True, check=True, cwd=lane.work, env={"PATH": "/usr/bin:/bin"},
    ).stdout  # fmt: skip
    assert module.startswith(f"{batch_env.venv}/lib/"), module


def test_a_bad_setting_exits_2_with_one_line_naming_it(batch_env, tmp_path):
    result = subprocess.run(
        [str(batch_env.bin / "python"), "-m", "inference_platform.batch", "worker"],
        capture_output=True, text=True, timeout=60, cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin", "AWS_REGION": "us-east-1", "BATCH_BUCKET": "b", "BATCH_QUEUE_URL": "ftp://x",
             "BATCH_DLQ_URL": "http://127.0.0.1:1/q", "BATCH_CONCURRENCY": "0", "BATCH_SERVING_URL": "http://127.0.0.1:1"},
    )  # fmt: skip
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert "BATCH_QUEUE_URL='ftp://x'" in result.stderr and "BATCH_CONCURRENCY='0'" in result.stderr


def test_the_development_virtualenv_runs_the_roles_on_the_images_ranges():
    """tests/batch runs the roles from .venv too: requirements-dev.txt (or pyproject's extras) must name the image's
    libraries with the very ranges of batch/requirements.txt."""
    import tomllib

    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    declared = {*project["dependencies"], *(d for extra in project["optional-dependencies"].values() for d in extra)}
    declared |= {line.strip() for line in (REPO / "requirements-dev.txt").read_text().splitlines()}
    image = [line for line in (REPO / "batch" / "requirements.txt").read_text().splitlines() if line and line[0] != "#"]
    assert [r for r in image if r not in declared] == []
