"""The processes of one test run, found by the marker every one of them carries in its environment.

The test session puts ``INFERENCE_PLATFORM_TEST_RUN`` in its environment before it starts anything (tests/reaper.py):
the xdist workers, the servers the tests start and everything those start inherit it, whatever session or process
group they moved to and whoever their parent is now. A name (``tritonserver``) would also find another engineer's
server on a shared machine; the marker finds only this run's.

A run's marker extends the one it inherited (``<outer>/<run>``), so a run started inside another (CI's, or a test
that runs pytest) is found with the outer one: ``processes_of(prefix)`` matches the marker and everything below it.

Stdlib only: CI calls it after ``make test`` (``python -m tests.run_processes``), which exits 1 naming every
process of the run still alive.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path

RUN_ENV = "INFERENCE_PLATFORM_TEST_RUN"
PROC = Path("/proc")


@dataclass(frozen=True)
class RunProcess:
    pid: int
    marker: str
    command: str


def processes_of(prefix: str, *, exclude: set[int] | None = None) -> list[RunProcess]:
    """Live (not zombie) processes whose marker is ``prefix`` or below it; none where /proc is missing."""
    if not prefix or not PROC.is_dir():
        return []
    skip = {os.getpid(), *(exclude or set())}
    found = []
    for entry in PROC.iterdir():
        if not entry.name.isdigit() or int(entry.name) in skip:
            continue
        try:
            environ = (entry / "environ").read_bytes().split(b"\0")
            stat = (entry / "stat").read_text()
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue  # gone meanwhile, or another user's
        # "pid (comm) state ...": the state follows the last ")" (comm may hold anything).
        if stat[stat.rfind(")") + 2 :].split()[0] == "Z":
            continue
        marker = _marker(environ)
        if marker is not None and (marker == prefix or marker.startswith(prefix + "/")):
            found.append(RunProcess(int(entry.name), marker, command))
    return sorted(found, key=lambda p: p.pid)


def _marker(environ: list[bytes]) -> str | None:
    key = RUN_ENV.encode() + b"="
    for item in environ:
        if item.startswith(key):
            return item[len(key) :].decode(errors="replace")
    return None


def wait_gone(prefix: str, timeout: float, *, exclude: set[int] | None = None) -> list[RunProcess]:
    """Until no process of the run is left or ``timeout`` passes (one being torn down needs a moment): the rest."""
    deadline = time.monotonic() + timeout
    while (left := processes_of(prefix, exclude=exclude)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left


def kill(processes: list[RunProcess]) -> None:
    for process in processes:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(process.pid, signal.SIGKILL)


def ancestors(pid: int | None = None) -> set[int]:
    """``pid`` (default this process) and its parents: a run's own launcher carries the outer marker."""
    found, current = set(), pid or os.getpid()
    while current > 1:
        found.add(current)
        try:
            stat = (PROC / str(current) / "stat").read_text()
        except OSError:
            break
        current = int(stat[stat.rfind(")") + 2 :].split()[1])
    return found


def describe(processes: list[RunProcess]) -> list[str]:
    return [f"pid {p.pid} [{p.marker}]: {p.command[:300]}" for p in processes]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.run_processes", description=__doc__.splitlines()[0])
    parser.add_argument("--marker", default=os.environ.get(RUN_ENV, ""), help=f"the run's marker (default ${RUN_ENV})")
    parser.add_argument("--grace", type=float, default=10.0, help="seconds to let processes being stopped go")
    args = parser.parse_args(argv)
    if not args.marker:
        parser.error(f"no marker: set {RUN_ENV} for the run and for this check, or pass --marker")
    left = wait_gone(args.marker, args.grace, exclude=ancestors())
    if left:
        for line in describe(left):
            print(f"outlived test run {args.marker}: {line}", file=sys.stderr)
        return 1
    print(f"no process of test run {args.marker} is left")
    return 0


if __name__ == "__main__":
    sys.exit(main())
