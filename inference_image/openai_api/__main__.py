"""``python -m inference_platform.inference_image.openai_api``: the OpenAI server on ``--port``, in front of Triton.

Exit 2 with one line naming the file and key when the model configuration cannot configure it.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from inference_platform.catalog.serving_contract import (
    HTTP_PORT,
    LOOPBACK,
    METRICS_PATH,
    METRICS_PORT,
    OPENAI_PORT,
    POD_ADDRESS,
)

GRACEFUL_SHUTDOWN_S = 30.0


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="openai_api", description=__doc__.splitlines()[0])
    p.add_argument(
        "--model-dir", type=Path, required=True, help="the tensorrt_llm model's directory (config.pbtxt, 1/model.yaml)"
    )
    p.add_argument("--served-model-name", required=True, help="the model id clients send (and /v1/models lists)")
    p.add_argument(
        "--answers-for",
        action="append",
        default=[],
        metavar="MODEL",
        help="another model's id this server also answers, as itself (serving.fallbackFor; repeat for more)",
    )
    p.add_argument("--tokenizer-dir", type=Path, help="tokenizer files (default: model.yaml's tokenizer or model)")
    p.add_argument("--triton-url", default=f"http://{LOOPBACK}:{HTTP_PORT}", help="Triton's HTTP endpoint")
    p.add_argument("--triton-model", default="tensorrt_llm", help="the Triton model that generates")
    p.add_argument(
        "--triton-metrics-url",
        default=f"http://{LOOPBACK}:{METRICS_PORT}{METRICS_PATH}",
        help="Triton's metrics page, whose engine gauges the server's /metrics relays ('' to relay none)",
    )
    # serving.auth: Triton's restricted APIs take one header and key. The key is named by where it lives, as
    # serving.auth.keyFile/keyEnv name it: the key itself as an argument would show in ps.
    p.add_argument("--triton-key-header", help="header Triton's restricted APIs want the key in (serving.auth.header)")
    key = p.add_mutually_exclusive_group()
    key.add_argument("--triton-key-file", type=Path, help="file holding that key (serving.auth.keyFile)")
    key.add_argument("--triton-key-env", help="environment variable holding that key (serving.auth.keyEnv)")
    p.add_argument("--host", default=POD_ADDRESS, help=f"address to listen on (default {POD_ADDRESS})")
    p.add_argument("--port", type=int, default=OPENAI_PORT, help=f"port to listen on (default {OPENAI_PORT})")
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
        triton_key = _triton_key(args)
    except ValueError as err:
        print(f"openai_api: {err}", file=sys.stderr)
        return 2
    try:
        app = build(
            model_dir=args.model_dir,
            served_model=args.served_model_name,
            tokenizer_dir=args.tokenizer_dir,
            triton_url=args.triton_url,
            triton_model=args.triton_model,
            triton_key=triton_key,
            triton_metrics_url=args.triton_metrics_url or None,
            answers_for=tuple(args.answers_for),
        )
    except ValueError as err:
        print(f"openai_api: {err}", file=sys.stderr)
        return 2
    # 0 is serving.server.exitTimeoutSeconds' own lower bound: streams are cancelled at once, as Triton exits at once.
    if args.shutdown_timeout < 0:
        print(f"openai_api: --shutdown-timeout must be >= 0 seconds, got {args.shutdown_timeout:g}", file=sys.stderr)
        return 2
    serve(app, host=args.host, port=args.port, shutdown_timeout=args.shutdown_timeout)
    return 0


def _triton_key(args: argparse.Namespace) -> tuple[str, str] | None:
    where = args.triton_key_file or args.triton_key_env
    if not args.triton_key_header:
        if where:
            raise ValueError("--triton-key-file/--triton-key-env need --triton-key-header")
        return None
    if args.triton_key_file:
        try:
            key = args.triton_key_file.read_text(encoding="utf-8").strip()
        except OSError as err:
            raise ValueError(f"cannot read --triton-key-file {args.triton_key_file}: {err.strerror}") from None
    elif args.triton_key_env:
        key = os.environ.get(args.triton_key_env, "").strip()
    else:
        raise ValueError("--triton-key-header needs --triton-key-file or --triton-key-env")
    if not key:
        raise ValueError(f"the key for --triton-key-header {args.triton_key_header} is empty ({where})")
    return args.triton_key_header, key


if __name__ == "__main__":
    sys.exit(main())
