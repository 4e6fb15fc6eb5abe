"""Run every benchmark, or the ones named, each with its own arguments:

    python -m bench                                   # every benchmark, defaults
    python -m bench plan --reps 3 artifacts --shards 1 --repetitions 2

A benchmark's arguments follow its name, up to the next benchmark's name.
"""

from __future__ import annotations

import importlib
import sys

# name -> module exposing ``main(argv: list[str]) -> int``
BENCHES: dict[str, str] = {
    "plan": "bench.plan",
    "policies": "bench.policies",
    "artifacts": "bench.artifacts",
    "cold-start": "bench.cold_start",
    "install": "bench.install",
    "streaming": "bench.streaming",
}


def split(argv: list[str]) -> list[tuple[str, list[str]]]:
    """``[(name, its arguments)]``; raises ValueError for arguments before any name or an unknown name."""
    runs: list[tuple[str, list[str]]] = []
    for arg in argv:
        if arg in BENCHES:
            runs.append((arg, []))
        elif runs and (arg.startswith("-") or runs[-1][1]):
            runs[-1][1].append(arg)
        else:
            raise ValueError(f"unknown benchmark {arg!r}; known: {', '.join(sorted(BENCHES))}")
    return runs or [(name, []) for name in BENCHES]


def main(argv: list[str]) -> int:
    try:
        runs = split(argv)
    except ValueError as err:
        print(err, file=sys.stderr)
        return 2
    status = 0
    for name, args in runs:
        print(f"== bench {name} {' '.join(args)}".rstrip() + " ==", flush=True)
        status |= importlib.import_module(BENCHES[name]).main(args)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
