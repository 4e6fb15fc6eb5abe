"""The real tritonserver (nvidia-pytriton wheel) with the CPU stand-in, on free ports on 127.0.0.1.

Bounded: readiness waits time out, teardown always stops the process group. ``leftover_processes``
lets tests prove nothing outlives them.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from inference_platform.inferctl.serving import local_triton
from inference_platform.inferctl.serving.serve_local import LocalRepository, build_local_repository
from inference_platform.inferctl.serving.server_process import ServerProcess
from inference_platform.inference_image.server_args import Listen, rank0_args
from inference_platform.inference_image.testing.cpu_llm.options import StandIn
from inference_platform.offline_plan import stack_settings

from inference_platform.processes import free_port

LOOPBACK = "127.0.0.1"
READY_TIMEOUT = 90.0
# Fast stand-in: the tests prove behaviour, not speed.
FAST = StandIn(first_token_delay_ms=10, token_delay_ms=3)


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


@dataclass(frozen=True)
class RunningServer:
    http_url: str
    grpc_url: str
    metrics_url: str
    local: LocalRepository
    log: Path


@contextlib.contextmanager
def start_stand_in_server(serving: Any, work: Path, stand_in: StandIn = FAST) -> Iterator[RunningServer]:
    """``serving``'s repository with the stand-in (fast by default), served from ``work`` until the block ends."""
    local = build_local_repository(serving, work, stand_in)
    triton = local_triton.prepare(work)
    ports = listen()
    flags = rank0_args(
        serving, model_repository=local.repository, models=local.models, listen=ports, backend_dir=triton.backend_dir
    )
    http_url = f"http://{LOOPBACK}:{ports.http_port}"
    server = ServerProcess([str(triton.binary), *flags], env=triton.env, http_url=http_url, log=work / "server.log")
    with server:
        server.wait_ready(READY_TIMEOUT)
        yield RunningServer(
            http_url=http_url,
            grpc_url=f"{LOOPBACK}:{ports.grpc_port}",
            metrics_url=f"http://{LOOPBACK}:{ports.metrics_port}/metrics",
            local=local,
            log=work / "server.log",
        )
    assert leftover_processes(str(work)) == []


@pytest.fixture(scope="session")
def stand_in_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    with start_stand_in_server(stack_settings.load("dev").serving, tmp_path_factory.mktemp("triton")) as server:
        yield server
