"""Every entrypoint the images and their Jobs run starts in exactly the image's Python environment.

The images install this package with ``--no-deps`` (Pulumi stays out), so an entrypoint that imports
``pulumi`` on the way, even through a package ``__init__``, dies in the pod with ``ModuleNotFoundError``
(issue 17 §6). Here each Dockerfile's own pip steps are replayed into a virtualenv (image_env.py: the
Dockerfile and the files it names are parsed, not copied; the base image's packages are left out and named),
and then, in that environment:

- ``import pulumi`` fails, and no entrypoint even tries it (an audit hook logs every import attempt);
- every ``inferctl`` sub-command a Dockerfile's ENTRYPOINT or a component's Job or pod names answers ``--help``;
- every container of every shipped stack's plan that runs the image runs its real command line, with its
  ConfigMaps mounted under a scratch root, as far as this machine allows: settings loading and checking
  always, then up to the model store (unreachable here: the failure must be the store's, one line) or
  ``prepare --plan-only``.

Needs PyPI whenever pip must install (the environments are cached under build/image-env/, keyed by every
input; the package itself is reinstalled when its sources change): without it the tests skip, unless ``CI``
is set.
"""

from __future__ import annotations

import http.client
import os
import re
import socket
import subprocess
import sys
import textwrap
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from inference_platform.inferctl.cli import COMMANDS
from inference_platform.inferctl.plan.report import to_json
from inference_platform.processes import die_with_parent
from inference_platform.settings import stack_files
from inference_platform.settings.serving import BACKEND_VENDORS
from tests.inference_image.image_env import IMAGE, ImageEnv, entrypoint, image_commands, image_env, image_import_roots
from tests.runtime_imports import chain, closure
from tests.system_tools import require_pypi

pytestmark = [pytest.mark.network, pytest.mark.timeout(1200)]

DOCKERFILES = ("Dockerfile", "Dockerfile.neuron")
# Which image a stack's pods run: inference.image names a repository and tag, not a Dockerfile; the serving
# backend decides which of the two images can serve it (inference_image/README.md).
DOCKERFILE_FOR_BACKEND = {"tensorrtllm": "Dockerfile", "neuron": "Dockerfile.neuron"}
STACKS = ("dev", "prod", "npu")
RUN_TIMEOUT = 120


def _pypi() -> None:
    """Called before pip has to install anything: a cached environment needs no index."""
    require_pypi("the image environments")


_ENVS: dict[str, ImageEnv] = {}


@pytest.fixture(scope="module")
def env_of(tmp_path_factory) -> Any:
    def get(dockerfile: str) -> ImageEnv:
        if dockerfile not in _ENVS:
            _ENVS[dockerfile] = image_env(IMAGE / dockerfile, tmp_path_factory.mktemp(dockerfile), before_pip=_pypi)
            built = _ENVS[dockerfile]
            print(f"\n{dockerfile}: environment ready in {built.seconds:.1f}s ({built.venv})", file=sys.stderr)
            for note in built.notes:
                print(f"{dockerfile}: not as in the image: {note}", file=sys.stderr)
        return _ENVS[dockerfile]

    return get


