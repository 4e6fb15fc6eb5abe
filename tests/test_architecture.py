"""The house rules of docs/architecture.md, checked: rooms by area, one-way dependencies, no import circles."""

from __future__ import annotations

import ast
import importlib
import inspect
import subprocess
import sys

import pulumi
import pytest

from inference_platform import moved
from tests.conftest import REPO
from tests.runtime_imports import FOLDERS, NAMESPACE, PACKAGES, module_name, short_name

# Who may import whom, by folder (each installs as inference_platform.<folder>): each may import only itself,
# the folders listed and third-party code. The shared layers sit at the bottom: the catalog is data (and the
# contracts two rooms share), the planners compute over it, the settings validate a stack with both; none of
# them imports anything above it. Components build on the three; the library wing (artifacts, offline_plan,
# loadgen) sits below the command layer: inferctl may import everything, and nothing imports inferctl but bench.
# The namespace root (inference_platform: the error type, processes, the old-path shims) is below everything.
ALLOWED = {
    "inference_platform": (),
    "catalog": ("inference_platform",),
    "planners": ("inference_platform", "catalog"),
    "settings": ("inference_platform", "catalog", "planners"),
    "artifacts": ("inference_platform", "catalog"),
    # The batch image's code (the Batch API and the queue workers): the catalog's contracts only.
    "batch": ("catalog",),
    "components": ("inference_platform", "catalog", "planners"),
    "policies": ("inference_platform", "catalog", "planners", "components"),
    "loadgen": ("inference_platform", "catalog", "planners", "settings", "artifacts"),
    # The image reads a stack's files with the settings' stack-file reader (no Pulumi module in it).
    "inference_image": ("inference_platform", "catalog", "planners", "settings", "artifacts"),
    "infra": ("inference_platform", "catalog", "planners", "settings", "components"),
    "offline_plan": (
        "inference_platform", "catalog", "planners", "settings", "infra", "components", "policies",
        "inference_image",
    ),
    # The local stand-in of the rate-limit service speaks the batch image's copy of its wire protocol
    # (batch/rate_limit_protocol.py): one definition of the messages, which the batch lane debits budgets with.
    "inferctl": (
        "inference_platform", "catalog", "planners", "settings", "infra", "components", "policies",
        "inference_image", "artifacts", "offline_plan", "loadgen", "batch",
    ),
    "bench": ("inferctl", "infra", "components", "planners", "policies", "inference_image", "artifacts",
              "offline_plan", "loadgen", "inference_platform", "catalog", "settings"),
}  # fmt: skip
LAYERS = (
    "inference_platform", "catalog", "planners", "settings", "artifacts", "batch", "components", "policies",
    "loadgen", "inference_image", "infra", "offline_plan", "inferctl", "bench",
)  # fmt: skip
"""Bottom first: every arrow of ALLOWED points to an earlier entry (no arrow up, so no circle between rooms)."""
SHIMS = frozenset({*moved.MOVED_PACKAGES, *moved.MOVED_MODULES})
"""The old paths of moved modules (inference_platform/moved.py): files that only hand over to the new path."""
AREAS = sorted(
    p.name
    for p in (REPO / "components").iterdir()
    if (p / "__init__.py").is_file() and f"inference_platform.components.{p.name}" not in SHIMS
)
MODULES = {module_name(p): p for pkg in PACKAGES for p in (REPO / pkg).rglob("*.py")}


def _resolve(name: str) -> str | None:
    parts = name.split(".")
    while parts and ".".join(parts) not in MODULES:
        parts.pop()
    return ".".join(parts) or None


def _imports(module: str) -> set[str]:
    """Every first-party module ``module`` imports, at any depth of its code (TYPE_CHECKING included: a
    circle of type names is still a circle). A package's ``__init__`` that Python runs on the way to a
    submodule is not counted: that is how packages work, not a dependency the code chose."""
    path = MODULES[module]
    is_package = path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(filter(None, (_resolve(alias.name) for alias in node.names)))
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = module.split(".") if is_package else module.split(".")[:-1]
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                target = f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else _resolve(base)
                if target:
                    found.add(target)
    found.discard(module)
    return found


GRAPH = {module: _imports(module) for module in MODULES}


def _folder_module(module: str) -> bool:
    """A module of one of the mapped folders (inference_platform.<folder>...), not of the namespace root."""
    return module.startswith(f"{NAMESPACE}.") and module.split(".")[1] in FOLDERS


