"""Offline plan cost against a real floor, whole processes side by side, per stack.

Each repetition runs, as fresh processes and interleaved (drift hits every row alike):
- floor: ``python -m bench.floor`` registering as many resources as the stack's plan, under the SDK's
  stock mocks, with no provider SDK, no recording, no policies, no reports: what any plan of that many
  resources costs at least;
- floor + providers: the same, also loading the provider sub-packages the stack's program loads
  (pulumi_aws.ec2, pulumi_kubernetes.core.v1, ...): the part of a plan no planner can avoid;
- plan: ``inferctl plan --stack S --quiet`` (program, recording, policies, reports, manifests).
Then all stacks in one ``inferctl plan`` process against the sum of the single-stack processes.

Medians of wall time and of CPU time (user + system of the child): the machine may be shared, and CPU
time is what contention does not inflate. Ratios are plan / floor.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
STACKS = ("dev", "prod", "npu")
DEFAULT_REPS = 5
TARGET_RATIO = 1.5
_PROVIDERS = ("pulumi_aws", "pulumi_kubernetes", "pulumi_random")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench plan", description=__doc__.splitlines()[0])
    parser.add_argument("--stacks", nargs="+", default=list(STACKS), metavar="STACK")
    parser.add_argument("--reps", type=int, default=DEFAULT_REPS, help=f"repetitions (default {DEFAULT_REPS})")
    args = parser.parse_args(argv)
    if args.reps < 1:
        parser.error("--reps must be at least 1")
    with tempfile.TemporaryDirectory(prefix="bench-plan-") as tmp:
        out = Path(tmp)
        rows = [_stack_row(stack, args.reps, out) for stack in args.stacks]
        together = _together(args.stacks, args.reps, out) if len(args.stacks) > 1 else None
    _print(rows, together, args.reps)
    return 0


def _stack_row(stack: str, reps: int, out: Path) -> dict:
    resources, modules = _probe(stack)
    commands = {
        "floor": _floor(resources, []),
        "floor+providers": _floor(resources, modules),
        "plan": _plan([stack], out),
    }
    samples = _interleaved(commands, reps)
    return {"stack": stack, "resources": resources, "modules": len(modules), **samples}


def _together(stacks: list[str], reps: int, out: Path) -> dict:
    commands = {"one process": _plan(stacks, out), **{s: _plan([s], out) for s in stacks}}
    samples = _interleaved(commands, reps)
    separate = [sum(samples[s][i] for s in stacks) for i in range(2)]
    return {"one": samples["one process"], "separate": tuple(separate)}


def _interleaved(commands: dict[str, list[str]], reps: int) -> dict[str, tuple[float, float]]:
    for command in commands.values():  # warm the file cache and .pyc files
        _timed(command)
    runs: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
    for _ in range(reps):
        for name, command in commands.items():
            runs[name].append(_timed(command))
    return {
        name: (statistics.median(w for w, _ in got), statistics.median(c for _, c in got)) for name, got in runs.items()
    }


def _timed(command: list[str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the child) of one whole process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(command, cwd=REPO, check=True, capture_output=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _floor(resources: int, modules: list[str]) -> list[str]:
    imports = [arg for module in modules for arg in ("--import", module)]
    return [sys.executable, "-m", "bench.floor", "--resources", str(resources), *imports]


def _plan(stacks: list[str], out: Path) -> list[str]:
    flags = [arg for stack in stacks for arg in ("--stack", stack)]
    return [sys.executable, "-m", "inference_platform.inferctl", "plan", *flags, "--quiet", "--out", str(out)]


def _probe(stack: str) -> tuple[int, list[str]]:
    """The stack's resource count and the provider sub-packages its plan loads (in a fresh process)."""
    done = subprocess.run(
        [sys.executable, "-m", "bench.plan", "--probe", stack], cwd=REPO, check=True, capture_output=True, text=True
    )
    found = json.loads(done.stdout.strip().splitlines()[-1])
    return found["resources"], found["modules"]


def _probe_main(stack: str) -> int:
    from inference_platform.inferctl.plan.command import make_plan

    plan = make_plan(REPO, stack)
    loaded = sorted(
        name
        for name, module in sys.modules.items()
        if name.startswith(_PROVIDERS)
        and name.count(".") >= 1
        and not name.rsplit(".", 1)[1].startswith("_")
        and type(module).__name__ != "_LazyModule"
        and getattr(module, "__file__", "").endswith("__init__.py")
    )
    print(json.dumps({"resources": len(plan.run.resources), "modules": loaded}))
    return 0


def _print(rows: list[dict], together: dict | None, reps: int) -> None:
    head = f"{'stack':6} {'res':>4} {'floor':>12} {'floor+prov':>12} {'plan':>12} {'plan/floor':>11} {'plan/f+p':>9}"
    print(head)
    print(f"{'':6} {'':>4} {'wall  cpu':>12} {'wall  cpu':>12} {'wall  cpu':>12} {'wall  cpu':>11} {'cpu':>9}")
    for row in rows:
        floor, provided, plan = row["floor"], row["floor+providers"], row["plan"]
        print(
            f"{row['stack']:6} {row['resources']:4d} {_pair(floor)} {_pair(provided)} {_pair(plan)} "
            f"{plan[0] / floor[0]:5.2f} {plan[1] / floor[1]:5.2f} {plan[1] / provided[1]:9.2f}"
        )
    if together:
        one, separate = together["one"], together["separate"]
        print(
            f"all stacks in one process: wall {one[0]:.2f} s, cpu {one[1]:.2f} s; as separate processes: "
            f"wall {separate[0]:.2f} s, cpu {separate[1]:.2f} s ({one[1] / separate[1]:.2f}x the CPU)"
        )
    print(
        f"medians of {reps} whole processes each; floor = same resource count under stock mocks without "
        f"provider SDKs; floor+prov also loads the provider sub-packages the stack uses ({TARGET_RATIO}x target "
        "is plan/floor)."
    )


def _pair(sample: tuple[float, float]) -> str:
    return f"{sample[0]:5.2f} {sample[1]:5.2f}"


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--probe":
        code = _probe_main(sys.argv[2])
        sys.stdout.flush()
        os._exit(code)  # the provider SDKs' teardown is not part of the answer
    sys.exit(main(sys.argv[1:]))
