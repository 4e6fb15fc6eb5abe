"""The image's OpenAI server (``inference_platform.inference_image.openai_api``) as a child process on 127.0.0.1.

``serve-local`` and the tests start it the same way, after Triton is ready: the same module and arguments the
serving pod runs, pointed at the rendered ``tensorrt_llm`` model directory and the local Triton. Ready means its
``/health`` answers 200, which it does only once Triton's ``tensorrt_llm`` model is ready.
"""

from __future__ import annotations

import sys
from pathlib import Path

from inference_platform.catalog.serving_contract import LOOPBACK, OPENAI_HEALTH_PATH
from inference_platform.inferctl.serving.server_process import ServerProcess

MODULE = "inference_platform.inference_image.openai_api"


def openai_argv(
    *,
    model_dir: Path,
    served_model: str,
    triton_url: str,
    port: int,
    host: str = LOOPBACK,
    triton_metrics_url: str = "",
) -> list[str]:
    return [
        sys.executable,
        "-m",
        MODULE,
        "--model-dir",
        str(model_dir),
        "--served-model-name",
        served_model,
        "--triton-url",
        triton_url,
        "--host",
        host,
        "--port",
        str(port),
        # The engine gauges the server relays on its /metrics (Triton's metrics port; '' relays none).
        "--triton-metrics-url",
        triton_metrics_url,
    ]


def openai_server(
    *,
    model_dir: Path,
    served_model: str,
    triton_url: str,
    port: int,
    env: dict[str, str],
    log: Path | None = None,
    triton_metrics_url: str = "",
) -> ServerProcess:
    argv = openai_argv(
        model_dir=model_dir,
        served_model=served_model,
        triton_url=triton_url,
        port=port,
        triton_metrics_url=triton_metrics_url,
    )
    return ServerProcess(
        argv,
        env=env,
        http_url=f"http://{LOOPBACK}:{port}",
        log=log,
        ready_path=OPENAI_HEALTH_PATH,
        name="the OpenAI server",
    )
