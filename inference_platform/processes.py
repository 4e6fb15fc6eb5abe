"""Local child processes (tritonserver, Envoy, Locust): each runs in a session of its own, so stopping it
signals the whole group (the server and whatever it started, e.g. Triton's Python stubs) and waits until
every member is gone; and the free loopback ports they listen on."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

LOOPBACK = "127.0.0.1"


def free_port() -> int:
    """A TCP port nothing listens on at the moment, on the loopback address."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((LOOPBACK, 0))
        return int(sock.getsockname()[1])


def stop_group(process: subprocess.Popen[bytes], timeout: float) -> int | None:
    """SIGTERM the process group, SIGKILL it after ``timeout``; always reaps the child and waits (at most
    ``timeout`` more) until no member of the group is left running. The child's exit status."""
    if process.poll() is None:
        signal_group(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            signal_group(process.pid, signal.SIGKILL)
            process.wait(timeout=timeout)
    # Children outlive their leader only in its group: none may be left behind, and a SIGKILLed process
    # still runs until the kernel has torn it down.
    signal_group(process.pid, signal.SIGKILL)
    deadline = time.monotonic() + timeout
    while group_alive(process.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return process.returncode


def signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def group_alive(pgid: int) -> bool:
    """Whether any live (non-zombie) process of group ``pgid`` is left (always False without /proc)."""
    proc = Path("/proc")
    if not proc.is_dir():
        return False
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses, so split after the last ")".
        fields = stat[stat.rfind(")") + 2 :].split()
        if len(fields) > 2 and fields[0] != "Z" and int(fields[2]) == pgid:
            return True
    return False
