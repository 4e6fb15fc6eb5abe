"""``inferctl serve``: the inference image's entrypoint, for local runs and tests.

The image runs ``python -m inference_platform.inference_image.serve`` itself (it never imports this CLI);
this subcommand takes the same arguments and runs the same code (inference_image/serve.py).
"""

from __future__ import annotations

import argparse
from typing import Any


def register(subparsers: Any) -> None:
    from inference_platform.inference_image import serve

    parser = subparsers.add_parser(
        "serve",
        help="image entrypoint: verified artifacts -> model repository -> Triton (+ the OpenAI server on GPU)",
        description=serve.__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    serve.add_arguments(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from inference_platform.inference_image import serve

    return serve.run(args)
