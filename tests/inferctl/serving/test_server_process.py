"""The server's teardown leaves no process of its group running: children that outlive the server (as
Triton's Python stubs do) are killed and waited for, so a test can check for leftovers right after."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from inference_platform.inferctl.serving.server_process import ServerProcess

# A "server" whose two children ignore SIGTERM (Triton's stubs outlive a killed server the same way).
SCRIPT = """
import subprocess, sys, time
code = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(60)"
children = [subprocess.Popen([sys.executable, "-c", code]) for _ in range(2)]
time.sleep(60)
"""


def _members(pgid: int) -> int:
    """Live (non-zombie) processes of group ``pgid``."""
    count = 0
    for entry in Path("/proc").iterdir():
        try:
            stat = (entry / "stat").read_text() if entry.name.isdigit() else ""
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()
        count += len(fields) > 2 and fields[0] != "Z" and int(fields[2]) == pgid
    return count


def test_stop_kills_and_waits_for_every_process_of_the_group():
    server = ServerProcess([sys.executable, "-c", SCRIPT], env=dict(os.environ), http_url="http://127.0.0.1:9")
    server.start()
    assert server.process is not None
    pgid = server.process.pid
    try:
        deadline = time.monotonic() + 20
        while _members(pgid) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _members(pgid) == 3  # the server and its two children
    finally:
        server.stop()
    assert _members(pgid) == 0


def test_an_answer_that_is_not_http_is_not_ready():
    """The readiness probe reads back its own request when it is connected to itself (a loopback port nobody
    listens on yet, given to the probe as its source port): here a peer that echoes what it reads. Not ready, and
    no exception out of the wait (a clean-clone run's serve-local died of BadStatusLine)."""
    import socket
    import threading

    from inference_platform.inferctl.serving.server_process import http_ready

    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def echo() -> None:
        connection, _ = listener.accept()
        with connection:
            connection.sendall(connection.recv(4096))

    peer = threading.Thread(target=echo, daemon=True)
    peer.start()
    try:
        assert http_ready(f"http://127.0.0.1:{port}/health") is False
    finally:
        peer.join(timeout=10)
        listener.close()