@pytest.fixture(scope="module")
def audit(tmp_path_factory) -> Path:
    """A sitecustomize that logs every attempt to import a Pulumi module (failed ones too) to $IMAGE_ENV_AUDIT."""
    root = tmp_path_factory.mktemp("audit")
    (root / "sitecustomize.py").write_text(
        textwrap.dedent(
            """
            import os, sys

            _log = os.environ.get("IMAGE_ENV_AUDIT")

            def _hook(event, args):
                if event == "import" and _log and str(args[0]).split(".")[0].startswith("pulumi"):
                    with open(_log, "a") as out:
                        out.write(f"{args[0]}\\n")

            sys.addaudithook(_hook)
            """
        )
    )
    return root


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _run(env: ImageEnv, argv: list[str], audit: Path, tmp: Path, extra_env: dict[str, str] | None = None):
    """``argv`` in the image environment (argv[0] from its bin/), from a directory outside the repository."""
    log = tmp / "pulumi-imports.log"
    log.unlink(missing_ok=True)
    home = tmp / "home"
    home.mkdir(exist_ok=True)
    environ = {
        "PATH": f"{env.bin}{os.pathsep}/usr/bin{os.pathsep}/bin",
        "HOME": str(home),
        "PYTHONPATH": str(audit),
        "IMAGE_ENV_AUDIT": str(log),
        "PYTHONDONTWRITEBYTECODE": "1",
        # Nothing reaches AWS: fake credentials, and a store endpoint that refuses at once.
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_CONFIG_FILE": str(home / "aws-config"),
        "AWS_SHARED_CREDENTIALS_FILE": str(home / "aws-credentials"),
        "AWS_EC2_METADATA_DISABLED": "true",
        "AWS_ENDPOINT_URL": f"http://127.0.0.1:{_closed_port()}",
        "AWS_MAX_ATTEMPTS": "1",
        "AWS_RETRY_MODE": "standard",
        **(extra_env or {}),
    }
    exe = argv[0] if "/" in argv[0] else str(env.bin / argv[0])
    result = subprocess.run([exe, *argv[1:]], cwd=tmp, env=environ, capture_output=True, text=True,
                            timeout=RUN_TIMEOUT, check=False)  # fmt: skip
    attempted = log.read_text().split() if log.exists() else []
    return result, attempted


def _describe(argv: list[str], result: subprocess.CompletedProcess[str]) -> str:
    return f"$ {' '.join(argv)}\nexit {result.returncode}\nstdout:\n{result.stdout[-3000:]}\nstderr:\n{result.stderr[-3000:]}"


def _serving_image_containers(plan: dict[str, Any]) -> list[dict[str, Any]]:
    """Each container of the plan that runs the serving image, with its pod's volumes and the ConfigMaps."""
    config_maps = {
        r["inputs"]["metadata"]["name"]: r["inputs"].get("data") or {}
        for r in plan["resources"]
        if r["type"] == "kubernetes:core/v1:ConfigMap" and "name" in r["inputs"].get("metadata", {})
    }
    images = {
        (r["inputs"].get("spec", {}).get("template", {}).get("spec", {}).get("containers") or [{}])[0].get("image")
        for r in plan["resources"]
        if r["type"] == "kubernetes:apps/v1:Deployment" and r["name"] == "inference-deployment"
    }
    found = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if isinstance(node.get("containers"), list):
                volumes = {v["name"]: v for v in node.get("volumes") or []}
                for kind in ("initContainers", "containers"):
                    for container in node.get(kind) or []:
                        if container.get("image") in images:
                            found.append({"container": container, "volumes": volumes, "config_maps": config_maps})
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    for resource in plan["resources"]:
        walk(resource.get("inputs"))
    return found


def _materialize(item: dict[str, Any], root: Path) -> None:
    """The container's ConfigMap mounts as files under ``root`` (a CSI secret mount gets a test key)."""
    for mount in item["container"].get("volumeMounts") or []:
        volume = item["volumes"].get(mount["name"], {})
        target = root / mount["mountPath"].lstrip("/")
        target.mkdir(parents=True, exist_ok=True)
        if "configMap" in volume:
            data = item["config_maps"][volume["configMap"]["name"]]
            for entry in volume["configMap"].get("items") or [{"key": k, "path": k} for k in data]:
                (target / entry["path"]).write_text(data[entry["key"]])
        elif "csi" in volume:  # TEST DOUBLE: the Secrets Store CSI driver's files
            for flag_value in item["container"].get("command") or []:
                if flag_value.startswith(mount["mountPath"] + "/"):
                    (root / flag_value.lstrip("/")).write_text("test-api-key\n")


def _rooted(argv: list[str], root: Path) -> list[str]:
    return [str(root / a.lstrip("/")) if a.startswith("/") and i > 0 else a for i, a in enumerate(argv)]


