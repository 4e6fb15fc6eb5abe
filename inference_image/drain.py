"""The serving container's PID 1 when it runs more than one process: drain first, then tear down.

Kubernetes sends SIGTERM to PID 1 only. If that is ``mpirun``, every rank dies within a second or two,
mid-request: Open MPI 4.1 sends the ranks SIGCONT, waits ``odls_base_sigkill_timeout`` (1 s), SIGTERM,
waits again, SIGKILL; Open MPI 5 (PRRTE) does the same with a hard-coded 0.25 s and no parameter
(``catalog/open_mpi.py`` cites both sources). Raising the 4.1 parameter would also delay the
ranks' SIGTERM by as long, and 5 has nothing to raise, so the drain never goes through mpirun:

- ``supervise`` starts every process in its own session (a signal to PID 1 reaches none of them), and on
  SIGTERM signals only the *drain-first* ones — the HTTP front ends, whose own drain honours
  ``serving.server.exitTimeoutSeconds`` — waits for them to exit within that budget, and only then stops the
  rest (``mpirun`` and with it the MPI world, which has nothing left in flight).
- A process started under mpirun (rank 0's server) is not our child: ``rank0`` writes its pid to a file and
  execs it, and the supervisor signals that pid.
- ``hold`` is a multi-node worker's PID 1. Its ranks are started by the leader (``kubectl exec``), not by
  it; when the group is deleted every pod gets SIGTERM at once, so the worker keeps its container alive
  while those processes run, up to the same budget, instead of taking its ranks down under the leader's drain.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from inference_platform.processes import die_with_parent

POLL_SECONDS = 0.1
STOP_GRACE_SECONDS = 5.0
"""After the drain: how long the remaining processes get between SIGTERM and SIGKILL."""
EXIT_SIGNALLED = 128 + signal.SIGTERM


@dataclass(frozen=True)
class Child:
    name: str
    argv: Sequence[str]
    drain_first: bool = False
    """SIGTERM reaches it at once; the others only after every drain-first process has exited."""
    pidfile: Path | None = None
    """Signal the process whose pid this file holds (rank 0's server under mpirun) instead of the child."""


class Supervisor:
    def __init__(
        self,
        children: Sequence[Child],
        *,
        exit_timeout_seconds: float,
        stop_grace_seconds: float = STOP_GRACE_SECONDS,
        log: Callable[[str], None] = lambda line: print(f"drain: {line}", file=sys.stderr, flush=True),
    ) -> None:
        if not any(c.drain_first for c in children):
            raise ValueError("supervise: at least one process must drain first (the server)")
        self.children = list(children)
        self.exit_timeout_seconds = exit_timeout_seconds
        self.stop_grace_seconds = stop_grace_seconds
        self.log = log
        self.procs: dict[str, subprocess.Popen] = {}
        self.terminating = threading.Event()

    def run(self) -> int:
        """Start everything, wait for SIGTERM or a process that stops; returns the exit code for PID 1."""
        previous = {s: signal.signal(s, self._on_signal) for s in (signal.SIGTERM, signal.SIGINT)}
        try:
            for child in self.children:
                if child.pidfile is not None:
                    # /tmp outlives a container restart: a stale pid could name an unrelated process.
                    child.pidfile.unlink(missing_ok=True)
                # In a pod this is PID 1 and its end ends the container; run anywhere else (a test, a VM), a
                # supervisor killed untidily must not leave mpirun or the sidecars behind.
                self.procs[child.name] = subprocess.Popen(
                    list(child.argv), start_new_session=True, preexec_fn=die_with_parent()
                )
            while not self.terminating.is_set():
                for child in self.children:
                    code = self.procs[child.name].poll()
                    if code is not None:
                        self.log(f"{child.name} exited with {code}: stopping the rest")
                        self._stop(p for n, p in self.procs.items() if n != child.name)
                        return code if code != 0 else 1
                self.terminating.wait(POLL_SECONDS)
            return self.drain()
        finally:
            for s, handler in previous.items():
                signal.signal(s, handler)

    def _on_signal(self, signum: int, _frame: object) -> None:
        self.terminating.set()

    def drain(self) -> int:
        deadline = time.monotonic() + self.exit_timeout_seconds
        targets = []
        for child in self.children:
            if child.drain_first:
                pid = self._target(child)
                if pid is not None:
                    _signal(pid, signal.SIGTERM)
                    targets.append((child.name, pid))
        self.log(f"SIGTERM to {', '.join(name for name, _ in targets)}; waiting up to {self.exit_timeout_seconds} s")
        while time.monotonic() < deadline and any(_alive(pid, self._child_of(pid)) for _, pid in targets):
            time.sleep(POLL_SECONDS)
        late = [name for name, pid in targets if _alive(pid, self._child_of(pid))]
        if late:
            self.log(f"{', '.join(late)} still running after {self.exit_timeout_seconds} s")
        self._stop(self.procs.values())
        return 0 if not late else EXIT_SIGNALLED

    def _target(self, child: Child) -> int | None:
        proc = self.procs[child.name]
        if child.pidfile is None:
            return proc.pid if proc.poll() is None else None
        try:
            return int(child.pidfile.read_text().strip())
        except (OSError, ValueError):
            # Not started yet (still loading): nothing is in flight there, mpirun's teardown is enough.
            return None

    def _child_of(self, pid: int) -> subprocess.Popen | None:
        return next((p for p in self.procs.values() if p.pid == pid), None)

    def _stop(self, procs: Iterable[subprocess.Popen]) -> None:
        running = [p for p in procs if p.poll() is None]
        for proc in running:
            _signal(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + self.stop_grace_seconds
        while time.monotonic() < deadline and any(p.poll() is None for p in running):
            time.sleep(POLL_SECONDS)
        for proc in running:
            if proc.poll() is None:
                _signal(proc.pid, signal.SIGKILL)
                proc.wait()


def _signal(pid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signum)


def _alive(pid: int, child: subprocess.Popen | None) -> bool:
    if child is not None:
        return child.poll() is None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return not _zombie(pid)


def _zombie(pid: int, proc: Path = Path("/proc")) -> bool:
    try:
        stat = (proc / str(pid) / "stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] == "Z"


def write_pid_and_exec(pidfile: Path, argv: Sequence[str]) -> None:
    """Rank 0's wrapper: record this pid (atomically), then become the server under that pid."""
    tmp = pidfile.with_name(pidfile.name + ".tmp")
    tmp.write_text(f"{os.getpid()}\n")
    tmp.replace(pidfile)
    os.execvp(argv[0], list(argv))


def other_processes(own: int | None = None, proc: Path = Path("/proc")) -> list[int]:
    """Processes of this PID namespace other than ``own`` (in a container: what ``kubectl exec`` started)."""
    own = os.getpid() if own is None else own
    pids = sorted(int(p.name) for p in proc.iterdir() if p.name.isdigit())
    return [pid for pid in pids if pid != own and not _zombie(pid, proc)]


def hold(budget_seconds: float, busy: Callable[[], bool] = lambda: bool(other_processes())) -> int:
    """A worker's PID 1: idle until SIGTERM, then stay while ``busy()`` (its ranks run), at most the budget."""
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    stop.wait()
    deadline = time.monotonic() + budget_seconds
    while time.monotonic() < deadline and busy():
        time.sleep(POLL_SECONDS)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m inference_platform.inference_image.drain")
    sub = parser.add_subparsers(dest="command", required=True)
    held = sub.add_parser("hold", help="a multi-node worker's PID 1")
    held.add_argument("--budget-seconds", type=float, required=True)
    rank0 = sub.add_parser("rank0", help="write this pid to PIDFILE and exec the server")
    rank0.add_argument("pidfile", type=Path)
    rank0.add_argument("server", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    if args.command == "hold":
        return hold(args.budget_seconds)
    if not args.server:
        parser.error("rank0: give the server's command after the pid file")
    write_pid_and_exec(args.pidfile, args.server)
    return 0  # not reached


if __name__ == "__main__":
    sys.exit(main())
