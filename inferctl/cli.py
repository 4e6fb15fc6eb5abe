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

from inference_platform.errors import CommandError

# name -> module exposing ``register(subparsers)``; the module sets ``handler`` via set_defaults.
COMMANDS: dict[str, str] = {
    "plan": "inference_platform.inferctl.plan.command",
    "artifacts": "inference_platform.inferctl.artifacts.command",
    "serve-local": "inference_platform.inferctl.serving.serve_local",
    "smoke": "inference_platform.inferctl.serving.smoke",
    "serve": "inference_platform.inferctl.serving.serve",
    "prepare": "inference_platform.inferctl.serving.prepare",
    "loadtest": "inference_platform.inferctl.loadtest.command",
    "verify": "inference_platform.inferctl.verify.command",
    "capacity": "inference_platform.inferctl.capacity.command",
    "cost": "inference_platform.inferctl.cost.command",
    "diff": "inference_platform.inferctl.plan.diff",
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
