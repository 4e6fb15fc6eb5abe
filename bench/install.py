"""The core install's weight: the wheel built from this tree into a fresh virtualenv with its core
dependencies only (no cache), counted and sized; the figures docs/installing.md and the README quote.

Targets (issue 19): well below the 110 distributions / 858 MB that one install pulled before the extras
split. Needs PyPI (or pip's cache). Writes build/bench/install.json.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
import venv
from pathlib import Path

BEFORE = {"distributions": 110, "megabytes": 858}
# Where "well below" sits: what a change that pulled one heavy tool back into the core would cross.
TARGET = {"distributions": 60, "megabytes": 500}
OUT = Path("build/bench/install.json")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench install", description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT, help=f"where the figures go (default {OUT})")
    args = parser.parse_args(argv)

    from tools.wheel_build import BOOTSTRAP, MEASURE, build_wheel, run

    with tempfile.TemporaryDirectory(prefix="bench-install-") as tmp:
        work = Path(tmp)
        log = work / "pip.log"
        started = time.perf_counter()
        wheel = build_wheel(work, log)
        env = work / "venv"
        venv.EnvBuilder(with_pip=True).create(env)
        run([str(env / "bin" / "python"), "-m", "pip", "install", "--quiet", str(wheel)], log, 1800)
        seconds = time.perf_counter() - started
        out = subprocess.run([str(env / "bin" / "python"), "-I", "-c", MEASURE], capture_output=True, text=True,
                             check=True, timeout=120).stdout  # fmt: skip
    sizes = {name: size for name, size in json.loads(out).items() if name.lower() not in BOOTSTRAP}
    figures = {
        "distributions": len(sizes),
        "megabytes": round(sum(sizes.values()) / 1e6),
        "largest": sorted(((round(s / 1e6), n) for n, s in sizes.items()), reverse=True)[:5],
        "build_and_install_seconds": round(seconds, 1),
        "python": sys.version.split()[0],
        "wheel": wheel.name,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(figures, indent=2))
    ok = all(figures[k] <= TARGET[k] for k in TARGET)
    print(f"core install: {figures['distributions']} distributions, {figures['megabytes']} MB "
          f"(before: {BEFORE['distributions']}, {BEFORE['megabytes']} MB; target <= {TARGET['distributions']}, "
          f"{TARGET['megabytes']} MB): {'ok' if ok else 'OVER TARGET'}")  # fmt: skip
    print(f"largest: {', '.join(f'{n} {mb} MB' for mb, n in figures['largest'])}; wrote {args.out}")
    return 0 if ok else 1
