"""What running a module can import, read from the sources (no import): first-party modules and third-party
top-level packages, transitively.

Unlike the dependency graph of tests/test_architecture.py (which counts type-only imports, since a circle of
type names is still a circle), this follows what Python executes: ``if TYPE_CHECKING:`` blocks are skipped;
importing ``a.b.c`` also runs ``a/__init__`` and ``a/b/__init__``; ``from pkg import Name`` where ``pkg``
exports ``Name`` lazily (components/common/exports.py) imports the module that defines it. ``deep=True`` also
follows imports inside functions (what a command's handler imports when it runs); ``deep=False`` only what
importing the module runs.
"""

from __future__ import annotations

import ast
import functools
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
NAMESPACE = "inference_platform"


def _setup_folders() -> tuple[str, ...]:
    """The folders setup.py maps into the namespace (inference_platform.<folder>): read, not repeated."""
    tree = ast.parse((REPO / "setup.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and [t.id for t in node.targets if isinstance(t, ast.Name)] == ["FOLDERS"]:
            return tuple(ast.literal_eval(node.value))
    raise LookupError("setup.py defines no FOLDERS")


FOLDERS = _setup_folders()
PACKAGES = (NAMESPACE, *FOLDERS, "bench")


def module_name(path: Path) -> str:
    """The import name of a source file: the mapped folders live under the namespace, bench stays apart."""
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    parts = parts[:-1] if parts[-1] == "__init__" else parts
    return ".".join([NAMESPACE, *parts] if parts[0] in FOLDERS else parts)


def short_name(module: str) -> str:
    """``inference_platform.components.edge`` -> ``components.edge``: the house's rooms by their folders."""
    return module.removeprefix(f"{NAMESPACE}.")


MODULES = {module_name(p): p for pkg in PACKAGES for p in (REPO / pkg).rglob("*.py")}
STDLIB = frozenset(sys.stdlib_module_names)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _import_nodes(tree: ast.Module, *, deep: bool, functions: frozenset[str]) -> list[ast.Import | ast.ImportFrom]:
    found: list[ast.Import | ast.ImportFrom] = []
    followed = {id(n) for n in tree.body if isinstance(n, ast.FunctionDef) and n.name in functions}

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.Import | ast.ImportFrom):
            found.append(node)
            return
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.orelse:
                visit(child)
            return
        if (
            not deep
            and id(node) not in followed
            and isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
        ):
            return
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


@functools.cache
def lazy_exports(package: str) -> dict[str, str]:
    """Name -> defining module, for a package whose ``__init__`` exports lazily (its TYPE_CHECKING imports)."""
    path = MODULES.get(package)
    if path is None or path.name != "__init__.py" or "lazy_exports" not in path.read_text():
        return {}
    exports: dict[str, str] = {}
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for stmt in node.body:
                if isinstance(stmt, ast.ImportFrom) and stmt.module:
                    exports.update({alias.asname or alias.name: stmt.module for alias in stmt.names})
    return exports


def _with_parents(module: str) -> set[str]:
    parts = module.split(".")
    return {".".join(parts[:i]) for i in range(1, len(parts) + 1)} & MODULES.keys()


@functools.cache
def direct_imports(
    module: str, *, deep: bool, functions: frozenset[str] = frozenset()
) -> tuple[frozenset[str], frozenset[str]]:
    """(first-party modules, third-party top-level packages) that running ``module`` imports itself (and,
    when not ``deep``, the top-level ``functions`` named, e.g. a command's ``register``)."""
    path = MODULES[module]
    return imports_in_source(module, path.read_text(), is_package=path.name == "__init__.py", deep=deep,
                             functions=functions)  # fmt: skip


def imports_in_source(
    module: str, source: str, *, is_package: bool = False, deep: bool = False, functions: frozenset[str] = frozenset()
) -> tuple[frozenset[str], frozenset[str]]:
    """``direct_imports`` of ``source`` as if it were ``module`` (tests of this checker)."""
    first: set[str] = set()
    third: set[str] = set()

    def add(name: str) -> None:
        top = name.split(".")[0]
        if top in PACKAGES:
            parts = name.split(".")
            while parts and ".".join(parts) not in MODULES:
                parts.pop()
            if parts:
                first.update(_with_parents(".".join(parts)))
        elif top and top not in STDLIB and top != "__future__":
            third.add(top)

    for node in _import_nodes(ast.parse(source), deep=deep, functions=functions):
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(alias.name)
            continue
        base = node.module or ""
        if node.level:
            anchor = module.split(".") if is_package else module.split(".")[:-1]
            anchor = anchor[: len(anchor) - (node.level - 1)]
            base = ".".join([*anchor, base] if base else anchor)
        add(base)
        for alias in node.names:
            if f"{base}.{alias.name}" in MODULES:
                add(f"{base}.{alias.name}")
            elif alias.name in lazy_exports(base):
                add(lazy_exports(base)[alias.name])
    first.discard(module)
    return frozenset(first), frozenset(third)


def closure(roots: dict[str, bool | tuple[str, ...]]) -> tuple[dict[str, str | None], dict[str, str]]:
    """From ``{module: deep}`` (True, False, or the names of top-level functions to follow as well): every
    first-party module reached (-> the module that imported it first, None for a root) and every third-party
    package (-> a first-party module that imports it). What a deep module imports is followed deep too."""
    parents: dict[str, str | None] = {}
    third: dict[str, str] = {}
    seen: set[tuple[str, bool, tuple[str, ...]]] = set()
    work: list[tuple[str, bool, tuple[str, ...], str | None]] = []
    for module, how in roots.items():
        deep, functions = (how, ()) if isinstance(how, bool) else (False, tuple(how))
        work.append((module, deep, functions, None))
        work.extend((p, deep, (), module) for p in _with_parents(module) - {module})
    while work:
        module, deep, functions, parent = work.pop()
        if (module, True, ()) in seen or (module, deep, functions) in seen:
            continue
        seen.add((module, deep, functions))
        parents.setdefault(module, parent)
        first, packages = direct_imports(module, deep=deep, functions=frozenset(functions))
        for package in packages:
            third.setdefault(package, module)
        work.extend((child, deep, (), module) for child in sorted(first))
    return parents, third


def chain(parents: dict[str, str | None], module: str) -> list[str]:
    """How ``module`` was reached, root first."""
    path = [module]
    while parents.get(path[-1]) is not None:
        path.append(parents[path[-1]])  # type: ignore[arg-type]
    return path[::-1]