@pytest.mark.parametrize("dockerfile", DOCKERFILES)
def test_the_environment_has_no_pulumi_and_its_settings_import_none(dockerfile, env_of, audit, tmp_path):
    env = env_of(dockerfile)
    result, _ = _run(env, ["python", "-c", "import pulumi"], audit, tmp_path)
    assert result.returncode != 0 and "No module named 'pulumi'" in result.stderr, _describe(["import pulumi"], result)
    code = (
        "import importlib, pkgutil, sys\n"
        "import inference_platform.settings, inference_platform.inference_image\n"
        "names = ['inference_platform.settings.' + m.name for m in pkgutil.iter_modules(inference_platform.settings.__path__)]\n"
        "names += ['inference_platform.inference_image.entrypoint', 'inference_platform.inference_image.prepare', 'inference_platform.inferctl.cli']\n"
        "names += list(sys.argv[1:])\n"
        "for name in names: importlib.import_module(name)\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0].startswith('pulumi')))\n"
    )
    argv = ["python", "-c", code, *COMMANDS.values()]
    result, attempted = _run(env, argv, audit, tmp_path)
    assert result.returncode == 0, _describe(argv[:2], result)
    assert result.stdout.strip() == "[]" and attempted == [], attempted


# Packages the images' code imports that a virtualenv built from the pip steps does not have, and where the
# image gets them (or why it never needs them). Anything else the commands can import must be installed.
NOT_FROM_PIP_STEPS = {
    "triton_python_backend_utils": "Triton's Python backend hands it to the model processes it starts",
    "outlines_core": "the CPU stand-in engine only (inference_image/testing/cpu_llm_api), never run in an image",
}
FROM_THE_BASE_IMAGE = {
    "Dockerfile": {
        # tensorrt_llm itself is imported by name at run time (llmapi/model.py's LLM_ENGINE_MODULE), which the
        # static closure does not follow; the base image is what carries it.
        **dict.fromkeys(
            ("torch", "tokenizers", "huggingface_hub", "numpy", "transformers", "xgrammar"),
            "nvcr.io/nvidia/tritonserver:*-trtllm-python-py3 (base_image_constraints.txt; TensorRT-LLM's own "
            "requirements: numpy<2, transformers, xgrammar, its guided-decoding backend)",
        ),
        "neuronx_distributed_inference": "the Neuron builder only (inference_image/builders/neuron.py)",
    },
    "Dockerfile.neuron": {
        **dict.fromkeys(
            ("torch", "tokenizers", "huggingface_hub", "neuronx_distributed_inference", "transformers"),
            "the Neuron SDK step (torch-neuronx, neuronx-distributed-inference and their dependencies)",
        ),
        # The guide compile worker imports it only where it is installed (openai_api/guides.py
        # available_compiler): the Neuron engine has no guided decoding, so its server compiles no guide.
        "xgrammar": "optional: imported only where installed (guides.available_compiler)",
    },
}


@pytest.mark.parametrize("dockerfile", DOCKERFILES)
def test_every_package_the_images_code_imports_is_installed(dockerfile, env_of, audit, tmp_path):
    """Statically: every third-party package reachable from what the image runs (tests/runtime_imports.py),
    checked for in the environment. Catches an import only some path takes (``inferctl verify``'s tritonclient
    was missing from the Neuron image)."""
    parents, third = closure(image_import_roots())
    assert not [p for p in third if p.startswith("pulumi")], third
    env = env_of(dockerfile)
    code = "import importlib.util, sys\nprint(' '.join(n for n in sys.argv[1:] if importlib.util.find_spec(n) is None))"
    result, _ = _run(env, ["python", "-c", code, *sorted(third)], audit, tmp_path)
    assert result.returncode == 0, result.stderr
    elsewhere = {**NOT_FROM_PIP_STEPS, **FROM_THE_BASE_IMAGE[dockerfile]}
    missing = {
        name: " -> ".join(chain(parents, third[name])) for name in result.stdout.split() if name not in elsewhere
    }
    assert missing == {}, f"{dockerfile}: imported by the image's code but not installed: {missing}"
    stale = sorted(set(elsewhere) - set(third))
    assert stale == [], f"no longer imported by the image's code: drop {stale} from the tables above"


