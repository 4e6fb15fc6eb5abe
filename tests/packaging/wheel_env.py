"""The distribution as another team gets it: the wheel built from this tree, installed with its core
dependencies only into a fresh virtualenv.

The wheel comes from tools/wheel_build.py (the files git would ship, built by the locked setuptools).
The core dependencies come from locks/core.txt (the core's closure at the application lock's versions, with
hashes, --no-deps), so the environment is the same on any day; ``pip check`` then proves they satisfy the
wheel's own ranges, which is what a consumer's resolver would ask. The virtualenv lives under
build/packaging-env/, keyed by the lock and the interpreter: pip installs the dependencies once, and each run
reinstalls only the freshly built wheel (--no-deps).
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import venv
from dataclasses import dataclass
from pathlib import Path

from tests.runtime_imports import REPO
from tools.wheel_build import BOOTSTRAP, MEASURE, build_wheel, run

CACHE = REPO / "build" / "packaging-env"
# Bump to throw away every cached environment (a change to how they are built).
ENV_VERSION = 3
PIP_TIMEOUT = 900
BUILD_TIMEOUT = 300
CORE_LOCK = REPO / "locks" / "core.txt"


@dataclass(frozen=True)
class WheelEnv:
    wheel: Path
    venv: Path

    @property
    def bin(self) -> Path:
        return self.venv / "bin"

    @property
    def python(self) -> Path:
        return self.bin / "python"

    def distributions(self) -> dict[str, int]:
        """Installed distribution -> bytes of its files, without pip and setuptools."""
        out = subprocess.run([str(self.python), "-I", "-c", MEASURE], capture_output=True, text=True, check=True,
                             timeout=120)  # fmt: skip
        return {name: size for name, size in json.loads(out.stdout).items() if name.lower() not in BOOTSTRAP}


def wheel_env(work: Path, log: Path) -> WheelEnv:
    """A virtualenv with the core install of a freshly built wheel (its dependencies cached across runs)."""
    wheel = build_wheel(work, log)
    key = hashlib.sha256(json.dumps([ENV_VERSION, sys.version, CORE_LOCK.read_text()]).encode()).hexdigest()[:16]
    env = CACHE / f"core-{key}"
    python = env / "bin" / "python"
    if not (env / ".installed").is_file():
        shutil.rmtree(env, ignore_errors=True)
        venv.EnvBuilder(with_pip=True, clear=True).create(env)
        # --no-compile: byte-compiling the core's every module (pulumi-aws's) took most of this install's CPU, and
        # changes nothing a test here reads; the printed size is the files' without bytecode.
        run([str(python), "-m", "pip", "install", "--quiet", "--require-hashes", "--no-deps", "--no-compile", "-r",
             str(CORE_LOCK)], log, PIP_TIMEOUT)  # fmt: skip
        run([str(python), "-m", "pip", "install", "--quiet", "--no-deps", str(wheel)], log, PIP_TIMEOUT)
        run([str(python), "-m", "pip", "check"], log, PIP_TIMEOUT)
        (env / ".installed").write_text(wheel.name)
    else:
        run([str(python), "-m", "pip", "install", "--quiet", "--no-deps", "--force-reinstall", str(wheel)], log,
             PIP_TIMEOUT)  # fmt: skip
    return WheelEnv(wheel, env)
