"""The real tritonserver that ships inside the ``nvidia-pytriton`` wheel, made runnable on CPU.

Only its ``pytriton/tritonserver`` tree is used (the pytriton library is never imported). The Python
backend needs the stub built for the running interpreter next to ``libtriton_python.so``; that pair is
copied into a private backend directory so nothing is written into site-packages. The server's shared
libraries live in ``<site-packages>/nvidia_pytriton.libs``, and the stub imports numpy and our code
from the interpreter first on PATH, which must be this one.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from inference_platform.errors import CommandError

LIBS_DIR = "nvidia_pytriton.libs"
STUB = "triton_python_backend_stub"


@dataclass(frozen=True)
class LocalTriton:
    binary: Path
    backend_dir: Path
    env: dict[str, str]
    """The environment to run the binary with (the caller's, plus library and interpreter paths)."""


def tritonserver_tree() -> Path:
    """``<site-packages>/pytriton/tritonserver`` (located without importing pytriton)."""
    spec = importlib.util.find_spec("pytriton")
    if spec is None or not spec.submodule_search_locations:
        raise CommandError("the nvidia-pytriton wheel is not installed (make venv installs it)", exit_code=2)
    tree = Path(next(iter(spec.submodule_search_locations))) / "tritonserver"
    if not (tree / "bin" / "tritonserver").is_file():
        raise CommandError(f"{tree}/bin/tritonserver is missing; reinstall nvidia-pytriton", exit_code=2)
    return tree


def prepare(work_dir: Path) -> LocalTriton:
    """Set up a private backend directory under ``work_dir`` and the environment to run the server."""
    tree = tritonserver_tree()
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    stub = tree / "python_backend_stubs" / version / STUB
    if not stub.is_file():
        raise CommandError(f"nvidia-pytriton ships no Python backend stub for Python {version}", exit_code=2)
    python_backend = work_dir / "backends" / "python"
    python_backend.mkdir(parents=True, exist_ok=True)
    for item in (tree / "backends" / "python").iterdir():
        if item.is_file():
            shutil.copy2(item, python_backend / item.name)
    shutil.copy2(stub, python_backend / STUB)
    libs = tree.parent.parent / LIBS_DIR
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = os.pathsep.join(p for p in (str(libs), env.get("LD_LIBRARY_PATH", "")) if p)
    env["PATH"] = os.pathsep.join(p for p in (str(Path(sys.executable).parent), env.get("PATH", "")) if p)
    return LocalTriton(binary=tree / "bin" / "tritonserver", backend_dir=work_dir / "backends", env=env)
