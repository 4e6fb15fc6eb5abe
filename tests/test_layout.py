"""The contract with the real Pulumi CLI and Python host, checked without them."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib

import yaml


def test_pulumi_yaml_is_what_the_cli_expects(repo):
    project = yaml.safe_load((repo / "Pulumi.yaml").read_text())
    assert project["name"] == "inference-platform"
    assert project["runtime"] == {"name": "python", "options": {"toolchain": "pip", "virtualenv": ".venv"}}
    assert project["main"] == "infra/" and project["stackConfigDir"] == "stacks"
    for stack in ("dev", "prod", "npu"):
        assert (repo / "stacks" / f"Pulumi.{stack}.yaml").is_file()


def test_the_program_imports_components_as_the_real_host_runs_it(repo, tmp_path):
    """The host puts only infra/ on sys.path: components must come from the installed package."""
    code = "import sys; sys.path.insert(0, sys.argv[1]); import inference_platform.infra.program, inference_platform.components.network, inference_platform.policies.pack"
    result = subprocess.run(
        [sys.executable, "-I", "-c", code, str(repo / "infra")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    requirements = (repo / "requirements.txt").read_text().split()
    assert "-e" in requirements and ".[all]" in requirements  # the core and every extra, editable


def test_main_stays_a_few_lines_and_importing_the_program_creates_nothing(repo, run_components):
    main = (repo / "infra" / "__main__.py").read_text().strip().splitlines()
    assert len([line for line in main if line.strip() and not line.startswith(('"""', "#"))]) <= 3
    run = run_components(lambda: __import__("inference_platform.infra.program"))
    assert run.resources == []


def test_policy_pack_main_only_builds_the_pack(repo):
    text = (repo / "policies" / "__main__.py").read_text()
    assert "PolicyPack(" in text and "def " not in text
    pack = yaml.safe_load((repo / "policies" / "PulumiPolicy.yaml").read_text())
    assert pack["runtime"]["name"] == "python" and pack["runtime"]["options"]["virtualenv"] == "../.venv"


def test_every_dependency_range_has_an_upper_bound(repo):
    project = tomllib.loads((repo / "pyproject.toml").read_text())["project"]
    extras = [d for extra in project["optional-dependencies"].values() for d in extra]
    # An extra may name others of this distribution ("inference-platform[cli]"): that is no range.
    deps = [*project["dependencies"], *(d for d in extras if not d.startswith(f"{project['name']}["))]
    dev = [
        line for line in (repo / "requirements-dev.txt").read_text().splitlines() if line and not line.startswith("#")
    ]
    pinned = [
        line
        for line in (repo / "requirements-triton.txt").read_text().splitlines()
        if line and not line.startswith("#")
    ]
    for requirement in [*deps, *dev]:
        assert re.search(r"<\s*[\d.]+", requirement), f"{requirement} has no upper bound"
    assert all("==" in line for line in pinned)


def test_every_installed_folder_is_mapped_into_the_one_namespace(repo):
    """setup.py's FOLDERS are what installs under inference_platform (the import checker reads the same list): a
    new top-level package folder it does not list would be left out of the wheel."""
    from tests.runtime_imports import FOLDERS

    packages = {p.parent.name for p in repo.glob("*/__init__.py")}
    # tools/ holds `make lock` and `make deps-check`: run from the checkout, never installed.
    assert packages - {"tests", "bench", "tools", "inference_platform"} == set(FOLDERS)
    assert (repo / "inference_platform" / "py.typed").is_file()


def test_no_test_leaves_the_main_thread_without_an_event_loop(repo):
    """asyncio.run() unsets the main thread's loop and the Pulumi mock tests after it in the worker fail
    (tests/own_loop.py runs coroutines on a loop of their own)."""
    import ast

    def calls_asyncio_run(tree: ast.AST) -> bool:
        return any(
            isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute)
            and n.func.attr == "run"
            and isinstance(n.func.value, ast.Name)
            and n.func.value.id == "asyncio"
            for n in ast.walk(tree)
        )

    tests = sorted((repo / "tests").rglob("*.py"))
    offenders = [str(p.relative_to(repo)) for p in tests if calls_asyncio_run(ast.parse(p.read_text()))]
    assert offenders == [], f"use tests.own_loop.run_on_own_loop instead of asyncio.run in {offenders}"
