"""``make deps-check`` (``python -m tools.deps_check``): every locked distribution, Helm chart, container image,
tool and vendored table with a newer upstream release, and which pinned facts must be re-read.

Exit status: 0 all current, 1 updates available, 2 some source could not be checked (named "not checked" with
the reason). It needs the network, so it never runs inside ``make test``; its tests replay recorded answers.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys

from tools.deps_check import pins, report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="make deps-check", description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print the rows and facts as JSON")
    parser.add_argument("--verbose", action="store_true", help="list the current pins too")
    args = parser.parse_args(argv)
    found = report.build(pins.read())
    if args.json:
        rows = [dataclasses.asdict(r) for r in found.rows]
        facts = [{**dataclasses.asdict(f), "newest": newest} for f, newest in found.facts]
        print(json.dumps({"rows": rows, "facts": facts, "exit": found.exit_code}, indent=2))
    else:
        print(report.render(found, verbose=args.verbose))
    return found.exit_code


if __name__ == "__main__":
    sys.exit(main())
