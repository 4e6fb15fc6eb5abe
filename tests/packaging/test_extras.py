"""The core install carries what the components, settings, policies and the offline planner import; each
inferctl command imports nothing beyond the core and the extra inference_platform/extras.py names for it.

Read from the sources (tests/runtime_imports.py, deep: what a handler imports when it runs), against what
pyproject.toml's requirements bring, transitively, as this virtualenv's package metadata says. The consumer
test (test_consumer_program.py) checks the same on a real core install.
"""

from __future__ import annotations

import functools
import importlib.metadata as md
import re
import sys
import tomllib

import pytest
from packaging.requirements import Requirement

from inference_platform.extras import COMMAND_EXTRAS, DISTRIBUTION, IMAGE_COMMANDS, missing_package_message
from inference_platform.inferctl.cli import COMMANDS, main
from tests.runtime_imports import MODULES, NAMESPACE, REPO, closure, short_name

PROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
# The library rooms a Pulumi program (or the policy pack) runs: the core install must carry all they import.
CORE_ROOMS = ("components", "infra", "policies", "planners", "offline_plan", "errors", "processes", "extras")


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


@functools.cache
def _imports_of_distribution() -> dict[str, frozenset[str]]:
    found: dict[str, set[str]] = {}
    for module, dists in md.packages_distributions().items():
        for dist in dists:
            found.setdefault(_normal(dist), set()).add(module)
    return {dist: frozenset(modules) for dist, modules in found.items()}


def provided(requirements: tuple[str, ...]) -> frozenset[str]:
    """Top-level import names the requirements install, with their dependencies (markers evaluated here)."""
    names: set[str] = set()
    seen: set[tuple[str, frozenset[str]]] = set()
    work = [Requirement(r) for r in requirements]
    while work:
        req = work.pop()
        key = (_normal(req.name), frozenset(req.extras))
        if key in seen:
            continue
        seen.add(key)
        if key[0] == DISTRIBUTION:
            optional = PROJECT["optional-dependencies"]
            work += [Requirement(r) for extra in req.extras for r in optional[extra]]
            continue
        names |= _imports_of_distribution().get(key[0], frozenset())
        for text in md.requires(req.name) or ():
            dep = Requirement(text)
            envs = [{"extra": e} for e in req.extras] or [{"extra": ""}]
            if dep.marker is None or any(dep.marker.evaluate(env) for env in envs):
                work.append(dep)
    return frozenset(names)


CORE = provided(tuple(PROJECT["dependencies"]))


def _third_party(roots: dict[str, bool]) -> dict[str, list[str]]:
    parents, third = closure(roots)
    chain: dict[str, list[str]] = {}
    for package, module in third.items():
        path = [module]
        while parents.get(path[-1]) is not None:
            path.append(parents[path[-1]])  # type: ignore[arg-type]
        chain[package] = [short_name(m) for m in path[::-1]]
    return chain


def test_the_core_carries_everything_a_pulumi_program_and_the_pack_import():
    roots = {m: True for m in MODULES if m.startswith(NAMESPACE) and short_name(m).split(".")[0] in CORE_ROOMS}
    missing = {p: c for p, c in _third_party(roots).items() if p not in CORE}
    assert not missing, f"imported by the core rooms but not installed by the core: {missing}"


# serve and prepare run in the serving images, whose Dockerfiles install what they import
# (tests/inference_image/test_image_environment.py runs them there).
@pytest.mark.parametrize("command", sorted(set(COMMANDS) - IMAGE_COMMANDS))
def test_each_command_imports_only_the_core_and_its_extra(command):
    extra = COMMAND_EXTRAS.get(command)
    allowed = CORE | (provided((f"{DISTRIBUTION}[{extra}]",)) if extra else frozenset())
    missing = {p: c for p, c in _third_party({COMMANDS[command]: True}).items() if p not in allowed}
    assert not missing, f"inferctl {command} imports packages neither the core nor [{extra}] installs: {missing}"


def test_every_extra_named_exists_and_all_holds_them_all():
    extras = set(PROJECT["optional-dependencies"])
    assert set(COMMAND_EXTRAS.values()) <= extras
    assert provided((f"{DISTRIBUTION}[all]",)) >= provided(tuple(f"{DISTRIBUTION}[{e}]" for e in extras - {"all"}))


def test_a_missing_package_is_one_sentence_naming_the_extra(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "boto3", None)  # import boto3 -> ModuleNotFoundError
    for name in [m for m in sys.modules if m.startswith(f"{NAMESPACE}.artifacts.")]:
        monkeypatch.delitem(sys.modules, name)
    assert main(["artifacts", "verify", "s3://bucket/models/m/v1/"]) == 2
    assert capsys.readouterr().err == (
        "inferctl artifacts: needs the 'cli' extra (missing Python package 'boto3'): "
        "pip install 'inference-platform[cli]'\n"
    )


def test_a_missing_module_of_our_own_is_not_passed_off_as_an_extra():
    err = ModuleNotFoundError("No module named 'inference_platform.nowhere'", name="inference_platform.nowhere")
    assert missing_package_message("smoke", err) is None
    image = missing_package_message("prepare", ModuleNotFoundError("x", name="tensorrt_llm"))
    assert image is not None and "serving images" in image
