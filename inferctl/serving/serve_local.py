"""``inferctl serve-local``: the stack's model repository on the real Triton server, on this machine.

Renders the repository from a stack's serving settings (dev by default) with the CPU stand-in in
place of the TensorRT-LLM step, then runs the tritonserver from the nvidia-pytriton wheel on
127.0.0.1 in the foreground until interrupted. Everything else — ensemble, preprocessing,
postprocessing, BLS, configs — is the production code and configuration.
"""

from __future__ import annotations

import argparse
import shutil
import signal
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from inference_image.defaults import GRPC_PORT, HTTP_PORT, LOOPBACK, METRICS_PORT

DEFAULT_STACK = "dev"
_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@dataclass(frozen=True)
class LocalRepository:
    repository: Path
    models: list[str]
    engine_dir: Path
    tokenizer_dir: Path


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("serve-local", help=__doc__.splitlines()[0].split(": ", 1)[1])
    parser.add_argument(
        "--stack", default=DEFAULT_STACK, help=f"stack whose serving settings to render (default {DEFAULT_STACK})"
    )
    parser.add_argument("--http-port", type=int, default=HTTP_PORT)
    parser.add_argument("--grpc-port", type=int, default=GRPC_PORT)
    parser.add_argument("--metrics-port", type=int, default=METRICS_PORT)
    parser.add_argument("--first-token-delay-ms", type=int, default=None, help="stand-in prefill delay (default 50)")
    parser.add_argument("--token-delay-ms", type=int, default=None, help="stand-in per-token delay (default 20)")
    parser.add_argument("--api-key-file", type=Path, help="key file when the stack's serving.auth is enabled")
    parser.add_argument("--work-dir", type=Path, help="keep the rendered repository here (default: a temporary dir)")
    parser.set_defaults(handler=run)


def build_local_repository(serving: Any, work_dir: Path, stand_in: Any) -> LocalRepository:
    """Tokenizer and stand-in engine (test assets) plus the rendered repository under ``work_dir``."""
    from inference_image.repository import render_repository
    from inference_image.testing.assets import write_engine, write_tokenizer

    tokenizer_dir = write_tokenizer(work_dir / "tokenizer")
    engine_dir = write_engine(work_dir / "engine", world_size=serving.world_size)
    repository = work_dir / "model_repository"
    models = render_repository(
        serving, repository, engine_dir=engine_dir, tokenizer_dir=tokenizer_dir, stand_in=stand_in
    )
    return LocalRepository(repository, models, engine_dir, tokenizer_dir)


def run(args: argparse.Namespace) -> int:
    from inferctl import stack_settings
    from inferctl.errors import CommandError
    from inferctl.serving import local_triton
    from inferctl.serving.server_process import ServerProcess
    from inference_image.server_args import Listen, ServerArgsError, rank0_args
    from inference_image.testing.cpu_llm.options import StandIn

    serving = stack_settings.load(args.stack).serving
    try:
        stand_in = StandIn(
            **{
                k: v
                for k, v in (
                    ("first_token_delay_ms", args.first_token_delay_ms),
                    ("token_delay_ms", args.token_delay_ms),
                )
                if v is not None
            }
        )
    except ValueError as err:
        raise CommandError(str(err), exit_code=2) from None
    api_key = _api_key(args.api_key_file) if serving.auth.enabled else None
    work_dir = args.work_dir or Path(tempfile.mkdtemp(prefix="inferctl-serve-local-"))
    if args.work_dir is not None and work_dir.exists() and any(work_dir.iterdir()):
        raise CommandError(f"--work-dir {work_dir} is not empty", exit_code=2)
    try:
        local = build_local_repository(serving, work_dir, stand_in)
        triton = local_triton.prepare(work_dir)
        listen = Listen(
            address=LOOPBACK, http_port=args.http_port, grpc_port=args.grpc_port, metrics_port=args.metrics_port
        )
        try:
            flags = rank0_args(
                serving,
                model_repository=local.repository,
                models=local.models,
                listen=listen,
                backend_dir=triton.backend_dir,
                api_key=api_key,
            )
        except ServerArgsError as err:
            raise CommandError(str(err), exit_code=2) from None
        server = ServerProcess(
            [str(triton.binary), *flags], env=triton.env, http_url=f"http://{LOOPBACK}:{args.http_port}"
        )
        print(
            f"serve-local: {args.stack} stack, CPU stand-in for {serving.llm_model_name}; "
            f"http://{LOOPBACK}:{args.http_port} grpc {LOOPBACK}:{args.grpc_port} "
            f"metrics http://{LOOPBACK}:{args.metrics_port}/metrics (Ctrl-C stops)",
            file=sys.stderr,
            flush=True,
        )
        previous = {sig: signal.signal(sig, _interrupt) for sig in _STOP_SIGNALS}
        try:
            return _serve(server, local.models)
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
    finally:
        if args.work_dir is None:
            shutil.rmtree(work_dir, ignore_errors=True)


def _interrupt(signum: int, frame: object) -> None:
    # SIGTERM (kill, timeout, make) must stop the server like Ctrl-C does, never orphan it.
    raise KeyboardInterrupt


def _serve(server: Any, models: list[str]) -> int:
    try:
        server.start()
        server.wait_ready()
        print(f"serve-local: ready ({', '.join(models)})", file=sys.stderr, flush=True)
        return server.wait()
    except KeyboardInterrupt:
        print("serve-local: stopping", file=sys.stderr, flush=True)
        return 0
    finally:
        # A second Ctrl-C must not cut the teardown short and orphan the server.
        for sig in _STOP_SIGNALS:
            signal.signal(sig, signal.SIG_IGN)
        server.stop()


def _api_key(path: Path | None) -> str:
    from inferctl.errors import CommandError

    if path is None:
        raise CommandError("the stack's serving.auth is enabled: pass --api-key-file", exit_code=2)
    try:
        return path.read_text(encoding="utf-8").strip()
    except OSError as err:
        raise CommandError(f"cannot read --api-key-file {path}: {err.strerror}", exit_code=2) from None
