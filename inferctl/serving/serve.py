"""``inferctl serve``: the inference image's entrypoint (download, verify, check, render, exec tritonserver).

Any failure exits non-zero with one line naming what is wrong; nothing is served until the engine
and tokenizer verified against their manifests and the engine matches the settings and this pod's
accelerators. Exit status: 1 store or runtime failure, 2 configuration mismatch, 3 artifact integrity.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from inference_platform.inference_image import settings_source


def register(subparsers: Any) -> None:
    from inference_platform.inference_image import defaults

    parser = subparsers.add_parser(
        "serve",
        help="image entrypoint: verified artifacts -> model repository -> tritonserver",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    settings_source.add_arguments(parser)
    parser.add_argument("--engine-uri", help="s3:// engine version (default serving.artifacts.engineUri)")
    parser.add_argument("--tokenizer-uri", help="s3:// tokenizer version (default serving.artifacts.tokenizerUri)")
    parser.add_argument("--models-dir", type=Path, default=defaults.MODELS_DIR)
    parser.add_argument("--repository-dir", type=Path, default=defaults.REPOSITORY_DIR)
    parser.add_argument("--tritonserver", default="tritonserver", help="server executable (default: on PATH)")
    parser.add_argument("--backend-dir", type=Path, help="tritonserver --backend-directory")
    parser.add_argument("--mpirun", default="mpirun")
    parser.add_argument("--hosts", default="", help="multi-node: comma-separated hosts, leader first")
    parser.add_argument("--address", default=defaults.POD_ADDRESS)
    parser.add_argument("--http-port", type=int, default=defaults.HTTP_PORT)
    parser.add_argument("--grpc-port", type=int, default=defaults.GRPC_PORT)
    parser.add_argument("--metrics-port", type=int, default=defaults.METRICS_PORT)
    parser.add_argument(
        "--cpu-stand-in",
        action="store_true",
        help="TEST DOUBLE: serve the CPU stand-in instead of the LLM step (tests, local runs)",
    )
    parser.add_argument("--stand-in-token-delay-ms", type=int, default=None)
    parser.add_argument(
        "--prepare-only",
        action="store_true",
        help="download, verify, check and render, print the server command and exit (multi-node workers, init containers)",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from inference_platform.inference_image import entrypoint
    from inference_platform.inference_image.server_args import Listen, redacted
    from inference_platform.inference_image.testing.cpu_llm.options import StandIn

    from inference_platform.errors import CommandError

    serving = settings_source.load(args)
    engine_uri = args.engine_uri or serving.artifacts.engine_uri
    tokenizer_uri = args.tokenizer_uri or serving.artifacts.tokenizer_uri
    if not engine_uri or not tokenizer_uri:
        raise CommandError("no engine/tokenizer URI: set serving.artifacts or pass --engine-uri/--tokenizer-uri", 2)
    stand_in = None
    if args.cpu_stand_in:
        delays = {} if args.stand_in_token_delay_ms is None else {"token_delay_ms": args.stand_in_token_delay_ms}
        stand_in = StandIn(**delays)
    options = entrypoint.EntrypointOptions(
        engine_uri=engine_uri,
        tokenizer_uri=tokenizer_uri,
        models_dir=args.models_dir,
        repository_dir=args.repository_dir,
        tritonserver=args.tritonserver,
        backend_dir=args.backend_dir,
        mpirun=args.mpirun,
        hosts=tuple(h for h in args.hosts.split(",") if h),
        listen=Listen(
            address=args.address, http_port=args.http_port, grpc_port=args.grpc_port, metrics_port=args.metrics_port
        ),
        stand_in=stand_in,
    )
    launch = entrypoint.prepare_launch(serving, options)
    print(
        f"serve: engine {launch.engine_manifest.metadata.accelerator} TP{launch.engine_manifest.metadata.tensor_parallel_size} "
        f"verified; models {', '.join(launch.models)} rendered in {launch.repository}",
        file=sys.stderr,
        flush=True,
    )
    if args.prepare_only:
        print(json.dumps(redacted(launch.argv)))
        return 0
    entrypoint.exec_launch(launch)
    return 1  # exec_launch only returns by raising
