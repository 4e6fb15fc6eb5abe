"""The ``tritonserver`` command line of a stack, from its serving settings.

One replica with TP x PP = 1 is one tritonserver. Larger worlds run NVIDIA's leader mode: ``mpirun``
starts one tritonserver per rank (MPMD); rank 0 serves HTTP/gRPC/metrics and loads every model, the
other ranks load only the LLM step and listen on nothing. Each rank gets its own Python-backend
shared-memory prefix so their stubs do not collide in /dev/shm.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from inference_platform.inference_image.defaults import GRPC_PORT, HTTP_PORT, METRICS_PORT, POD_ADDRESS
from inference_platform.settings.serving import ServingSettings

# Keys end up inside one command-line flag (<apis>:<header>=<key>): no separators, enough entropy.
_API_KEY = re.compile(r"^[A-Za-z0-9._~+/-]{16,512}$")


class ServerArgsError(ValueError):
    """The command line cannot be built (bad key, missing hosts); the message says why."""


@dataclass(frozen=True, kw_only=True)
class Listen:
    address: str = POD_ADDRESS
    http_port: int = HTTP_PORT
    grpc_port: int = GRPC_PORT
    metrics_port: int = METRICS_PORT


def check_api_key(key: str) -> str:
    key = key.strip()
    if not _API_KEY.match(key):
        raise ServerArgsError(
            "the API key must be 16-512 characters of letters, digits and . _ ~ + / - (read from the mounted secret)"
        )
    return key


def redacted(argv: Sequence[str]) -> list[str]:
    """``argv`` fit for logs: the API key in the restriction flags replaced."""
    out = []
    for arg in argv:
        flag, _, value = arg.partition("=")
        if flag in ("--http-restricted-api", "--grpc-restricted-protocol") and "=" in value:
            arg = f"{flag}={value.rpartition('=')[0]}=<redacted>"
        out.append(arg)
    return out


def rank0_args(
    serving: ServingSettings,
    *,
    model_repository: Path,
    models: Sequence[str],
    listen: Listen = Listen(),
    backend_dir: Path | None = None,
    api_key: str | None = None,
) -> list[str]:
    """Flags of the serving tritonserver (rank 0), without the executable."""
    server = serving.server
    args = [
        f"--model-repository={model_repository}",
        f"--http-address={listen.address}",
        f"--grpc-address={listen.address}",
        f"--metrics-address={listen.address}",
        f"--http-port={listen.http_port}",
        f"--grpc-port={listen.grpc_port}",
        f"--metrics-port={listen.metrics_port}",
        "--allow-metrics=true",
        f"--metrics-interval-ms={server.metrics_interval_ms}",
        # Time-to-first-response histograms (nv_inference_first_response_histogram_ms): p95 TTFT for the
        # SLO alert and the serving dashboard. The CPU wheel's Triton 2.51 accepts the flag but publishes
        # no histogram (seen on serve-local); the alert and dashboard need the image's newer Triton.
        "--metrics-config=histogram_latencies=true",
        "--strict-readiness=true",
        "--disable-auto-complete-config",
        f"--model-control-mode={server.model_control_mode}",
        f"--model-load-thread-count={server.model_load_thread_count}",
        f"--exit-timeout-secs={serving.exit_timeout_seconds}",
        f"--log-verbose={server.log_verbose}",
        "--backend-config=python,shm-region-prefix-name=rank0_",
    ]
    if server.model_control_mode == "explicit":
        args += [f"--load-model={name}" for name in models]
    if backend_dir is not None:
        args.append(f"--backend-directory={backend_dir}")
    if serving.auth.enabled:
        if api_key is None:
            raise ServerArgsError("serving.auth is enabled but no API key was provided")
        restriction = f"{','.join(serving.auth.restricted_apis)}:{serving.auth.header}={check_api_key(api_key)}"
        args += [f"--http-restricted-api={restriction}", f"--grpc-restricted-protocol={restriction}"]
    return args


def worker_args(
    serving: ServingSettings, *, rank: int, model_repository: Path, backend_dir: Path | None = None
) -> list[str]:
    """Flags of rank ``rank`` > 0: the LLM step only, no listeners."""
    args = [
        f"--model-repository={model_repository}",
        "--model-control-mode=explicit",
        f"--load-model={serving.llm_model_name}",
        "--allow-http=false",
        "--allow-grpc=false",
        "--allow-metrics=false",
        "--disable-auto-complete-config",
        f"--backend-config=python,shm-region-prefix-name=rank{rank}_",
    ]
    if backend_dir is not None:
        args.append(f"--backend-directory={backend_dir}")
    return args


def command(
    serving: ServingSettings,
    *,
    tritonserver: str,
    model_repository: Path,
    models: Sequence[str],
    listen: Listen = Listen(),
    backend_dir: Path | None = None,
    api_key: str | None = None,
    hosts: Sequence[str] = (),
    mpirun: str = "mpirun",
) -> list[str]:
    """The full argv the entrypoint execs: tritonserver alone, or mpirun over every rank."""
    first = [
        tritonserver,
        *rank0_args(
            serving,
            model_repository=model_repository,
            models=models,
            listen=listen,
            backend_dir=backend_dir,
            api_key=api_key,
        ),
    ]
    if serving.world_size == 1:
        return first
    argv = [mpirun]
    if serving.nodes > 1:
        if len(hosts) != serving.nodes:
            raise ServerArgsError(
                f"serving.nodes is {serving.nodes}: give that many hosts, leader first (got {len(hosts)})"
            )
        # Ranks fill each host's slots in order, so rank 0 (the server) lands on the leader.
        argv += ["--host", ",".join(f"{host}:{serving.ranks_per_node}" for host in hosts), "--map-by", "slot"]
    argv += ["-n", "1", *first]
    for rank in range(1, serving.world_size):
        argv += [
            ":",
            "-n",
            "1",
            tritonserver,
            *worker_args(serving, rank=rank, model_repository=model_repository, backend_dir=backend_dir),
        ]
    return argv
