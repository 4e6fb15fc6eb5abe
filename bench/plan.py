"""Offline plan cost: `make plan`'s work (record + transforms + policies + reports) beside the same
program under the SDK's stock mock monitor (no recording, no policies), in one run, per stack.

Also times the whole CLI as a fresh process (interpreter start and imports included), which is what
a user waits for. Medians of several repetitions; the ratio is plan / bare.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
STACKS = ("dev", "prod", "npu")
REPS = 7


def _plan_once(stack: str, out: Path) -> tuple[float, int]:
    from inferctl.plan.command import make_plan, write_outputs

    started = time.perf_counter()
    plan = make_plan(REPO, stack)
    write_outputs(plan, out)
    return time.perf_counter() - started, len(plan.run.resources)


def _bare_once(stack: str) -> float:
    from inferctl.plan.engine import run_program

    started = time.perf_counter()
    run_program(REPO, stack, record=False)
    return time.perf_counter() - started


def _cli_once(stack: str, out: Path) -> float:
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "inferctl", "plan", "--stack", stack, "--quiet", "--out", str(out)],
        cwd=REPO,
        check=True,
        capture_output=True,
    )
    return time.perf_counter() - started


def main(argv: list[str]) -> int:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        for stack in STACKS:
            _plan_once(stack, out)  # warm imports and caches for both sides
            _bare_once(stack)
            plan, bare = [], []
            for _ in range(REPS):  # interleaved, so drift hits both sides alike
                seconds, resources = _plan_once(stack, out)
                plan.append(seconds)
                bare.append(_bare_once(stack))
            cli = [_cli_once(stack, out) for _ in range(3)]
            rows.append((stack, resources, statistics.median(plan), statistics.median(bare), statistics.median(cli)))
    print(f"{'stack':6} {'resources':>9} {'plan s':>8} {'bare s':>8} {'ratio':>6} {'cli s':>7}")
    for stack, resources, plan_s, bare_s, cli_s in rows:
        print(f"{stack:6} {resources:9d} {plan_s:8.3f} {bare_s:8.3f} {plan_s / bare_s:6.2f} {cli_s:7.2f}")
    print(f"medians of {REPS} in-process runs (plan = record + transforms + policies + reports; bare = stock")
    print("MockMonitor, same mocks, nothing recorded) and of 3 fresh `inferctl plan --quiet` processes (cli).")
    return 0
