"""A second ``serve-local`` on a busy port (issue 17 §8): it never reports "ready" because of the first one.

- ``serve-local`` refuses a port that something already listens on, before it starts anything: exit 2,
  one line naming the flag and the port.
- ``ServerProcess.wait_ready`` counts a 200 from ``/v2/health/ready`` only when the HTTP port's listener
  belongs to its own child's process group: an impostor answering on that port while the child dies
  gives "exited before it was ready", never a ready server.
"""

from __future__ import annotations

import contextlib
import http.server
import os
import subprocess
import sys
import threading
from collections.abc import Iterator

import pytest

from inference_platform.errors import CommandError
from inference_platform.inferctl.serving.server_process import ServerProcess, listening_pids
from tests.inferctl.serving.conftest import LOOPBACK, listen

INFERCTL = [sys.executable, "-m", "inference_platform.inferctl"]


class _Ready(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@contextlib.contextmanager
def _first_instance(port: int) -> Iterator[None]:
    """Something already serving ``port`` that answers every readiness check with 200."""
    server = http.server.ThreadingHTTPServer((LOOPBACK, port), _Ready)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("flag", ["--http-port", "--grpc-port", "--metrics-port", "--openai-port"])
def test_serve_local_refuses_a_busy_port_naming_its_flag(tmp_path, flag):
    ports = listen()
    values = {
        "--http-port": ports.http_port,
        "--grpc-port": ports.grpc_port,
        "--metrics-port": ports.metrics_port,
        "--openai-port": listen().http_port,
    }
    with _first_instance(values[flag]):
        result = subprocess.run(
            [*INFERCTL, "serve-local", *(f"{k}={v}" for k, v in values.items()), f"--work-dir={tmp_path / 'w'}"],
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert result.returncode == 2, result.stderr
    assert "ready" not in result.stderr.replace("already", "")
    assert result.stderr.strip().splitlines()[-1] == (
        f"inferctl serve-local: {flag} {values[flag]} is already in use on {LOOPBACK} "
        f"(another serve-local or tritonserver?): stop it or pass another {flag}"
    )
    assert not (tmp_path / "w").exists() or not any((tmp_path / "w").iterdir())  # nothing was started


@pytest.mark.parametrize("flag", ["--edge-port", "--edge-admin-port"])
def test_serve_local_with_the_edge_refuses_a_busy_edge_port(tmp_path, flag):
    ports = listen()
    busy = listen().http_port
    other = "--edge-admin-port" if flag == "--edge-port" else "--edge-port"
    argv = [
        *INFERCTL,
        "serve-local",
        "--edge",
        f"--http-port={ports.http_port}",
        f"--grpc-port={ports.grpc_port}",
        f"--metrics-port={ports.metrics_port}",
        f"--openai-port={listen().http_port}",
        f"{flag}={busy}",
        f"{other}={listen().http_port}",
        f"--work-dir={tmp_path / 'w'}",
    ]
    with _first_instance(busy):
        result = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert result.returncode == 2, result.stderr
    assert f"{flag} {busy} is already in use" in result.stderr


def test_serve_local_refuses_one_port_for_two_flags(tmp_path):
    ports = listen()
    result = subprocess.run(
        [*INFERCTL, "serve-local", f"--http-port={ports.http_port}", f"--grpc-port={ports.http_port}"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2
    assert f"--grpc-port {ports.http_port} is also --http-port" in result.stderr


def test_readiness_is_of_the_servers_own_child_not_of_whoever_answers_its_port():
    port = listen().http_port
    # A "server" that never listens and fails after a moment, as a second tritonserver on a busy port does.
    child = [sys.executable, "-c", "import time, sys; time.sleep(1.5); sys.exit(1)"]
    server = ServerProcess(child, env=dict(os.environ), http_url=f"http://{LOOPBACK}:{port}")
    # It waited for its own child until that exited: the impostor answering 200 on the port all along never made it
    # ready.
    with (
        _first_instance(port),
        server,
        pytest.raises(CommandError, match="exited with status 1 before it was ready"),
    ):
        server.wait_ready(30)


def test_readiness_accepts_a_listener_of_the_childs_group():
    port = listen().http_port
    script = (
        "import http.server, sys\n"
        "class H(http.server.BaseHTTPRequestHandler):\n"
        "    def do_GET(self):\n"
        "        self.send_response(200); self.send_header('Content-Length', '0'); self.end_headers()\n"
        f"http.server.HTTPServer(('{LOOPBACK}', {port}), H).serve_forever()\n"
    )
    server = ServerProcess([sys.executable, "-c", script], env=dict(os.environ), http_url=f"http://{LOOPBACK}:{port}")
    with server:
        server.wait_ready(30)
        assert server.process is not None
        assert server.process.pid in (listening_pids(port) or set())
