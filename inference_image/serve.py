"""The inference image's entrypoint: download, verify, check, render, start the server.

``python -m inference_platform.inference_image.serve --settings <file>`` (the Dockerfile's ENTRYPOINT;
``inferctl serve`` is the same command for local runs). GPU pods serve a verified Hugging Face/ModelOpt
checkpoint through Triton's LLM-API model and the OpenAI server (``llmapi/launch.py``); Neuron pods a
verified compiled model through tritonserver (``entrypoint.py``). Any failure exits non-zero with one
line naming what is wrong; nothing is served until every artifact verified against its pinned manifest.
Exit status: 1 store or runtime failure, 2 configuration mismatch, 3 artifact integrity.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from inference_platform.catalog.serving_contract import OPENAI_PORT
from inference_platform.inference_image import defaults, settings_source

STAND_IN_ENGINE = "inference_platform.inference_image.testing.cpu_llm_api"
"""TEST DOUBLE: the CPU engine the LLM-API model imports instead of tensorrt_llm (``--cpu-stand-in``)."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    settings_source.add_arguments(parser)
    parser.add_argument(
        "--engine-uri",
        help="s3:// version of the served model: the checkpoint (GPU) or the compiled model (Neuron); "
        "default serving.artifacts.engineUri",
    )
    parser.add_argument("--tokenizer-uri", help="s3:// tokenizer version (default serving.artifacts.tokenizerUri)")
    parser.add_argument(
        "--models-dir",
        type=Path,
        default=defaults.MODELS_DIR,
        help=f"where the engine and tokenizer are downloaded and verified (default {defaults.MODELS_DIR})",
    )
    parser.add_argument(
        "--repository-dir",
        type=Path,
        default=defaults.REPOSITORY_DIR,
        help=f"where the Triton model repository is rendered (default {defaults.REPOSITORY_DIR})",
    )
    parser.add_argument("--tritonserver", default="tritonserver", help="server executable (default: on PATH)")
    parser.add_argument("--backend-dir", type=Path, help="tritonserver --backend-directory")
    parser.add_argument(
        "--mpirun", default="mpirun", help="the mpirun executable of multi-GPU launches (default mpirun)"
    )
    parser.add_argument("--hosts", default="", help="multi-node: comma-separated hosts, leader first")
    parser.add_argument(
        "--address",
        default=defaults.POD_ADDRESS,
        help=f"address the servers listen on (default {defaults.POD_ADDRESS})",
    )
    parser.add_argument(
        "--http-port", type=int, default=defaults.HTTP_PORT, help=f"Triton's HTTP port (default {defaults.HTTP_PORT})"
    )
    parser.add_argument(
        "--grpc-port", type=int, default=defaults.GRPC_PORT, help=f"Triton's gRPC port (default {defaults.GRPC_PORT})"
    )
    parser.add_argument(
        "--metrics-port",
        type=int,
        default=defaults.METRICS_PORT,
        help=f"Triton's Prometheus metrics port (default {defaults.METRICS_PORT})",
    )
    parser.add_argument("--openai-port", type=int, default=OPENAI_PORT, help="GPU: the OpenAI server's port")
    parser.add_argument(
        "--cpu-stand-in",
        action="store_true",
        help="TEST DOUBLE: serve the CPU stand-in instead of the engine (tests, local runs)",
    )
    parser.add_argument(
        "--stand-in-token-delay-ms",
        type=int,
        default=None,
        help="TEST DOUBLE: the CPU stand-in's delay per generated token, in ms",
    )
    parser.add_argument(
        "--prepare-only",
        action="store_true",
        help="download, verify, check and render, print the server command and exit (multi-node workers, init containers)",
    )


def run(args: argparse.Namespace) -> int:
    from inference_platform.errors import CommandError
    from inference_platform.inference_image import entrypoint
    from inference_platform.inference_image.server_args import Listen, redacted
    from inference_platform.inference_image.testing.cpu_llm_api.local import Timing

    serving = settings_source.load(args)
    engine_uri = args.engine_uri or serving.artifacts.engine_uri
    tokenizer_uri = args.tokenizer_uri or serving.artifacts.tokenizer_uri
    if not engine_uri or not tokenizer_uri:
        raise CommandError("no model/tokenizer URI: set serving.artifacts or pass --engine-uri/--tokenizer-uri", 2)
    stand_in = None
    if args.cpu_stand_in:
        delays = {} if args.stand_in_token_delay_ms is None else {"token_delay_ms": args.stand_in_token_delay_ms}
        stand_in = Timing(**delays)
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
        openai_port=args.openai_port,
        stand_in=stand_in,
    )
    if serving.backend == "tensorrtllm":
        return _serve_llmapi(serving, options, prepare_only=args.prepare_only, redacted=redacted)
    launch = entrypoint.prepare_launch(serving, options)
    print(
        f"serve: model {launch.checkpoint_manifest.metadata.accelerator} TP{launch.checkpoint_manifest.metadata.tensor_parallel_size} "
        f"verified; models {', '.join(launch.models)} rendered in {launch.repository}",
        file=sys.stderr,
        flush=True,
    )
    if args.prepare_only:
        print(json.dumps(redacted(launch.argv)))
        return 0
    from inference_platform.inference_image.llmapi.launch import run_launch

    # Triton and the OpenAI server, drained on SIGTERM as on GPUs (inference_image/drain.py).
    return run_launch(launch, serving)


def _serve_llmapi(serving, options, *, prepare_only: bool, redacted) -> int:
    from inference_platform.inference_image.llmapi import launch as llmapi

    if options.stand_in is not None:
        # The children (Triton's Python backend) import the stand-in engine instead of tensorrt_llm.
        os.environ["LLM_ENGINE_MODULE"] = STAND_IN_ENGINE
        if options.stand_in.token_delay_ms:
            os.environ["CPU_LLM_TOKEN_DELAY_MS"] = str(options.stand_in.token_delay_ms)
        os.environ["CPU_LLM_PREFILL_US_PER_TOKEN"] = str(options.stand_in.prefill_us_per_token)
    launch = llmapi.prepare_llmapi_launch(serving, options)
    meta = launch.checkpoint_manifest.metadata
    print(
        f"serve: checkpoint {meta.architecture} {meta.precision} verified; model {', '.join(launch.models)} "
        f"rendered in {launch.repository}",
        file=sys.stderr,
        flush=True,
    )
    if prepare_only:
        print(json.dumps(redacted(launch.argv)))
        return 0
    return llmapi.run_launch(launch, serving)


def main(argv: list[str] | None = None) -> int:
    from inference_platform.errors import CommandError

    parser = argparse.ArgumentParser(
        prog="python -m inference_platform.inference_image.serve",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_arguments(parser)
    args = parser.parse_args(argv)
    try:
        return run(args)
    except CommandError as err:
        print(f"serve: {err}", file=sys.stderr, flush=True)
        return err.exit_code


if __name__ == "__main__":
    sys.exit(main())
