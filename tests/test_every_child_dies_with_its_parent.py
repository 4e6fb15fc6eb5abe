"""Every long-lived child process is started with ``preexec_fn=die_with_parent()`` (inference_platform/processes.py).

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


def popen_calls(path: Path) -> list[int]:
    """Lines of ``Popen(...)`` calls in ``path`` without a ``preexec_fn``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
        if name == "Popen" and not any(k.arg == "preexec_fn" for k in node.keywords):
            found.append(node.lineno)
    return found


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
    )
    assert popen_calls(source) == [2]
