"""The benchmarks' own plumbing (issue 9 §9): arguments reach the benchmark they follow, and the floor
registers exactly the resources it is asked to. (No timings are asserted: speed goes to `make bench`.)"""

from __future__ import annotations

import subprocess
import sys

import pytest

import bench.__main__ as bench_main
from tests.conftest import REPO


def test_arguments_go_to_the_benchmark_they_follow(monkeypatch: pytest.MonkeyPatch, capsys):
    calls = []

    class Recorder:
        def __init__(self, name: str) -> None:
            self.name = name

        def main(self, argv: list[str]) -> int:
            calls.append((self.name, argv))
            return 0

    monkeypatch.setattr(bench_main.importlib, "import_module", lambda module: Recorder(module))
    assert bench_main.main(["artifacts", "--shards", "1", "--repetitions", "2", "plan", "--stacks", "dev", "prod"]) == 0
    assert calls == [
        ("bench.artifacts", ["--shards", "1", "--repetitions", "2"]),
        ("bench.plan", ["--stacks", "dev", "prod"]),
    ]
    calls.clear()
    assert bench_main.main([]) == 0
    assert calls == [("bench.plan", []), ("bench.policies", []), ("bench.artifacts", []), ("bench.cold_start", []),
                     ("bench.install", []), ("bench.streaming", [])]  # fmt: skip


@pytest.mark.parametrize("argv", [["--shards", "1"], ["plna"], ["plan", "extra"]])
def test_arguments_without_a_benchmark_are_refused(argv, capsys):
    assert bench_main.main(argv) == 2
    assert "unknown benchmark" in capsys.readouterr().err


@pytest.mark.parametrize("imports", [[], ["--import", "pulumi_random"]])
def test_the_floor_registers_exactly_the_resources_asked_for(imports):
    done = subprocess.run(
        [sys.executable, "-m", "bench.floor", "--resources", "7", *imports],
        cwd=REPO, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "registered 7 resources"


def test_policy_bench_copies_are_distinct_and_wired_within_their_copy():
    from bench.policies import _copies
    from inference_platform.offline_plan.recorder import RecordedResource

    stack = "urn:pulumi:s::p::pulumi:pulumi:Stack::p-s"
    parent = RecordedResource("urn:pulumi:s::p::a:b:C::x", "a:b:C", "x", stack, False, {})
    child = RecordedResource(
        "urn:pulumi:s::p::a:b:C$a:b:D::y", "a:b:D", "y", parent.urn, True, {},
        dependencies=[parent.urn], property_dependencies={"p": [parent.urn]},
    )  # fmt: skip
    copies = _copies([parent, child], 3)
    assert len({r.urn for r in copies}) == 6
    second_child = copies[3]
    assert second_child.parent == copies[2].urn and second_child.dependencies == [copies[2].urn]
    assert second_child.property_dependencies == {"p": [copies[2].urn]}
    assert copies[2].parent == stack