@pytest.mark.parametrize("dockerfile", DOCKERFILES)
def test_every_command_the_image_runs_answers_help(dockerfile, env_of, audit, tmp_path):
    env = env_of(dockerfile)
    subcommands = image_commands()
    # The serving image's own entrypoint is a module (SERVE_ENTRYPOINT), not a CLI command; its init container still
    # runs inferctl for artifacts (verify and loadtest run in the verification image).
    assert ("inferctl", "artifacts", "download") in subcommands, subcommands
    assert ("inferctl", "verify") not in subcommands, subcommands
    for argv in sorted({*subcommands, ("inferctl",), ("python", *SERVE_ENTRYPOINT[1:])}):
        result, attempted = _run(env, [*argv, "--help"], audit, tmp_path)
        assert result.returncode == 0 and "usage:" in result.stdout, _describe([*argv, "--help"], result)
        assert attempted == [], f"{' '.join(argv)} tried to import {attempted}"


SERVE_ENTRYPOINT = ("python3", "-m", "inference_platform.inference_image.serve")


def _expected(sub: str) -> tuple[list[str], int, str]:
    """Extra flags that stop a command where this machine ends, its exit status there, and a pattern of what
    it says: each got through settings loading and checking, then met the missing model store or endpoint."""
    if sub == "prepare":  # the build plan (JSON), made from the settings; building needs the accelerators
        return ["--plan-only"], 0, r'^\{\n  "'
    if sub == "serve":
        return ["--prepare-only"], 1, r"serve: engine artifact s3://\S+: cannot reach S3"
    if sub == "artifacts":
        return [], 1, r"s3://\S+: check AWS_ENDPOINT_URL"
    if sub == "verify":
        return [], 1, r"FAIL +smoke +GET https://127\.0\.0\.1:\d+/health: .*[Rr]efused"
    raise AssertionError(f"no expectation for `inferctl {sub}` yet: add one here")


@pytest.mark.parametrize("stack", STACKS)
def test_every_container_of_the_stack_runs_its_command_in_its_image(stack, stack_plan, env_of, audit, tmp_path):
    plan = to_json(stack_plan(stack))
    backend = stack_files.load(stack).serving.backend
    assert set(DOCKERFILE_FOR_BACKEND) == set(BACKEND_VENDORS), "a new backend needs its image here"
    dockerfile = DOCKERFILE_FOR_BACKEND[backend]
    env = env_of(dockerfile)
    items = _serving_image_containers(plan)
    ran = []
    for item in items:
        container = item["container"]
        argv = list(container.get("command") or [*entrypoint(IMAGE / dockerfile), *(container.get("args") or [])])
        if argv[:3] == list(SERVE_ENTRYPOINT):
            # The image's own entrypoint module: run it with the environment's interpreter.
            argv = ["python", *argv[1:]]
        elif argv[0] != "inferctl":
            continue  # cp, kubectl, sh: not ours
        root = tmp_path / container["name"]
        _materialize(item, root)
        argv = _rooted(argv, root)
        sub = "serve" if argv[0] == "python" else argv[1]
        extra, status, says = _expected(sub)
        if sub == "verify":  # the in-cluster URL does not exist here: a port that refuses at once
            argv[argv.index("--url") + 1] = f"https://127.0.0.1:{_closed_port()}"
        argv += extra
        env_vars = {e["name"]: e["value"] for e in container.get("env") or [] if "value" in e}
        env_vars = {k: str(root / v.lstrip("/")) if v.startswith("/") else v for k, v in env_vars.items()}
        env_vars.pop("AWS_ENDPOINT_URL", None)
        result, attempted = _run(env, argv, audit, root, env_vars)
        described = _describe(argv, result)
        assert attempted == [], f"{container['name']} tried to import {attempted}\n{described}"
        assert "Traceback" not in result.stderr and "ModuleNotFoundError" not in result.stderr, described
        assert result.returncode == status, described
        assert re.search(says, result.stdout + result.stderr, re.MULTILINE), described
        ran.append(
            f"{container['name']}: {' '.join(argv[:2])} -> exit {result.returncode}: {(result.stdout + result.stderr).strip()[-600:]}"
        )
    assert ran, f"{stack}: no container runs inferctl from the serving image"
    print(f"\n{stack} ({dockerfile}):\n  " + "\n  ".join(ran), file=sys.stderr)


