"""Entry point: one sub-command per module; each module registers its parser and handler.

Sub-command modules keep heavy imports (pulumi, boto3, tritonclient) inside their handlers so that
``inferctl --help`` and unrelated commands start fast.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

from inferctl.errors import CommandError

# name -> module exposing ``register(subparsers)``; the module sets ``handler`` via set_defaults.
COMMANDS: dict[str, str] = {
    "plan": "inferctl.plan.command",
    "artifacts": "inferctl.artifacts.command",
    "serve-local": "inferctl.serving.serve_local",
    "smoke": "inferctl.serving.smoke",
    "serve": "inferctl.serving.serve",
    "prepare": "inferctl.serving.prepare",
    "loadtest": "inferctl.loadtest.command",
    "verify": "inferctl.verify.command",
    "capacity": "inferctl.capacity.command",
    "cost": "inferctl.cost.command",
    "diff": "inferctl.plan.diff",
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="inferctl", description=__doc__.splitlines()[0])
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module_name in COMMANDS.values():
        importlib.import_module(module_name).register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.handler(args) or 0)
    except CommandError as err:
        print(f"inferctl {args.command}: {err}", file=sys.stderr)
        return err.exit_code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader (e.g. `| head`) went away: not an error of ours, and no traceback.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


def console() -> None:
    """The ``inferctl`` executable: exit without Python's interpreter teardown.

    Tearing down pulumi-aws's and pulumi-kubernetes's thousands of modules takes about a second after
    the work is done; every file we write is closed by then, so only the standard streams need a flush.
    """
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
