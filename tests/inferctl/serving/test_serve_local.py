"""``inferctl serve-local`` (and ``inferctl smoke``) as a user runs them: separate processes, real servers."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import openai
import pytest

from inference_platform.processes import die_with_parent, free_port
from tests.inferctl.serving.conftest import leftover_processes, listen, wait_for_line, wait_http_200

pytestmark = pytest.mark.triton
INFERCTL = [sys.executable, "-m", "inference_platform.inferctl"]


def test_serve_local_serves_the_openai_api_until_sigterm_and_leaves_nothing(tmp_path):
    ports = listen()
    openai_port = free_port()
    work = tmp_path / "work"
    log = tmp_path / "serve-local.log"
    argv = [
        *INFERCTL,
        "serve-local",
        f"--http-port={ports.http_port}",
        f"--grpc-port={ports.grpc_port}",
        f"--metrics-port={ports.metrics_port}",
        f"--openai-port={openai_port}",
        f"--work-dir={work}",
        "--first-token-delay-ms=5",
        "--token-delay-ms=2",
    ]
    url = f"http://127.0.0.1:{openai_port}"
    with open(log, "wb") as output:
        process = subprocess.Popen(
            argv, stdout=output, stderr=subprocess.STDOUT, start_new_session=True, preexec_fn=die_with_parent()
        )
    try:
        # serve-local's own word, not the port: the OpenAI server answers /health a moment before serve-local has
        # seen it ready (its check also proves the port is its child's), and a SIGTERM in that moment is a stop
        # before "ready" was ever printed.
        wait_for_line(process, log, f"serve-local: OpenAI API on {url}/v1")
        with openai.OpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0, timeout=30) as client:
            reply = client.chat.completions.create(
                model="Llama-3.1-8B", messages=[{"role": "user", "content": "hello from serve-local"}]
            )
        assert reply.choices[0].message.content == "hello from serve-local"
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=60) == 0
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=30)
    text = log.read_text()
    assert "serve-local: ready (tensorrt_llm)" in text and f"serve-local: OpenAI API on {url}/v1" in text
    assert leftover_processes(str(work)) == []


def test_a_killed_serve_local_takes_its_servers_with_it(tmp_path):
    """SIGKILL leaves serve-local no teardown; its servers, each in a session of its own, go with it anyway."""
    ports = listen()
    work = tmp_path / "work"
    argv = [*INFERCTL, "serve-local", f"--http-port={ports.http_port}", f"--grpc-port={ports.grpc_port}",
            f"--metrics-port={ports.metrics_port}", f"--openai-port={free_port()}", f"--work-dir={work}"]  # fmt: skip
    process = subprocess.Popen(
        argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True, preexec_fn=die_with_parent()
    )
    try:
        wait_http_200(process, f"http://127.0.0.1:{ports.http_port}/v2/health/ready")
        assert leftover_processes(str(work)), "the servers run"
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=30)
    deadline = time.monotonic() + 30
    while leftover_processes(str(work)):
        assert time.monotonic() < deadline, leftover_processes(str(work))
        time.sleep(0.2)


def test_smoke_fails_with_one_line_when_nothing_listens():
    port = listen().http_port
    result = subprocess.run(
        [*INFERCTL, "smoke", "--url", f"http://127.0.0.1:{port}", "--timeout=5"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1
    expected = f"inferctl smoke: smoke failed: GET http://127.0.0.1:{port}/health: connection refused: nothing listens"
    assert result.stderr.startswith(expected) and result.stderr.count("\n") == 1, result.stderr


def test_serve_local_refuses_a_neuron_stack_in_one_line():
    result = subprocess.run([*INFERCTL, "serve-local", "--stack", "npu"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    assert result.stderr.startswith("inferctl serve-local: serving.backend neuron: serve-local runs the CPU stand-in")
    assert result.stderr.count("\n") == 1
