"""N local replicas of the serving pod behind the real local Envoy (``serve-local --replicas N``, issue 29).

Each replica is what one pod runs: its own Triton (CPU) with the production ``tensorrt_llm`` model and its own
stand-in engine, so its own KV-block prefix cache and counters, and its own OpenAI server. The edge in front is
the local Envoy of ``edge_envoy``, whose inference cluster lists every replica's OpenAI port and balances them by
the stack's ``edge.routing`` exactly as the cluster's gateway renders it (same Lua, same hash, same bound).

The API other rigs build on (the routing trace, issue 31's scale-down test)::

    with run_replicas(serving, work_dir, ports=[ReplicaPorts.free() for _ in range(3)], timing=Timing()) as reps:
        upstream = replicas_upstream(reps)          # the edge's inference Upstream, every replica
        reps[0].stop()                              # one replica going away (its processes reaped)

``Replica.openai_url`` is the replica's own server (no edge), ``Replica.model.state_file`` its engine's state.
Every readiness wait is bounded; leaving the block stops every process, whatever happened inside.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from inference_platform.catalog.serving_contract import LOOPBACK
from inference_platform.inferctl.serving.edge_envoy import Upstream
from inference_platform.inferctl.serving.server_process import DEFAULT_READY_TIMEOUT, ServerProcess

MAX_REPLICAS = 16
"""Each replica is a Triton and a Python server: 16 is far beyond what a laptop runs, and bounds the ports."""
PORT_STRIDE = 100
"""Replica i listens on each of replica 0's ports + i x 100 (``serve-local``'s flags give replica 0's)."""


@dataclass(frozen=True, kw_only=True)
class ReplicaPorts:
    http: int
    grpc: int
    metrics: int
    openai: int

    @classmethod
    def free(cls) -> ReplicaPorts:
        from inference_platform.processes import free_port

        return cls(http=free_port(), grpc=free_port(), metrics=free_port(), openai=free_port())

    def shifted(self, index: int) -> ReplicaPorts:
        """Replica ``index``'s ports when these are replica 0's (``PORT_STRIDE``)."""
        step = index * PORT_STRIDE
        return ReplicaPorts(
            http=self.http + step, grpc=self.grpc + step, metrics=self.metrics + step, openai=self.openai + step
        )


@dataclass
class Replica:
    index: int
    ports: ReplicaPorts
    model: Any
    """The stand-in's ``LocalModel`` (its ``state_file`` holds the engine's running and waiting counts)."""
    work_dir: Path
    processes: list[ServerProcess] = field(default_factory=list)

    @property
    def openai_url(self) -> str:
        return f"http://{LOOPBACK}:{self.ports.openai}"

    @property
    def endpoint(self) -> tuple[str, int]:
        """Its OpenAI server's (address, port): what the edge's inference cluster lists."""
        return (LOOPBACK, self.ports.openai)

    @property
    def triton_metrics_url(self) -> str:
        return f"http://{LOOPBACK}:{self.ports.metrics}/metrics"

    def stop(self) -> None:
        """Stop this replica's OpenAI server, then its Triton (as a pod's containers go)."""
        for process in reversed(self.processes):
            process.stop()


def replicas_upstream(
    replicas: Sequence[Replica], headers: tuple[tuple[str, str], ...] = (), *, eds_file: Path | None = None
) -> Upstream:
    """The edge's inference upstream: every replica's OpenAI server, replica 0 first; with ``eds_file``, read from
    that EDS file (``endpoints.LocalEndpoints``) so replicas can leave the edge as in the cluster (issue 31)."""
    first, *rest = replicas
    return Upstream(
        address=LOOPBACK,
        port=first.ports.openai,
        headers=headers,
        more=tuple((LOOPBACK, r.ports.openai) for r in rest),
        eds_file=eds_file,
    )


@contextlib.contextmanager
def run_replicas(
    serving: Any,
    work_dir: Path,
    *,
    ports: Sequence[ReplicaPorts],
    timing: Any,
    api_key: str | None = None,
    ready_timeout: float = DEFAULT_READY_TIMEOUT,
) -> Iterator[list[Replica]]:
    """Start ``len(ports)`` replicas of ``serving`` (a TensorRT-LLM stack's serving settings) under ``work_dir``,
    ready when the block starts; stopped, every process reaped, when it ends. ``timing`` is the stand-in's
    ``Timing``; ``api_key`` Triton's own key when the stack still requires one."""
    from inference_platform.inferctl.serving import local_triton
    from inference_platform.inferctl.serving.local_openai import openai_server
    from inference_platform.inference_image.server_args import Listen, rank0_args
    from inference_platform.inference_image.testing.cpu_llm_api.local import build_local_model

    if not 1 <= len(ports) <= MAX_REPLICAS:
        raise ValueError(f"replicas must be 1-{MAX_REPLICAS}, got {len(ports)}")
    replicas: list[Replica] = []
    envs: dict[int, dict[str, str]] = {}
    with contextlib.ExitStack() as stack:
        for index, own in enumerate(ports):
            home = work_dir / f"replica-{index}"
            home.mkdir(parents=True, exist_ok=True)
            model = build_local_model(serving, home, timing)
            triton = local_triton.prepare(home)
            listen = Listen(address=LOOPBACK, http_port=own.http, grpc_port=own.grpc, metrics_port=own.metrics)
            flags = rank0_args(
                serving,
                model_repository=model.repository,
                models=model.models,
                listen=listen,
                backend_dir=triton.backend_dir,
                api_key=api_key,
            )
            server = ServerProcess(
                [str(triton.binary), *flags],
                env=triton.env | model.engine_env,
                http_url=f"http://{LOOPBACK}:{own.http}",
                log=home / "triton.log",
                name=f"replica {index}'s Triton",
            )
            replica = Replica(index=index, ports=own, model=model, work_dir=home, processes=[server])
            envs[index] = dict(triton.env)  # the OpenAI server's, as serve-local gives it (no engine settings)
            stack.callback(replica.stop)
            server.start()  # every Triton loads at once: the replicas are ready in one model load's time
            replicas.append(replica)
        for replica in replicas:
            (server,) = replica.processes
            server.wait_ready(ready_timeout)
            front = openai_server(
                model_dir=replica.model.model_dir,
                served_model=serving.served_model_name,
                triton_url=server.http_url,
                port=replica.ports.openai,
                env=envs[replica.index],
                log=replica.work_dir / "openai.log",
                # Its /metrics relays Triton's, as in the pod: what llm-d's endpoint picker scrapes.
                triton_metrics_url=replica.triton_metrics_url,
            )
            replica.processes.append(front)
            front.start()
        for replica in replicas:
            replica.processes[-1].wait_ready(ready_timeout)
        yield replicas
