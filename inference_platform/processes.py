"""Local child processes (tritonserver, Envoy, Locust): each runs in a session of its own, so stopping it
signals the whole group (the server and whatever it started, e.g. Triton's Python stubs) and waits until
every member is gone; and the free loopback ports they listen on.

A session of its own also shields a child from its parent's end: killed (SIGKILL, the OOM killer, a CI job
cancelled), the parent runs no teardown, and nothing signals the child's group. ``die_with_parent()`` asks the
kernel to send the child a signal when its parent dies (Linux's ``PR_SET_PDEATHSIG``; elsewhere nothing).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

LOOPBACK = "127.0.0.1"
_PR_SET_PDEATHSIG = 1
# Looked up here, in the parent: after fork() the child of a threaded parent must not load libraries (dlopen
# takes locks another thread may have held at the fork); calling a known function is safe.
_PRCTL = ctypes.CDLL(None, use_errno=True).prctl if sys.platform.startswith("linux") else None


def free_port() -> int:
    """A TCP port nothing listens on at the moment, on the loopback address."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((LOOPBACK, 0))
        return int(sock.getsockname()[1])


def die_with_parent(sig: signal.Signals = signal.SIGTERM) -> Callable[[], None] | None:
    """A ``preexec_fn`` for ``subprocess.Popen``: the child gets ``sig`` when its parent dies (Linux; None
    elsewhere, which Popen takes as no preexec_fn).

    SIGTERM by default, so a server still tears down what it started (Triton its stubs, mpirun its ranks,
    serve-local its servers). The kernel watches the *thread* that started the child: start long-lived
    children from a thread that lives as long as they should.
    """
    if _PRCTL is None:
        return None
    parent = os.getpid()

    def preexec() -> None:
        set_parent_death_signal(sig, parent)

    return preexec


def with_parent_death(argv: list[str], sig: signal.Signals = signal.SIGTERM) -> list[str]:
    """``argv`` run so that it gets ``sig`` when this process dies, without a ``preexec_fn`` (Linux; ``argv``
    unchanged elsewhere).

    For parents with gRPC threads running: a ``preexec_fn`` forks, and the fork runs gRPC's atfork handlers,
    which abort the child (inference_platform/parent_death.py says why).
    """
    if _PRCTL is None:
        return list(argv)
    launcher = [sys.executable, "-m", "inference_platform.parent_death", str(os.getpid()), str(int(sig)), "--"]
    return [*launcher, *argv]


def set_parent_death_signal(sig: signal.Signals, parent: int) -> None:
    """Ask the kernel for ``sig`` when the parent (pid ``parent``) dies; if it is already gone, take it now."""
    if _PRCTL is not None:
        _PRCTL(_PR_SET_PDEATHSIG, int(sig))
    # The parent may have died before the prctl: then nobody will send the signal.
    if os.getppid() != parent:
        os.kill(os.getpid(), sig)


def stop_group(process: subprocess.Popen[bytes], timeout: float) -> int | None:
    """SIGTERM the process group, SIGKILL it after ``timeout``; always reaps the child and waits (at most
    ``timeout`` more) until nothing it started is left running: no member of its group, nor of its session
    (mpirun puts each rank in a group of its own). The child's exit status."""
    if process.poll() is None:
        signal_group(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            signal_group(process.pid, signal.SIGKILL)
            process.wait(timeout=timeout)
    # Children outlive their leader only in its group or session: none may be left behind, and a SIGKILLed
    # process still runs until the kernel has torn it down.
    signal_group(process.pid, signal.SIGKILL)
    deadline = time.monotonic() + timeout
    while (left := left_behind(process.pid)) and time.monotonic() < deadline:
        for pid in left:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.05)
    return process.returncode


def signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def left_behind(leader: int) -> list[int]:
    """Live (non-zombie) processes in the group or the session ``leader`` started (none without /proc)."""
    proc = Path("/proc")
    if not proc.is_dir():
        return []
    found = []
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # "pid (comm) state ppid pgrp session ...": comm may hold spaces and parentheses, so split after the last ")".
        fields = stat[stat.rfind(")") + 2 :].split()
        if len(fields) > 3 and fields[0] != "Z" and leader in (int(fields[2]), int(fields[3])):
            found.append(int(entry.name))
    return found
