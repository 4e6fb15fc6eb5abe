"""Policy evaluation at scale, with Python's cyclic collector running and paused (as the plan runs it).

The prod stack's recorded resources are copied ``--scale`` times (URNs and names made unique, parents,
dependencies and property dependencies remapped per copy) and the whole pack is evaluated over them,
in this process, after one warm-up. A collector pass walks every live object, so with it running the
cost grows faster than the resource count; paused (``inference_platform.offline_plan.collector``) it grows linearly.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench policies", description=__doc__.splitlines()[0])
    parser.add_argument("--stack", default="prod")
    parser.add_argument("--scales", type=int, nargs="+", default=[1, 5], help="copies of the stack (default 1 5)")
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args(argv)

    from inference_platform.inferctl.plan.command import make_plan
    from inference_platform.offline_plan.collector import collector_paused
    from inference_platform.offline_plan.policy_runner import evaluate
    from inference_platform.policies.pack import ENFORCEMENT_LEVEL, POLICIES

    plan = make_plan(REPO, args.stack)
    config = plan.policy_config.values
    print(f"{'resources':>9} {'collector on s':>15} {'paused s':>9} {'ratio':>6}")
    for scale in args.scales:
        resources = _copies(plan.run.resources, scale)

        def run(resources=resources) -> float:
            started = time.perf_counter()
            evaluate(resources, POLICIES, pack_level=ENFORCEMENT_LEVEL, config=config)
            return time.perf_counter() - started

        run()
        on, paused = [], []
        for _ in range(args.reps):
            on.append(run())
            with collector_paused():
                paused.append(run())
        on_s, paused_s = statistics.median(on), statistics.median(paused)
        print(f"{len(resources):9d} {on_s:15.3f} {paused_s:9.3f} {on_s / paused_s:6.2f}")
    print(f"medians of {args.reps}, in-process evaluation of the whole pack over {args.stack} copied N times")
    return 0


def _copies(resources: list, scale: int) -> list:
    out = []
    for copy in range(scale):
        suffix = "" if copy == 0 else f"-copy{copy}"

        def urn(value: str | None, suffix: str = suffix) -> str | None:
            return None if value is None or value.endswith("::") else value + suffix

        for r in resources:
            out.append(
                dataclasses.replace(
                    r,
                    urn=urn(r.urn),
                    name=r.name + suffix,
                    parent=urn(r.parent) if r.parent and "pulumi:pulumi:Stack" not in r.parent else r.parent,
                    dependencies=[urn(d) for d in r.dependencies],
                    property_dependencies={k: [urn(d) for d in v] for k, v in r.property_dependencies.items()},
                )
            )
    return out
