"""The distribution as another team gets it: the wheel built from this tree, installed with its core
dependencies only into a fresh virtualenv.

The wheel is built from a copy of the files git would ship (tracked and new, not ignored), because
setuptools builds in place and would carry whatever an earlier build left under build/lib into the wheel; it is
built by this virtualenv's setuptools (locks/bootstrap.txt, --no-build-isolation: nothing fetched).
The core dependencies come from locks/core.txt (the core's closure at the application lock's versions, with
hashes, --no-deps), so the environment is the same on any day; ``pip check`` then proves they satisfy the
wheel's own ranges, which is what a consumer's resolver would ask. The virtualenv lives under
build/packaging-env/, keyed by the lock and the interpreter: pip installs the dependencies once, and each run
reinstalls only the freshly built wheel (--no-deps).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import venv
from dataclasses import dataclass
from pathlib import Path

from tests.runtime_imports import FOLDERS, NAMESPACE, REPO

CACHE = REPO / "build" / "packaging-env"
# Bump to throw away every cached environment (a change to how they are built).
ENV_VERSION = 2
PIP_TIMEOUT = 900
BUILD_TIMEOUT = 300
# What the build reads besides the mapped folders.
BUILD_FILES = ("pyproject.toml", "setup.py", "LICENSE")
CORE_LOCK = REPO / "locks" / "core.txt"

# Sums the files of every installed distribution (pip and setuptools, which every virtualenv has, apart).
MEASURE = """
import importlib.metadata as md, json, pathlib
rows = {}
for dist in md.distributions():
    size = 0
    for f in dist.files or ():
        p = pathlib.Path(dist.locate_file(f))
        size += p.stat().st_size if p.is_file() else 0
    rows[dist.metadata["Name"]] = size
print(json.dumps(rows))
"""
BOOTSTRAP = frozenset({"pip", "setuptools"})


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


def shipped_files() -> list[Path]:
    """What the build needs, as git would ship it: the build files and every mapped folder's files."""
    listed = subprocess.run(["git", "-C", str(REPO), "ls-files", "-co", "--exclude-standard", "-z"],
                            capture_output=True, text=True, check=True, timeout=60).stdout.split("\0")  # fmt: skip
    roots = {NAMESPACE, *FOLDERS}
    return [
        Path(name)
        for name in listed
        if name and (name in BUILD_FILES or Path(name).parts[0] in roots) and (REPO / name).is_file()
    ]


def build_wheel(work: Path, log: Path) -> Path:
    """The wheel of this tree, built by pip with this virtualenv's locked setuptools (no build isolation)."""
    source, out = work / "source", work / "dist"
    for rel in shipped_files():
        (source / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / rel, source / rel)
    _run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation", "--wheel-dir", str(out),
          str(source)], log, BUILD_TIMEOUT)  # fmt: skip
    (wheel,) = out.glob("inference_platform-*.whl")
    return wheel


def wheel_env(work: Path, log: Path) -> WheelEnv:
    """A virtualenv with the core install of a freshly built wheel (its dependencies cached across runs)."""
    wheel = build_wheel(work, log)
    key = hashlib.sha256(json.dumps([ENV_VERSION, sys.version, CORE_LOCK.read_text()]).encode()).hexdigest()[:16]
    env = CACHE / f"core-{key}"
    python = env / "bin" / "python"
    if not (env / ".installed").is_file():
        shutil.rmtree(env, ignore_errors=True)
        venv.EnvBuilder(with_pip=True, clear=True).create(env)
        _run([str(python), "-m", "pip", "install", "--quiet", "--require-hashes", "--no-deps", "-r", str(CORE_LOCK)], log,
             PIP_TIMEOUT)  # fmt: skip
        _run([str(python), "-m", "pip", "install", "--quiet", "--no-deps", str(wheel)], log, PIP_TIMEOUT)
        _run([str(python), "-m", "pip", "check"], log, PIP_TIMEOUT)
        (env / ".installed").write_text(wheel.name)
    else:
        _run([str(python), "-m", "pip", "install", "--quiet", "--no-deps", "--force-reinstall", str(wheel)], log,
             PIP_TIMEOUT)  # fmt: skip
    return WheelEnv(wheel, env)


def _run(cmd: list[str], log: Path, timeout: int) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    with log.open("a") as out:
        out.write(f"$ {' '.join(cmd)}\n")
        out.flush()
        result = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, timeout=timeout, check=False)
    if result.returncode:
        raise RuntimeError(
            f"{' '.join(cmd[:4])} ... failed ({result.returncode}); see {log}:\n{log.read_text()[-3000:]}"
        )
