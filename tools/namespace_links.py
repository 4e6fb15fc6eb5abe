"""Lays the installed namespace out as links, so tools that read files instead of running import hooks resolve
``inference_platform.<folder>`` the way the installed package does (docs/architecture.md, "Tools see the house").

setup.py maps each top-level folder into one import name (``catalog/`` installs as ``inference_platform.catalog``).
At run time an editable install resolves that through setuptools' import hook, which mypy, pyright/Pylance and
other static tools cannot follow. This writes ``build/namespace/inference_platform/``: a link to every module of
the root package and one link per mapped folder (a folder link, so a module added later is seen at once).
``[tool.mypy] mypy_path`` and ``[tool.pyright] extraPaths`` point there; ``make venv`` runs this.

    python tools/namespace_links.py [--root build/namespace]
"""

from __future__ import annotations

import argparse
import ast
import os
import shutil
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
NAMESPACE = "inference_platform"
DEFAULT_ROOT = Path("build") / "namespace"


def folders(repo: Path = REPO) -> tuple[str, ...]:
    """The folders setup.py maps into the namespace (its FOLDERS), read, not repeated."""
    for node in ast.parse((repo / "setup.py").read_text()).body:
        if isinstance(node, ast.Assign) and [t.id for t in node.targets if isinstance(t, ast.Name)] == ["FOLDERS"]:
            return tuple(ast.literal_eval(node.value))
    raise LookupError("setup.py defines no FOLDERS")


def lay_out(root: Path, repo: Path = REPO) -> Path:
    """(Re)write ``root/inference_platform`` as links into ``repo``; returns that package folder."""
    package = root / NAMESPACE
    if package.is_symlink() or package.is_file():
        package.unlink()
    elif package.exists():
        shutil.rmtree(package)
    package.mkdir(parents=True)
    for source in sorted((repo / NAMESPACE).iterdir()):
        if source.suffix in (".py", ".pyi") or source.name == "py.typed":
            (package / source.name).symlink_to(source)
    for folder in folders(repo):
        (package / folder).symlink_to(repo / folder, target_is_directory=True)
    return package


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=REPO / DEFAULT_ROOT, help="where to lay the namespace out")
    args = parser.parse_args(argv)
    if not hasattr(os, "symlink"):
        print(
            "namespace_links: this platform has no symlinks; static tools will not see the namespace", file=sys.stderr
        )
        return 0
    package = lay_out(args.root)
    print(f"namespace_links: {package}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
