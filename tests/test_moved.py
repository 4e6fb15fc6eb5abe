"""The old import paths of moved modules (inference_platform/moved.py) keep working for one release: each warns
with the new path and the release that drops it, and gives the very module (or function) at the new path.

Each check runs in a fresh interpreter: a module imports (and warns) once per process, and the rest of the suite
has long imported the new paths."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from inference_platform import moved
from tests.conftest import REPO

PROBE = """
import importlib, json, sys, warnings
old, attribute = sys.argv[1], sys.argv[2] or None
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    module = importlib.import_module(old)
    value = getattr(module, attribute) if attribute else module
messages = [str(w.message) for w in caught if issubclass(w.category, DeprecationWarning)]
kind = type(value).__name__
print(json.dumps({"messages": messages, "module": value.__name__ if kind == "module" else value.__module__,
                  "qualname": getattr(value, "__qualname__", None), "file": getattr(value, "__file__", None),
                  "in_sys_modules": sys.modules.get(old) is not None}))
"""


def _probe(old: str, attribute: str = "") -> dict:
    result = subprocess.run(
        [sys.executable, "-c", PROBE, old, attribute], cwd=REPO, capture_output=True, text=True, timeout=120, check=True
    )
    return json.loads(result.stdout)


OLD_MODULES = sorted({**moved.MOVED_MODULES, **moved.MOVED_PACKAGES}.items())


@pytest.mark.parametrize(("old", "new"), OLD_MODULES, ids=[old for old, _ in OLD_MODULES])
def test_an_old_path_warns_and_is_the_module_at_the_new_path(old, new):
    found = _probe(old)
    assert found["module"] == new and found["in_sys_modules"]
    assert any(new in m and moved.REMOVED_IN in m and old in m for m in found["messages"]), found["messages"]


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("inference_platform.catalog.models", "inference_platform.catalog.models"),
        ("inference_platform.settings.serving", "inference_platform.settings.serving"),
    ],
)
def test_a_submodule_of_a_moved_package_is_the_same_module_object(old, new):
    code = (
        "import importlib, warnings\nwarnings.simplefilter('ignore')\n"
        f"a = importlib.import_module({old!r}); b = importlib.import_module({new!r})\n"
        "print(a is b, sum(1 for v in vars(a).values() if isinstance(v, type)))"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    same, classes = result.stdout.split()
    assert same == "True" and int(classes) > 0, result.stderr


NAMES = sorted((old, name, target) for old, names in moved.MOVED_NAMES.items() for name, target in names.items())


@pytest.mark.parametrize(("old", "name", "target"), NAMES, ids=[f"{o}.{n}" for o, n, _ in NAMES])
def test_a_function_that_left_its_module_still_answers_at_the_old_path(old, name, target):
    module, _, attribute = target.partition(":")
    found = _probe(old, name)
    assert found["module"] == module and found["qualname"] == attribute
    assert any(f"{old}.{name}" in m and f"{module}.{attribute}" in m for m in found["messages"]), found["messages"]


def test_the_shim_files_hold_nothing_but_the_hand_over():
    for old in {*moved.MOVED_MODULES, *moved.MOVED_PACKAGES}:
        parts = old.split(".")[1:]
        path = (
            REPO.joinpath(*parts, "__init__.py")
            if old in moved.MOVED_PACKAGES
            else REPO.joinpath(*parts[:-1], f"{parts[-1]}.py")
        )
        code = [
            line
            for line in path.read_text().splitlines()
            if line and not line.startswith((" ", '"""', "import", "from"))
        ]
        assert all(line.startswith(("sys.modules[__name__] = moved.resolve(__name__)", "moved.install()")) or '"""' in line
                   for line in code), f"{path} holds more than the shim: {code}"  # fmt: skip
        if old in moved.MOVED_PACKAGES:
            assert sorted(p.name for p in path.parent.iterdir() if p.suffix == ".py") == ["__init__.py"], path.parent


def test_the_changelog_names_every_old_path_and_the_release_that_drops_it():
    changelog = (REPO / "CHANGELOG.md").read_text()
    for old in [*moved.MOVED_MODULES, *moved.MOVED_PACKAGES, *moved.MOVED_NAMES]:
        assert f"`{old}`" in changelog, old
    assert f"removed in {moved.REMOVED_IN}" in changelog
