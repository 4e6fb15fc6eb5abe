"""Readiness means the engine can generate, run for real: the CPU Triton with the production ``tensorrt_llm``
model and a stand-in engine whose first token takes longer than the readiness deadline, and the image's OpenAI
server. Triton's own ``/v2/health/ready`` says 200 throughout; the pod's probe path (``/health``) says 503 until a
generation has finished, then 200 (inference_image/readiness.py)."""

from __future__ import annotations

import contextlib
import time
import urllib.error
import urllib.request

import pytest

from inference_platform.catalog.serving_contract import (
    OPENAI_HEALTH_PATH,
    OPENAI_MODELS_PATH,
    READINESS_DEADLINE_ENV,
    READY_PATH,
)
from inference_platform.inferctl.serving import local_triton
from inference_platform.inferctl.serving.local_openai import openai_argv
from inference_platform.inferctl.serving.server_process import ServerProcess
from inference_platform.inference_image.server_args import rank0_args
from inference_platform.inference_image.testing.cpu_llm_api.local import Timing, build_local_model
from inference_platform.processes import free_port
from inference_platform.settings import stack_files
from tests.inferctl.serving.conftest import LOOPBACK, READY_TIMEOUT, leftover_processes, listen

pytestmark = pytest.mark.triton
FIRST_TOKEN_MS = 4000
DEADLINE_S = 1


def _status(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


def test_a_slow_engine_is_unready_while_triton_is_ready_and_ready_once_it_generates(tmp_path):
    serving = stack_files.load("dev").serving
    model = build_local_model(serving, tmp_path, Timing(first_token_delay_ms=FIRST_TOKEN_MS, token_delay_ms=5))
    triton = local_triton.prepare(tmp_path)
    ports = listen()
    flags = rank0_args(serving, model_repository=model.repository, models=model.models, listen=ports,
                       backend_dir=triton.backend_dir)  # fmt: skip
    triton_url = f"http://{LOOPBACK}:{ports.http_port}"
    port = free_port()
    server = ServerProcess(
        openai_argv(model_dir=model.model_dir, served_model=serving.model, triton_url=triton_url, port=port),
        env=dict(triton.env) | {READINESS_DEADLINE_ENV: str(DEADLINE_S)},
        http_url=f"http://{LOOPBACK}:{port}",
        log=tmp_path / "openai.log",
        ready_path=OPENAI_MODELS_PATH,  # up, whatever the engine does
        name="the OpenAI server",
    )
    with contextlib.ExitStack() as stack:
        stack.enter_context(ServerProcess([str(triton.binary), *flags], env=triton.env | model.engine_env,
                                          http_url=triton_url, log=tmp_path / "triton.log")).wait_ready(READY_TIMEOUT)  # fmt: skip
        stack.enter_context(server).wait_ready(READY_TIMEOUT)
        health = f"http://{LOOPBACK}:{port}{OPENAI_HEALTH_PATH}"
        # The server's own answer, naming its deadline: a hung probe would instead run into _status's client
        # timeout (10 s, far beyond the deadline) and raise.
        code, body = _status(health)
        assert code == 503 and f"within {DEADLINE_S} s" in body, body
        assert _status(triton_url + READY_PATH)[0] == 200  # what the old probe saw: "ready"
        deadline = time.monotonic() + FIRST_TOKEN_MS / 1000 + 10
        while time.monotonic() < deadline and _status(health)[0] != 200:
            time.sleep(0.5)
        code, body = _status(health)
        assert code == 200, body  # the shared generation finished: the engine can generate (else its reason)
    assert leftover_processes(str(tmp_path)) == []
