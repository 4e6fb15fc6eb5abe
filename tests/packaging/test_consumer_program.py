"""Another team's Pulumi program on the built wheel, installed with its core dependencies only.

The program (consumer_program/) has its own ``components/``, ``infra/`` and ``policies/`` packages, the
names the old distribution installed at the top level (issue 19: ``ModuleNotFoundError: No module named
'components.cluster'``). It is copied to a temporary directory and run the way Pulumi's Python language
host runs a program: a fresh interpreter of the program's virtualenv, the program directory as the working
directory and ``sys.path[0]``, ``runpy`` of the directory as ``__main__`` inside the root stack
(inference_platform.offline_plan.engine, the mock engine in place of the deployment engine).

Then ``inferctl`` from the same install, outside any checkout: ``--version``, ``plan`` of the program
(core only) and of the README's component example as written, each with the pack at its shipped enforcement
levels (mandatory where it ships mandatory: a program another team writes must pass what ours passes), and a
command whose extra is not installed (exit 2, naming the extra).

Needs PyPI the first time (the virtualenv's dependencies are cached under build/packaging-env/): without
it the tests skip, unless ``CI`` is set.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import textwrap
import tomllib
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from inference_platform import __version__
from tests.packaging.wheel_env import CACHE, REPO, WheelEnv, wheel_env
from tests.system_tools import require_pypi

# One worker builds and uses the cached virtualenv (two at once would race on build/packaging-env/).
pytestmark = [pytest.mark.network, pytest.mark.timeout(1800), pytest.mark.xdist_group("packaging-env")]

PROGRAM = Path(__file__).parent / "consumer_program"
COMPONENTS = {"inference:network:Network", "inference:compute:NodePool", "inference:storage:ModelStore",
              "inference:serving:InferenceService"}  # fmt: skip
RUN_TIMEOUT = 300

# What the language host does before the program's first line, and what the test reads afterwards.
DRIVER = textwrap.dedent(
    """
    import json, sys
    from pathlib import Path

    from inference_platform.offline_plan.engine import run_program

    run = run_program(Path.cwd(), "dev")
    print(json.dumps({
        "types": sorted({r.type for r in run.resources}),
        "resources": len(run.resources),
        "outputs": sorted(run.outputs),
        "modules": {n: getattr(sys.modules.get(n), "__file__", None) for n in ("components", "infra", "policies")},
    }))
    """
)


@pytest.fixture(scope="module")
def core(tmp_path_factory) -> WheelEnv:
    if not any(CACHE.glob("core-*/.installed")):
        require_pypi("the core virtualenv")
    work = tmp_path_factory.mktemp("wheel")
    return wheel_env(work, work / "pip.log")


@pytest.fixture
def program(tmp_path) -> Path:
    copy = tmp_path / "consumer"
    shutil.copytree(PROGRAM, copy, ignore=shutil.ignore_patterns("__pycache__"))
    return copy


def _run(env: WheelEnv, argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """``argv`` (argv[0] from the virtualenv's bin/ when it is there, else from the system's) with nothing of this
    checkout on the path, and the virtualenv's bin/ first on PATH (as an activated virtualenv has it)."""
    home = cwd / ".home"
    home.mkdir(exist_ok=True)
    environ = {"PATH": f"{env.bin}{os.pathsep}/usr/bin{os.pathsep}/bin", "HOME": str(home),
               "PYTHONDONTWRITEBYTECODE": "1"}  # fmt: skip
    program = env.bin / argv[0] if (env.bin / argv[0]).exists() else Path(shutil.which(argv[0]) or argv[0])
    return subprocess.run([str(program), *argv[1:]], cwd=cwd, env=environ, capture_output=True, text=True,
                          timeout=RUN_TIMEOUT, check=False)  # fmt: skip


def _describe(result: subprocess.CompletedProcess[str]) -> str:
    return f"exit {result.returncode}\nstdout:\n{result.stdout[-3000:]}\nstderr:\n{result.stderr[-3000:]}"


def test_the_wheel_installs_one_namespace_typed_and_licensed(core):
    with zipfile.ZipFile(core.wheel) as wheel:
        names = wheel.namelist()
        dist_info = f"inference_platform-{__version__}.dist-info"
        assert {n.split("/")[0] for n in names} == {"inference_platform", dist_info}
        assert "inference_platform/py.typed" in names
        assert (REPO / "LICENSE").read_bytes() == wheel.read(f"{dist_info}/licenses/LICENSE")
        metadata = wheel.read(f"{dist_info}/METADATA").decode()
    assert "License-Expression: Apache-2.0" in metadata and f"Version: {__version__}" in metadata
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert {line.split(": ")[1] for line in metadata.splitlines() if line.startswith("Provides-Extra")} == set(extras)


