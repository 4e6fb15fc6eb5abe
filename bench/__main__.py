"""Run every benchmark, or the ones named: ``python -m bench [plan] [artifacts] ...``."""

from __future__ import annotations

import importlib
import sys

# name -> module exposing ``main(argv: list[str]) -> int``
BENCHES: dict[str, str] = {"plan": "bench.plan", "artifacts": "bench.artifacts"}


def main(argv: list[str]) -> int:
    names = argv or list(BENCHES)
    unknown = [n for n in names if n not in BENCHES]
    if unknown:
        print(f"unknown benchmark(s) {unknown}; known: {sorted(BENCHES)}", file=sys.stderr)
        return 2
    status = 0
    for name in names:
        print(f"== bench {name} ==", flush=True)
        status |= importlib.import_module(BENCHES[name]).main([])
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
