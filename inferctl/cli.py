"""inferctl: plan, cost and check LLM inference stacks offline, publish model artifacts, and serve, smoke-test,
verify and load-test an endpoint.

One sub-command per module; each module registers its parser and handler.

Sub-command modules keep heavy imports (pulumi, boto3, tritonclient) inside their handlers so that
``inferctl --help`` and unrelated commands start fast.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys
from collections.abc import Sequence

from inference_platform import __version__
from inference_platform.errors import CommandError
from inference_platform.extras import missing_package_message
from inference_platform.redaction import ScrubbingWriter

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
    "usage": "inference_platform.inferctl.usage.command",
    "diff": "inference_platform.inferctl.plan.diff",
    "image-cache": "inference_platform.inferctl.image_cache.command",
}


# name -> what its exit status means, shown under every --help of the command (tests/inferctl/test_help.py).
EXIT_CODES: dict[str, str] = {
    "plan": "0 planned, 1 mandatory policy violations (or two stacks sharing a physical name), "
    "2 configuration or program error",
    "artifacts": "0 done, 1 store or transfer failure, 2 bad input, 3 integrity failure (a checksum or manifest "
    "does not match)",
    "serve-local": "0 stopped by Ctrl-C, 1 the server failed, 2 bad input or a port in use",
    "smoke": "0 all good, 1 a check failed, 2 bad arguments, 4 SLOs missed",
    "serve": "1 store or runtime failure, 2 configuration mismatch, 3 artifact integrity",
    "prepare": "0 published, 1 build or store failure, 2 refused",
    "loadtest": "0 done, 1 the run failed (no request recorded, or the wall-time bound hit), 2 bad input",
    "verify": "0 every check passed, 1 a check or SLO failed, 2 bad input",
    "capacity": "0 done, 2 bad input (naming the flag), 3 the plan needs more nodes than one pool of one cluster "
    "holds (use fleet)",
    "cost": "0 done, 2 a bad plan file or a region the price table lacks",
    "usage": "0 done, 1 Prometheus unreachable or a query refused, 2 bad input (naming the flag)",
    "diff": "0 written, 2 unreadable plans",
    "image-cache": "0 built (prints the snapshot id), 1 an AWS call or the pull on the instance failed (the instance "
    "is terminated), 2 bad input (naming the flag)",
}
COMMON_EXIT_CODES = "2 also when a package the command needs is not installed (it names the extra)"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="inferctl", description=__doc__.split("\n\n")[0].replace("\n", " "))
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}",
                        help="print the version of inferctl (the inference-platform distribution) and exit")  # fmt: skip
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module_name in COMMANDS.values():
        importlib.import_module(module_name).register(subparsers)
    _describe_children(subparsers, None)
    return parser


def _describe_children(subparsers: argparse._SubParsersAction, command: str | None) -> None:
    """Every --help, down to sub-sub-commands, has a description and its command's exit status; a parser
    registered without a description gets the one-line help its parent lists it with."""
    helps = {choice.dest: choice.help for choice in subparsers._choices_actions}
    for name, parser in subparsers.choices.items():
        top = command or name
        if not parser.description:
            parser.description = helps.get(name) or f"inferctl {top} {name}"
        # A command missing from EXIT_CODES still runs; tests/inferctl/test_help.py fails on it.
        parser.epilog = f"exit status: {EXIT_CODES.get(top, 'see the description')}; {COMMON_EXIT_CODES}."
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                _describe_children(action, top)


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command with its standard streams behind :class:`ScrubbingWriter`: whatever a command prints
    (a setting's URL in a banner, an error quoting a value, a server's log line relayed) reaches the
    terminal and the CI log without credentials (inference_platform.redaction)."""
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = ScrubbingWriter(sys.stdout), ScrubbingWriter(sys.stderr)
    try:
        return _main(argv)
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):  # a closed pipe (BrokenPipeError) is _main's to report
                stream.flush()
        sys.stdout, sys.stderr = saved


def _main(argv: Sequence[str] | None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.handler(args) or 0)
    except CommandError as err:
        print(f"inferctl {args.command}: {err}", file=sys.stderr)
        return err.exit_code
    except ModuleNotFoundError as err:
        message = missing_package_message(args.command, err)
        if message is None:
            raise
        print(f"inferctl {args.command}: {message}", file=sys.stderr)
        return 2
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