def test_the_core_install_holds_no_package_of_an_extra(core):
    """Measured, not asserted against a figure (figures go in docs/installing.md): the count and size printed
    here are the core install's. What is asserted: none of the extras' own packages came with it."""
    installed = {Requirement(name).name.lower().replace("_", "-") for name in core.distributions()}
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    extra_only = {Requirement(r).name.lower() for reqs in extras.values() for r in reqs} - {"inference-platform"}
    assert not installed & extra_only, f"the core install pulled extra-only packages: {sorted(installed & extra_only)}"
    sizes = core.distributions()
    print(
        f"\ncore install: {len(sizes)} distributions, {sum(sizes.values()) / 1e6:.0f} MB (pip, setuptools apart; "
        "no bytecode: tests/packaging/wheel_env.py)"
    )


def test_a_consumer_program_with_its_own_components_runs_as_the_language_host_runs_it(core, program):
    (program / "driver.py").write_text(DRIVER)
    result = _run(core, ["python", "-I", "driver.py"], program)
    assert result.returncode == 0, _describe(result)
    run = json.loads(result.stdout.splitlines()[-1])
    assert set(run["types"]) >= COMPONENTS, run["types"]
    assert run["outputs"] == ["bucket"]
    # Its own packages are the ones it imported, beside ours: nothing shadowed either way.
    for name, file in run["modules"].items():
        assert file == str(program / name / "__init__.py"), (name, file)


def test_inferctl_from_the_core_install_plans_the_program_outside_any_checkout(core, program):
    version = _run(core, ["inferctl", "--version"], program)
    assert (version.returncode, version.stdout.strip()) == (0, f"inferctl {__version__}"), _describe(version)
    (program / "policies" / "config").mkdir(parents=True)
    # A budget for its two GPUs, and nothing else: no enforcement level changed, the pack runs as shipped.
    (program / "policies" / "config" / "dev.json").write_text(
        json.dumps({"accelerator-budget": {"maxAccelerators": 8}})
    )
    plan = _run(core, ["inferctl", "plan", "--stack", "dev", "--quiet"], program)
    assert plan.returncode == 0, _describe(plan)
    assert "no violations" in plan.stdout, _describe(plan)
    assert f"policy config {program / 'policies' / 'config' / 'dev.json'}" in plan.stdout
    assert (program / "build" / "plan" / "dev.json").is_file()


def readme_example() -> tuple[str, str]:
    """The README's component example (its Python block) and the shell block that plans it, as written."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## Using the components from Python") : text.index("## Using the components from other")]
    (program,) = re.findall(r"```python\n(.*?)```", section, re.S)
    (shell,) = [block for block in re.findall(r"```sh\n(.*?)```", section, re.S) if "inferctl plan" in block]
    return program, shell


def test_the_readmes_component_example_plans_clean_as_written_from_the_wheel(core, tmp_path):
    """Issue 28: the example planned with 19 required-tags violations (exit 1), and nothing said why."""
    program, shell = readme_example()
    folder = tmp_path / "team-a"
    folder.mkdir()
    (folder / "__main__.py").write_text(program)
    plan = _run(core, ["bash", "-euo", "pipefail", "-c", shell], folder)
    assert plan.returncode == 0, _describe(plan)
    assert "no violations" in plan.stdout and "no policy configuration applies" in plan.stderr, _describe(plan)
    planned = json.loads((folder / "build" / "plan" / "dev.json").read_text())
    assert {"inference:keys:Keys", "inference:network:Network"} <= {r["type"] for r in planned["resources"]}


@pytest.mark.parametrize(
    ("argv", "extra"),
    [(["artifacts", "verify", "s3://bucket/models/m/v1/"], "cli"),
     (["capacity", "throughput", "--model", "Llama-3.1-8B", "--accelerator", "h100", "--tp", "1", "--isl", "1000",
       "--osl", "1000", "--plot", "tokens.png"], "cli")],
)  # fmt: skip
def test_a_command_whose_extra_is_missing_names_it_in_one_sentence(core, program, argv, extra):
    result = _run(core, ["inferctl", *argv], program)
    assert result.returncode == 2, _describe(result)
    assert f"needs the {extra!r} extra" in result.stderr and f"inference-platform[{extra}]" in result.stderr
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1, result.stderr
