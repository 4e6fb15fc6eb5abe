"""Build the application from the model configuration and run it under uvicorn."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from inference_platform.catalog.serving_contract import OPENAI_KEEPALIVE_SECONDS
from inference_platform.inference_image.openai_api.app import build_app
from inference_platform.inference_image.openai_api.config import from_model_dir
from inference_platform.inference_image.openai_api.guides import GuideChecker
from inference_platform.inference_image.openai_api.llm_client import TritonLlm
from inference_platform.inference_image.openai_api.metrics import ServerMetrics
from inference_platform.inference_image.openai_api.model_files import ModelFilesError, Prompting
from inference_platform.inference_image.openai_api.server_file import read_server_file
from inference_platform.inference_image.openai_api.service import Limits, Service


def build(
    *,
    model_dir: Path,
    served_model: str,
    tokenizer_dir: Path | None,
    triton_url: str,
    triton_model: str,
    triton_key: tuple[str, str] | None = None,
    triton_metrics_url: str | None = None,
    answers_for: tuple[str, ...] = (),
) -> Any:
    config = from_model_dir(model_dir, served_model=served_model, tokenizer_dir=tokenizer_dir)
    server = read_server_file(model_dir)
    try:
        prompting = Prompting(config.tokenizer_dir)
    except ModelFilesError as err:
        raise ValueError(str(err)) from None
    guides = None
    if server.guided_backend != "none":
        guides = GuideChecker(config.tokenizer_dir, server.guide_limits)
        guides.start()  # the worker loads the tokenizer and compiler before the first guided request
    service = Service(
        served_model=config.served_model,
        prompting=prompting,
        engine=TritonLlm(triton_url, triton_model, api_key=triton_key),
        limits=Limits(max_input_len=config.max_input_len, max_seq_len=config.max_seq_len),
        streaming_engine=config.decoupled,
        server=server,
        guides=guides,
        metrics=ServerMetrics(config.served_model, server.ttft_buckets_s, triton_metrics_url=triton_metrics_url),
        answers_for=answers_for,
    )
    return build_app(service, on_shutdown=[guides.close] if guides is not None else [])


def serve(app: Any, *, host: str, port: int, shutdown_timeout: float) -> None:
    """Until SIGTERM/SIGINT; then no new connections, and running streams get ``shutdown_timeout`` s to finish.

    uvicorn re-raises the signal it caught once it has shut down, into the handler it found: this one makes a
    drained server exit 0 (the pod's supervisor reads anything else as a failure), not die of SIGTERM."""
    import logging
    import signal
    import sys

    import uvicorn

    # One line per request (its id, the edge's client id) and every warning, beside uvicorn's own log.
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(levelname)s:     %(name)s: %(message)s"))
    root = logging.getLogger("openai_api")
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    root.propagate = False

    for caught in (signal.SIGTERM, signal.SIGINT):
        signal.signal(caught, lambda *_: sys.exit(0))
    # uvloop and httptools: uvicorn's "standard" event loop and HTTP parser (the streaming path's per-token cost).
    uvicorn.run(
        app, host=host, port=port, log_level="info",
        timeout_graceful_shutdown=shutdown_timeout,  # type: ignore[arg-type]  # asyncio.timeout takes it; uvicorn says int
        timeout_keep_alive=OPENAI_KEEPALIVE_SECONDS,  # outlives the edge's idle upstream connections
        loop="uvloop", http="httptools",
    )  # fmt: skip
