"""Building this tree's wheel as another team gets it: the shared steps of the consumer tests
(tests/packaging/wheel_env.py) and the install benchmark (bench/install.py).

The wheel is built from a copy of the files git would ship (tracked and new, not ignored), because setuptools
builds in place and would carry whatever an earlier build left under build/lib into the wheel; it is built by the
running virtualenv's setuptools (locks/bootstrap.txt, --no-build-isolation: nothing fetched).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from tools.namespace_links import NAMESPACE, REPO, folders

BUILD_TIMEOUT = 300
# What the build reads besides the mapped folders.
BUILD_FILES = ("pyproject.toml", "setup.py", "LICENSE")

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


def shipped_files() -> list[Path]:
    """What the build needs, as git would ship it: the build files and every mapped folder's files."""
    listed = subprocess.run(["git", "-C", str(REPO), "ls-files", "-co", "--exclude-standard", "-z"],
                            capture_output=True, text=True, check=True, timeout=60).stdout.split("\0")  # fmt: skip
    roots = {NAMESPACE, *folders()}
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
    run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation", "--wheel-dir", str(out),
         str(source)], log, BUILD_TIMEOUT)  # fmt: skip
    (wheel,) = out.glob("inference_platform-*.whl")
    return wheel


def run(cmd: list[str], log: Path, timeout: int) -> None:
    """Run ``cmd`` outside any active virtualenv, appending its output to ``log``; RuntimeError with the log's tail."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    with log.open("a") as out:
        out.write(f"$ {' '.join(cmd)}\n")
        out.flush()
        result = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, timeout=timeout, check=False)
    if result.returncode:
        raise RuntimeError(
            f"{' '.join(cmd[:4])} ... failed ({result.returncode}); see {log}:\n{log.read_text()[-3000:]}"
        )
