"""The floor a plan is measured against: a whole Python process that registers N resources under the
SDK's stock mocks and nothing else (no recording, no policies, no reports, no provider packages).

``python -m bench.floor --resources 233`` is what any offline plan of 233 resources must at least cost:
interpreter start, the Pulumi SDK, and N RegisterResource round trips through the stock MockMonitor.
``--import`` also loads the named modules (e.g. ``pulumi_aws.ec2``: the provider SDKs load each
sub-package lazily, on first attribute access, which this forces) to tell their cost apart. Like
``inferctl``, it exits without the interpreter's teardown.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.floor", description=__doc__.splitlines()[0])
    parser.add_argument("--resources", type=int, required=True, help="resources to register (>= 1)")
    parser.add_argument("--import", dest="imports", action="append", default=[], help="also import this module")
    args = parser.parse_args(argv)
    if args.resources < 1:
        parser.error("--resources must be at least 1")
    for name in args.imports:
        # pulumi's lazy modules load on the first attribute that is not module metadata.
        getattr(importlib.import_module(name), "__all__", None)

    import pulumi

    registered = []

    class _Mocks(pulumi.runtime.Mocks):
        def new_resource(self, args: pulumi.runtime.MockResourceArgs):
            registered.append(args.typ)
            return f"{args.name}-id", dict(args.inputs)

        def call(self, args: pulumi.runtime.MockCallArgs):
            return {}

    from pulumi.runtime import settings
    from pulumi.runtime.stack import run_in_stack
    from pulumi.runtime.sync_await import _sync_await

    def program() -> None:
        for i in range(args.resources):
            pulumi.CustomResource("floor:index:Resource", f"r{i}", {"index": i, "name": f"r{i}"})

    # As the Python host (and inferctl plan) runs a program: in a root Stack, waiting for every RPC.
    pulumi.runtime.set_mocks(_Mocks(), project="floor", stack="floor", preview=True)
    settings.set_root_resource(None)  # type: ignore[arg-type]  # None clears it; pulumi types a resource
    _sync_await(run_in_stack(program))
    print(f"registered {registered.count('floor:index:Resource')} resources")
    return 0


if __name__ == "__main__":
    code = main(sys.argv[1:])
    sys.stdout.flush()
    os._exit(code)
