"""Every long-lived child process is started with ``preexec_fn=die_with_parent()``, or, in a process with gRPC
threads, with its command wrapped in ``with_parent_death(...)`` (inference_platform/processes.py).

A child in a session of its own (how servers are started, so that stopping one stops its whole group) is
shielded from its parent's end: if the parent is SIGKILLed, nothing stops the child, unless the kernel was asked
to. This holds every ``Popen`` of the product and of the tests to it; ``subprocess.run`` waits for its child and
needs nothing.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.runtime_imports import FOLDERS

ROOTS = (*FOLDERS, "inference_platform", "tests", "bench")


def _name(node: ast.expr) -> str | None:
    return node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else None


def _wrapped(call: ast.Call) -> bool:
    """The command is ``with_parent_death(...)``."""
    first = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "args"), None)
    return isinstance(first, ast.Call) and _name(first.func) == "with_parent_death"


def popen_calls(path: Path) -> list[int]:
    """Lines of ``Popen(...)`` calls in ``path`` neither with a ``preexec_fn`` nor a wrapped command."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if not isinstance(node, ast.Call) or _name(node.func) != "Popen":
            continue
        if not any(k.arg == "preexec_fn" for k in node.keywords) and not _wrapped(node):
            found.append(node.lineno)
    return found


def forks_beside_grpc(path: Path) -> list[int]:
    """Lines of ``preexec_fn=`` in a module that imports gRPC: the fork a ``preexec_fn`` forces runs gRPC's
    atfork handlers, which abort the child when gRPC threads are polling (grpc/grpc#43055)."""
    tree = ast.parse(path.read_text(), str(path))
    imports_grpc = any(
        (isinstance(node, ast.Import) and any(a.name.split(".")[0] == "grpc" for a in node.names))
        or (isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "grpc")
        for node in ast.walk(tree)
    )
    if not imports_grpc:
        return []
    return [
        k.value.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        for k in node.keywords
        if k.arg == "preexec_fn"
    ]


def test_every_popen_asks_for_a_signal_when_its_parent_dies(repo):
    missing = [
        f"{path.relative_to(repo)}:{line}"
        for root in ROOTS
        for path in sorted((repo / root).rglob("*.py"))
        for line in popen_calls(path)
    ]
    assert missing == [], "start these with preexec_fn=die_with_parent() (inference_platform/processes.py)"


def test_the_check_finds_a_popen_without_it(tmp_path):
    source = tmp_path / "example.py"
    source.write_text(
        "import subprocess\n"
        "subprocess.Popen(['sleep', '1'], start_new_session=True)\n"
        "subprocess.Popen(['sleep', '1'], preexec_fn=die_with_parent())\n"
        "subprocess.run(['true'])\n"
        "subprocess.Popen(with_parent_death(['sleep', '1']))\n"
        "subprocess.Popen(args=with_parent_death(['sleep', '1']))\n"
        "subprocess.Popen(['with_parent_death'])\n"
    )
    assert popen_calls(source) == [2, 7]


def test_no_module_that_talks_grpc_forks_with_a_preexec_fn(repo):
    found = [
        f"{path.relative_to(repo)}:{line}"
        for root in ROOTS
        for path in sorted((repo / root).rglob("*.py"))
        for line in forks_beside_grpc(path)
    ]
    assert found == [], "start these with Popen(with_parent_death(argv)) (inference_platform/processes.py)"


def test_the_grpc_check_finds_a_preexec_fn_beside_grpc(tmp_path):
    source = tmp_path / "example.py"
    source.write_text("import subprocess\nfrom grpc import aio\nsubprocess.Popen(['x'],\n preexec_fn=f())\n")
    assert forks_beside_grpc(source) == [4]
    source.write_text("import subprocess\nsubprocess.Popen(['x'], preexec_fn=f())\n")
    assert forks_beside_grpc(source) == []
