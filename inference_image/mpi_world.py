"""The multi-node launch of the PyTorch/LLM-API flow: one ``mpirun`` over the group, rank 0 serving.

TensorRT-LLM's ``trtllm-llmapi-launch`` (``tensorrt_llm/llmapi/trtllm-llmapi-launch``) is what every rank runs:
on rank 0 it starts the given command (with the MPI job environment removed) next to the MPI session's leader
process, on every other rank the worker process the LLM API drives (``mgmn_worker_node``). So there is one
server (Triton, loading the LLM-API model) and no per-rank tritonserver any more. The command is word-split by
that script (unquoted ``$task_with_command``): it must be plain words, never a quoted shell snippet.

Rank 0's command goes through ``drain rank0`` so the pod's supervisor knows the server's pid and can drain it
before mpirun tears the world down (inference_image/drain.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from inference_platform.inference_image.drain import Child

LLMAPI_LAUNCH = "trtllm-llmapi-launch"
SERVER_PIDFILE = Path("/tmp/inferctl/server.pid")
"""Written by rank 0's server wrapper; under the entrypoint's scratch directory (the root filesystem is read-only)."""
RANK0_MODULE = "inference_platform.inference_image.drain"


def mpirun_argv(
    *,
    hosts: Sequence[str],
    ranks_per_node: int,
    server_argv: Sequence[str],
    mpirun: str = "mpirun",
    launcher: str = LLMAPI_LAUNCH,
    python: str = "python3",
    pidfile: Path = SERVER_PIDFILE,
) -> list[str]:
    """``mpirun`` over ``hosts`` (leader first, so rank 0 — the server — lands on the leader)."""
    if not hosts or ranks_per_node < 1:
        raise ValueError("mpirun_argv: give the hosts (leader first) and at least one rank per node")
    bad = [word for word in server_argv if not word or any(c.isspace() for c in word)]
    if bad:
        raise ValueError(f"mpirun_argv: {launcher} word-splits its command; these arguments would break: {bad}")
    return [
        mpirun,
        "--host",
        ",".join(f"{host}:{ranks_per_node}" for host in hosts),
        "--map-by",
        "slot",
        "-n",
        str(len(hosts) * ranks_per_node),
        launcher,
        python,
        "-m",
        RANK0_MODULE,
        "rank0",
        str(pidfile),
        *server_argv,
    ]


def leader_children(
    mpirun: Sequence[str], front_end: Sequence[str] | None = None, pidfile: Path = SERVER_PIDFILE
) -> list[Child]:
    """What the leader's supervisor runs: the MPI world (drained through rank 0's server pid) and the OpenAI
    front end, if it runs beside Triton; both drain before mpirun is stopped."""
    children = [Child("mpirun", mpirun, drain_first=True, pidfile=pidfile)]
    if front_end is not None:
        children.append(Child("openai", front_end, drain_first=True))
    return children