def _owner(module: str) -> str:
    if not _folder_module(module):
        return module.split(".")[0]  # inference_platform's own modules, or bench
    short = short_name(module)
    return short.split(".")[0]


def _within(module: str, prefix: str) -> bool:
    if prefix in ("inference_platform", "bench"):
        return not _folder_module(module) and module.split(".")[0] == prefix
    short = short_name(module)
    return _folder_module(module) and (short == prefix or short.startswith(f"{prefix}."))


def _cycles() -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in GRAPH:
        if root in index:
            continue
        work = [(root, iter(sorted(GRAPH[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(GRAPH[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_module_sits_directly_in_components_but_its_init():
    loose = sorted(p.name for p in (REPO / "components").glob("*.py") if p.name != "__init__.py")
    assert loose == [], f"move these into an area package: {loose}"


def test_there_are_no_import_circles():
    assert _cycles() == []


@pytest.mark.parametrize("module", sorted(GRAPH))
def test_dependencies_flow_one_way(module):
    owner = _owner(module)
    allowed = (owner, *ALLOWED[owner])
    wrong = sorted(t for t in GRAPH[module] if not any(_within(t, p) for p in allowed))
    assert wrong == [], f"{module} ({owner}) may import only {sorted(allowed)}; it imports {wrong}"


def test_the_layers_point_down():
    """The table itself: every room may import only rooms below it in LAYERS."""
    assert set(LAYERS) == set(ALLOWED), "LAYERS and ALLOWED name different rooms"
    up = {o: [t for t in ALLOWED[o] if LAYERS.index(t) >= LAYERS.index(o)] for o in ALLOWED}
    assert {o: ts for o, ts in up.items() if ts} == {}


def test_nothing_imports_an_old_path():
    """The shims of moved modules are for other teams' programs; our own code and tests use the new paths."""
    product = sorted(f"{m} -> {t}" for m in GRAPH if m not in SHIMS for t in GRAPH[m] & SHIMS)
    assert product == []
    old = tuple(SHIMS)
    in_tests = []
    for path in sorted((REPO / "tests").rglob("*.py")):
        if path.name == "test_moved.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            names += [node.module] if isinstance(node, ast.ImportFrom) and node.module else []
            names += [
                f"{node.module}.{a.name}" for a in node.names
            ] if isinstance(node, ast.ImportFrom) and node.module else []  # fmt: skip
            in_tests += [
                f"{path.relative_to(REPO)}: {n}" for n in names if n in old or n.startswith(tuple(f"{o}." for o in old))
            ]
    assert in_tests == []


@pytest.mark.parametrize("layer", ["catalog", "planners", "settings"])
def test_the_shared_layers_never_load_pulumi(layer):
    catalog = sorted(
        m for m in MODULES if m == f"inference_platform.{layer}" or m.startswith(f"inference_platform.{layer}.")
    )
    code = "import importlib, sys\nfor m in sys.argv[1:]: importlib.import_module(m)\n"
    code += "loaded = sorted(m for m in sys.modules if m.split('.')[0].startswith('pulumi'))\nprint(loaded)\n"
    result = subprocess.run(
        [sys.executable, "-c", code, *catalog], cwd=REPO, capture_output=True, text=True, timeout=120, check=True
    )
    assert result.stdout.strip() == "[]", f"importing {layer} loaded {result.stdout.strip()}"


@pytest.mark.parametrize("area", AREAS)
def test_each_area_exports_its_components_and_their_args(area):
    package = importlib.import_module(f"inference_platform.components.{area}")
    public = set(getattr(package, "__all__", ()))
    for module in sorted(m for m in MODULES if m.startswith(f"inference_platform.components.{area}.")):
        for name, obj in vars(importlib.import_module(module)).items():
            if inspect.isclass(obj) and obj.__module__ == module and issubclass(obj, pulumi.ComponentResource):
                assert name in public, f"inference_platform.components.{area} does not export {name} ({module})"
                if hasattr(sys.modules[module], f"{name}Args"):
                    assert f"{name}Args" in public, f"inference_platform.components.{area} does not export {name}Args"


# Issue 17 §6: the inference images install this package with --no-deps, so Pulumi is not there. Whatever the
# images run (their commands, inference_image, inference_platform.settings) must not reach a Pulumi module, not even
# through a package __init__ on the way; tests/inference_image/test_image_environment.py runs them for real.
def test_what_the_images_run_imports_no_pulumi_module():
    from tests.inference_image.image_env import image_import_roots
    from tests.runtime_imports import chain, closure

    roots = image_import_roots()
    assert (
        "inference_platform.settings" in roots
        and "inference_platform.inferctl.serving.serve" in roots
        and "inference_platform.inferctl.verify.command" in roots
    )
    parents, third = closure(roots)
    # The settings sit below the components: what the images run reaches no component module at all.
    reached = sorted(m for m in parents if m.startswith("inference_platform.components."))
    assert reached == [], f"the images' code reaches components: {reached}"
    found = {p: " -> ".join(chain(parents, m)) for p, m in third.items() if p.startswith("pulumi")}
    assert found == {}, f"the images cannot import these (installed --no-deps): {found}"


def test_the_static_check_follows_package_inits_and_lazy_names_to_pulumi():
    """The check can fail: an eager __init__ (as the area packages had) and a lazily exported class both lead
    to the Pulumi module behind them."""
    from tests.runtime_imports import direct_imports, imports_in_source

    eager_init = "from inference_platform.components.autoscaling.keda import Keda, KedaArgs\n"
    first, _ = imports_in_source("inference_platform.components.autoscaling", eager_init, is_package=True)
    assert "inference_platform.components.autoscaling.keda" in first
    assert "pulumi" in direct_imports("inference_platform.components.autoscaling.keda", deep=False)[1]
    first, _ = imports_in_source(
        "inference_platform.settings.example", "from inference_platform.components.network import Network\n"
    )
    assert {"inference_platform.components.network", "inference_platform.components.network.vpc"} <= first
    assert "pulumi" in direct_imports("inference_platform.components.network.vpc", deep=False)[1]
    first, third = imports_in_source(
        "inference_platform.settings.example",
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import pulumi\n",
    )
    assert third == frozenset()  # a type-only import never runs


LAZY_AREAS = AREAS


@pytest.mark.parametrize("area", LAZY_AREAS)
def test_each_area_package_exports_lazily_and_consistently(area):
    """Its __init__ imports nothing at run time (components/common/exports.py); ``_EXPORTS``, the TYPE_CHECKING
    imports and ``__all__`` name the same things, and each lazy name is the object its module defines."""
    from tests.runtime_imports import direct_imports, lazy_exports

    package = f"inference_platform.components.{area}"
    first, third = direct_imports(package, deep=False)
    on_the_way = {"inference_platform", "inference_platform.components", "inference_platform.components.common"}
    assert first <= {*on_the_way, "inference_platform.components.common.exports"}, sorted(first)
    assert third == frozenset(), sorted(third)
    typed = lazy_exports(package)
    module = importlib.import_module(package)
    declared = {
        name: where if where.startswith("inference_platform.") else f"{package}.{where}"
        for where, names in module._EXPORTS.items()
        for name in names
    }
    assert declared == typed, "the TYPE_CHECKING imports and _EXPORTS disagree"
    assert sorted(module.__all__) == sorted(typed), "__all__ and the exports disagree"
    for name, where in typed.items():
        assert getattr(module, name) is getattr(importlib.import_module(where), name), name
    assert set(module.__all__) <= set(dir(module))


def test_importing_every_area_package_loads_no_pulumi():
    packages = [f"inference_platform.components.{a}" for a in LAZY_AREAS]
    code = "import importlib, sys\nfor m in sys.argv[1:]: importlib.import_module(m)\n"
    code += "print(sorted(m for m in sys.modules if m.split('.')[0].startswith('pulumi')))\n"
    result = subprocess.run(
        [sys.executable, "-c", code, *packages], cwd=REPO, capture_output=True, text=True, timeout=120, check=True
    )
    assert result.stdout.strip() == "[]", f"importing the area packages loaded {result.stdout.strip()}"


@pytest.mark.parametrize("folder", ["bench", "tools"])
def test_the_benchmarks_and_tools_import_nothing_from_the_tests(folder):
    """bench/ and tools/ run outside the suite (make bench, make lock, make deps-check): what the tests and they
    share lives in tools/ (e.g. tools/wheel_build.py), never in tests/."""
    found = []
    for path in sorted((REPO / folder).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            names += [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else []
            found += [f"{path.relative_to(REPO)}: {n}" for n in names if n == "tests" or n.startswith("tests.")]
    assert found == []
