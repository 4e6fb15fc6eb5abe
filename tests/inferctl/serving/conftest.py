"""Helpers of the local-server tests: free ports on 127.0.0.1, bounded readiness waits, and
``leftover_processes`` so tests prove nothing outlives them (the servers: tools/local_openai_stack.py)."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from inference_platform.inferctl.serving.server_process import http_ready
from inference_platform.processes import free_port
from tools.local_openai_stack import LOOPBACK, READY_TIMEOUT, leftover_processes, listen

__all__ = ["LOOPBACK", "READY_TIMEOUT", "free_port", "leftover_processes", "listen", "wait_for_line", "wait_http_200"]
"""The serving tests' helpers; the stack and its port helpers live in tools/local_openai_stack.py (make bench uses
them too, and may import nothing from tests/)."""


def wait_http_200(process: subprocess.Popen, url: str, timeout: float = READY_TIMEOUT, log: Path | None = None) -> None:
    """Until ``url`` answers 200; fails when ``process`` exits first or ``timeout`` passes (naming its log's tail)."""
    tail = (lambda: f":\n{log.read_text(errors='replace')[-4000:]}") if log is not None else (lambda: "")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert process.poll() is None, f"exited with {process.returncode} before {url} answered{tail()}"
        if http_ready(url):
            return
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
