"""Helpers of the local-server tests: free ports on 127.0.0.1, bounded readiness waits, and
``leftover_processes`` so tests prove nothing outlives them (the servers: openai_stack.py)."""

from __future__ import annotations

import os
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from inference_platform.inference_image.server_args import Listen
from inference_platform.processes import free_port

LOOPBACK = "127.0.0.1"
READY_TIMEOUT = 90.0


def listen() -> Listen:
    return Listen(address=LOOPBACK, http_port=free_port(), grpc_port=free_port(), metrics_port=free_port())


def wait_http_200(process: subprocess.Popen, url: str, timeout: float = READY_TIMEOUT, log: Path | None = None) -> None:
    """Until ``url`` answers 200; fails when ``process`` exits first or ``timeout`` passes (naming its log's tail)."""
    tail = (lambda: f":\n{log.read_text(errors='replace')[-4000:]}") if log is not None else (lambda: "")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert process.poll() is None, f"exited with {process.returncode} before {url} answered{tail()}"
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(0.25)
    pytest.fail(f"{url} not 200 within {timeout} s{tail()}")


def wait_for_line(process: subprocess.Popen, log: Path, text: str, timeout: float = READY_TIMEOUT) -> None:
    """Until ``process`` prints ``text`` to ``log`` (what a user waits for); fails if it exits or ``timeout`` passes."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert process.poll() is None, f"exited with {process.returncode}:\n{log.read_text()[-3000:]}"
        if text in log.read_text(errors="replace"):
            return
        time.sleep(0.25)
    pytest.fail(f"{text!r} not printed within {timeout} s:\n{log.read_text(errors='replace')[-3000:]}")


def leftover_processes(marker: str) -> list[str]:
    """Command lines of live processes that mention ``marker`` (a test's private directory)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = next(line for line in (entry / "status").read_text().splitlines() if line.startswith("State:"))
        except (OSError, StopIteration):
            continue
        if marker in cmdline and "zombie" not in state:
            found.append(cmdline)
    return found
