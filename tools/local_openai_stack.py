"""The local OpenAI stack as serve-local runs it: the real CPU Triton with the production ``tensorrt_llm`` model and
the stand-in engine, the image's OpenAI server, and the real Envoy edge with TLS and API keys, on free ports.

Bounded: every readiness wait times out; teardown stops every process group, and nothing outlives the block.
Shared by the tests (tests/shared_stack.py and the live tests) and ``make bench`` (bench/streaming.py), which may
import nothing from tests/.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from inference_platform.inferctl.serving import local_triton
from inference_platform.inferctl.serving.edge_envoy import Upstream
from inference_platform.inferctl.serving.local_edge import LocalEdge, generate_keys, run_edge
from inference_platform.inferctl.serving.local_openai import openai_server
from inference_platform.inferctl.serving.server_process import ServerProcess
from inference_platform.inference_image.server_args import Listen, rank0_args
from inference_platform.inference_image.testing.cpu_llm_api.local import LocalModel, Timing, build_local_model
from inference_platform.processes import free_port
from inference_platform.settings.derived import stack_edge_policy

LOOPBACK = "127.0.0.1"
READY_TIMEOUT = 90.0


def listen() -> Listen:
    """Triton's three ports, free, on the loopback."""
    return Listen(address=LOOPBACK, http_port=free_port(), grpc_port=free_port(), metrics_port=free_port())


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
class OpenAIStack:
    model: LocalModel
    served_model: str
    openai_url: str
    """``http://127.0.0.1:<port>``: the server itself (no edge)."""
    triton_url: str
    triton_metrics_url: str
    """Triton's ``/metrics`` page (the request gauges the LLM-API model publishes)."""
    edge: LocalEdge | None
    api_key: str | None
    logs: dict[str, Path]
    openai_server: ServerProcess
    """The OpenAI server's process (a test may signal it)."""

    def active(self) -> dict[str, int]:
        """The stand-in engine's running and waiting requests."""
        return json.loads(self.model.state_file.read_text(encoding="utf-8"))


@contextlib.contextmanager
def openai_stack(settings: Any, work: Path, timing: Timing, *, edge: bool = True) -> Iterator[OpenAIStack]:
    serving = settings.serving
    model = build_local_model(serving, work, timing)
    triton = local_triton.prepare(work)
    ports = listen()
    flags = rank0_args(
        serving, model_repository=model.repository, models=model.models, listen=ports, backend_dir=triton.backend_dir
    )
    triton_url = f"http://{LOOPBACK}:{ports.http_port}"
    logs = {"triton": work / "triton.log", "openai": work / "openai.log"}
    triton_server = ServerProcess(
        [str(triton.binary), *flags], env=triton.env | model.engine_env, http_url=triton_url, log=logs["triton"]
    )
    openai_port = free_port()
    server = openai_server(
        model_dir=model.model_dir,
        served_model=serving.served_model_name,
        triton_url=triton_url,
        port=openai_port,
        env=dict(triton.env),
        log=logs["openai"],
        triton_metrics_url=f"http://{LOOPBACK}:{ports.metrics_port}/metrics",
    )
    with contextlib.ExitStack() as stack:
        stack.enter_context(triton_server)
        triton_server.wait_ready(READY_TIMEOUT)
        stack.enter_context(server)
        server.wait_ready(READY_TIMEOUT)
        running, key = None, None
        if edge:
            policy = stack_edge_policy(settings)
            keys = generate_keys(policy)
            key = next(iter(keys.values()))
            running = stack.enter_context(
                run_edge(
                    policy,
                    keys=keys,
                    upstream=Upstream(address=LOOPBACK, port=openai_port),
                    work_dir=work / "edge",
                    address=LOOPBACK,
                    port=free_port(),
                    admin_port=free_port(),
                )
            )
            logs["edge"] = running.log
        yield OpenAIStack(
            model=model,
            served_model=serving.served_model_name,
            openai_url=f"http://{LOOPBACK}:{openai_port}",
            triton_url=triton_url,
            triton_metrics_url=f"http://{LOOPBACK}:{ports.metrics_port}/metrics",
            edge=running,
            api_key=key,
            logs=logs,
            openai_server=server,
        )
    assert leftover_processes(str(work)) == []