def _openai_model_dir(root: Path) -> tuple[Path, Any]:
    """The tensorrt_llm model's config.pbtxt and 1/model.yaml as the renderer writes them, over the weightless test
    checkpoint: what the pod's OpenAI server reads."""
    import yaml

    from inference_platform.inference_image.llmapi.repository import render_config, render_model_yaml
    from inference_platform.inference_image.testing.cpu_llm_api.checkpoint import write_checkpoint

    serving = stack_files.load("dev").serving
    checkpoint = write_checkpoint(root / "checkpoint")
    model_dir = root / "tensorrt_llm"
    (model_dir / "1").mkdir(parents=True)
    (model_dir / "config.pbtxt").write_text(render_config(serving), encoding="utf-8")
    args = render_model_yaml(serving, checkpoint_dir=checkpoint)
    (model_dir / "1" / "model.yaml").write_text(yaml.safe_dump(args), encoding="utf-8")
    return model_dir, serving


@pytest.fixture
def refusing_port():
    """A loopback port bound for the whole test but never listening: a connect to it is refused, and no other test's
    server can take it meanwhile (a port only free at one instant was, once: Triton's URL then answered 404)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield sock.getsockname()[1]


def test_the_openai_server_serves_in_the_gpu_image_environment(env_of, audit, tmp_path, refusing_port):
    """The pod's OpenAI server (python -m inference_platform.inference_image.openai_api) starts in the serving
    image's environment and answers: its model list, OpenAI's 400 for a prompt over the input limit (decided
    before the engine), and 503s in OpenAI's shape while Triton is not there."""
    import json

    env = env_of("Dockerfile")
    model_dir, serving = _openai_model_dir(tmp_path)
    port = _closed_port()
    log = tmp_path / "openai.log"
    argv = [str(env.bin / "python"), "-m", "inference_platform.inference_image.openai_api", "--model-dir",
            str(model_dir), "--served-model-name", serving.model, "--triton-url", f"http://127.0.0.1:{refusing_port}",
            "--host", "127.0.0.1", "--port", str(port)]  # fmt: skip
    environ = {
        "PATH": f"{env.bin}{os.pathsep}/usr/bin{os.pathsep}/bin",
        "HOME": str(tmp_path),
        "PYTHONPATH": str(audit),
    }
    with log.open("wb") as out:
        process = subprocess.Popen(
            argv, cwd=tmp_path, env=environ, stdout=out, stderr=subprocess.STDOUT, preexec_fn=die_with_parent()
        )
    try:
        base = f"http://127.0.0.1:{port}"

        def call(path: str, body: dict | None = None) -> tuple[int, dict]:
            data = None if body is None else json.dumps(body).encode()
            request = urllib.request.Request(base + path, data=data, headers={"content-type": "application/json"})
            try:
                with urllib.request.urlopen(request, timeout=10) as response:
                    return response.status, json.loads(response.read())
            except urllib.error.HTTPError as err:
                return err.code, json.loads(err.read())

        deadline = time.monotonic() + RUN_TIMEOUT
        while True:
            assert process.poll() is None, log.read_text()
            try:
                status, models = call("/v1/models")
                break
            except (urllib.error.URLError, ConnectionError, http.client.HTTPException):  # not yet listening
                assert time.monotonic() < deadline, log.read_text()
                time.sleep(0.2)
        assert status == 200 and [m["id"] for m in models["data"]] == [serving.model]
        status, body = call("/health")
        assert status == 503 and body["error"]["type"] == "service_unavailable", body
        chat = {"model": serving.model, "messages": [{"role": "user", "content": "hi"}]}
        status, body = call("/v1/chat/completions", chat)
        assert status == 503 and "unreachable" in body["error"]["message"], body
        long = chat | {"messages": [{"role": "user", "content": "x" * serving.max_input_len}]}
        status, body = call("/v1/chat/completions", long)
        assert (status, body["error"]["code"], body["error"]["param"]) == (400, "context_length_exceeded", "messages")
    finally:
        process.terminate()
        process.wait(timeout=30)
