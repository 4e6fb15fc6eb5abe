"""``python -m inference_platform.inference_image.openai_api``: the OpenAI server on ``--port``, in front of Triton.

Exit 2 with one line naming the file and key when the model configuration cannot configure it.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from inference_platform.components.catalog.serving_contract import HTTP_PORT, LOOPBACK, OPENAI_PORT, POD_ADDRESS

GRACEFUL_SHUTDOWN_S = 30.0


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="openai_api", description=__doc__.splitlines()[0])
    p.add_argument(
        "--model-dir", type=Path, required=True, help="the tensorrt_llm model's directory (config.pbtxt, 1/model.yaml)"
    )
    p.add_argument("--served-model-name", required=True, help="the model id clients send (and /v1/models lists)")
    p.add_argument("--tokenizer-dir", type=Path, help="tokenizer files (default: model.yaml's tokenizer or model)")
    p.add_argument("--triton-url", default=f"http://{LOOPBACK}:{HTTP_PORT}", help="Triton's HTTP endpoint")
    p.add_argument("--triton-model", default="tensorrt_llm")
    p.add_argument("--host", default=POD_ADDRESS)
    p.add_argument("--port", type=int, default=OPENAI_PORT)
    p.add_argument(
        "--shutdown-timeout",
        type=float,
        default=GRACEFUL_SHUTDOWN_S,
        help=f"seconds running streams may finish after SIGTERM (default {GRACEFUL_SHUTDOWN_S:g}; the pod passes "
        "serving.server.exitTimeoutSeconds)",
    )
    return p


def main(argv: list[str] | None = None) -> int:
    from inference_platform.inference_image.openai_api.server import build, serve

    args = parser().parse_args(argv)
    try:
        app = build(
            model_dir=args.model_dir,
            served_model=args.served_model_name,
            tokenizer_dir=args.tokenizer_dir,
            triton_url=args.triton_url,
            triton_model=args.triton_model,
        )
    except ValueError as err:
        print(f"openai_api: {err}", file=sys.stderr)
        return 2
    if args.shutdown_timeout <= 0:
        print(f"openai_api: --shutdown-timeout must be > 0 seconds, got {args.shutdown_timeout:g}", file=sys.stderr)
        return 2
    serve(app, host=args.host, port=args.port, shutdown_timeout=args.shutdown_timeout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
