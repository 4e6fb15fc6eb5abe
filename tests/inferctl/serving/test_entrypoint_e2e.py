"""The GPU image's entrypoint end to end: a checkpoint in S3 (moto server) -> ``inferctl serve`` downloads,
verifies, checks it against the settings and the (fake) visible GPU, renders the LLM-API model, starts the real
tritonserver (the production model.py over the CPU stand-in engine) and the OpenAI server under the drain
supervisor -> the official ``openai`` client gets answers; SIGTERM drains both; a tampered checkpoint is
refused by name and nothing starts."""

from __future__ import annotations

import json
import logging
import os
import re
import signal
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import boto3
import pytest
from moto.server import ThreadedMotoServer

from inference_platform.artifacts import ModelMetadata, upload
from inference_platform.inferctl.serving import local_triton
from inference_platform.inferctl.serving.server_process import http_ready
from inference_platform.inference_image.testing.cpu_llm_api.checkpoint import write_checkpoint
from inference_platform.processes import die_with_parent, free_port
from inference_platform.settings import stack_files
from tests.inferctl.serving.conftest import leftover_processes, listen
from tests.inferctl.serving.test_serve_local import INFERCTL

pytestmark = [pytest.mark.triton, pytest.mark.motoserver]

BUCKET = "inference-models-e2e"
CHECKPOINT_URI = f"s3://{BUCKET}/llama-3.1-8b-instruct-fp8/1/"
TOKENIZER_URI = f"s3://{BUCKET}/llama-3.1-8b-instruct-fp8/tokenizer/1/"
# What nvidia-smi prints on a g6.xlarge node for the query the entrypoint makes.
FAKE_NVIDIA_SMI = "#!/bin/sh\necho '0, NVIDIA L4, 8.9'\n"
METADATA = ModelMetadata(
    architecture="LlamaForCausalLM",
    precision="fp8",
    accelerator="nvidia-l4",
    builder="modelopt",
    builder_version="0.15.1",
)
READY_SECONDS = 180


def _fp8_checkpoint(directory: Path) -> Path:
    """The stand-in's weightless checkpoint, shaped as a Model Optimizer FP8 one (what dev serves)."""
    write_checkpoint(directory)
    (directory / "model.safetensors").write_bytes(b"\x00" * 4096)
    (directory / "hf_quant_config.json").write_text(json.dumps({"quantization": {"quant_algo": "FP8"}}))
    return directory


@pytest.fixture(scope="module")
def s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """A moto S3 server on 127.0.0.1 holding the checkpoint and its tokenizer; yields the AWS env."""
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    home = tmp_path_factory.mktemp("aws")
    env = {
        "AWS_ENDPOINT_URL": f"http://{host}:{port}",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_REGION": "us-east-1",
        "AWS_EC2_METADATA_DISABLED": "true",
        "AWS_CONFIG_FILE": str(home / "config"),
        "AWS_SHARED_CREDENTIALS_FILE": str(home / "credentials"),
    }
    with pytest.MonkeyPatch.context() as patch:
        for name in [n for n in os.environ if n.startswith("AWS_")]:
            patch.delenv(name)
        for name, value in env.items():
            patch.setenv(name, value)
        boto3.client("s3").create_bucket(Bucket=BUCKET)
        checkpoint = _fp8_checkpoint(home / "checkpoint")
        upload(checkpoint, CHECKPOINT_URI, METADATA)
        tokenizer = home / "tokenizer"
        tokenizer.mkdir()
        for name in ("tokenizer.json", "tokenizer_config.json", "generation_config.json"):
            (tokenizer / name).write_bytes((checkpoint / name).read_bytes())
        upload(tokenizer, TOKENIZER_URI, METADATA)
        yield env
    stopper = threading.Thread(target=server.stop, daemon=True)
    stopper.start()
    stopper.join(15)


@pytest.fixture
def pod(tmp_path: Path, s3: dict[str, str]) -> dict[str, object]:
    """What the rollout gives the container: the settings file, a GPU, the server binaries."""
    settings = tmp_path / "serving.json"
    settings.write_text(json.dumps(stack_files.load("dev").serving.model_dump(by_alias=True, mode="json")))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "nvidia-smi").write_text(FAKE_NVIDIA_SMI)
    (bin_dir / "nvidia-smi").chmod(0o755)
    triton = local_triton.prepare(tmp_path / "triton")
    env = {**triton.env, **s3, "NVIDIA_VISIBLE_DEVICES": "0", "CPU_LLM_TOKEN_DELAY_MS": "2"}
    env["PATH"] = f"{bin_dir}{os.pathsep}{env['PATH']}"
    return {"settings": settings, "env": env, "triton": triton, "work": tmp_path}


def _serve(pod: dict[str, object], ports, openai_port: int, *, checkpoint_uri: str = CHECKPOINT_URI) -> list[str]:
    work = pod["work"]
    triton = pod["triton"]
    return [
        *INFERCTL,
        "serve",
        f"--settings={pod['settings']}",
        f"--engine-uri={checkpoint_uri}",
        f"--tokenizer-uri={TOKENIZER_URI}",
        f"--models-dir={work / 'models'}",
        f"--repository-dir={work / 'repository'}",
        f"--tritonserver={triton.binary}",
        f"--backend-dir={triton.backend_dir}",
        "--address=127.0.0.1",
        f"--http-port={ports.http_port}",
        f"--grpc-port={ports.grpc_port}",
        f"--metrics-port={ports.metrics_port}",
        f"--openai-port={openai_port}",
        "--cpu-stand-in",
    ]


def _wait_healthy(process: subprocess.Popen, url: str, log: Path) -> None:
    deadline = time.monotonic() + READY_SECONDS
    while time.monotonic() < deadline:
        assert process.poll() is None, f"exited with {process.returncode}:\n{log.read_text()[-4000:]}"
        if http_ready(url + "/health", timeout=5):
            return
        time.sleep(0.5)
    pytest.fail(f"/health not 200 within {READY_SECONDS} s:\n{log.read_text()[-4000:]}")


def test_the_entrypoint_serves_a_verified_checkpoint_to_the_openai_client_and_drains(pod):
    from openai import OpenAI

    ports, openai_port = listen(), free_port()
    log = pod["work"] / "serve.log"
    with open(log, "wb") as output:
        process = subprocess.Popen(
            _serve(pod, ports, openai_port),
            env=pod["env"],
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=die_with_parent(),
        )
    url = f"http://127.0.0.1:{openai_port}"
    try:
        _wait_healthy(process, url, log)
        client = OpenAI(base_url=f"{url}/v1", api_key="unused-behind-the-edge", max_retries=0, timeout=60)
        assert [m.id for m in client.models.list().data] == ["Llama-3.1-8B"]
        answer = client.chat.completions.create(
            model="Llama-3.1-8B", messages=[{"role": "user", "content": "hello entrypoint"}], max_tokens=8
        )
        assert answer.choices[0].message.content and answer.usage.completion_tokens > 0
        assert answer.usage.total_tokens == answer.usage.prompt_tokens + answer.usage.completion_tokens
        chunks = list(
            client.chat.completions.create(
                model="Llama-3.1-8B",
                messages=[{"role": "user", "content": "stream please"}],
                max_tokens=8,
                stream=True,
                stream_options={"include_usage": True},
            )
        )
        assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens > 0
        # What KEDA scales on and the C++ backend used to publish: the model's own request gauges.
        with urllib.request.urlopen(f"http://127.0.0.1:{ports.metrics_port}/metrics", timeout=10) as response:
            metrics = response.read().decode()
        gauges = dict(
            re.findall(r'^nv_trt_llm_request_metrics\{[^}]*request_type="(\w+)"[^}]*\} (\S+)$', metrics, re.M)
        )
        # active/waiting from the model's bookkeeping; scheduled/context from the engine's iteration stats.
        assert set(gauges) == {"active", "max", "waiting", "scheduled", "context"}, metrics
        assert (gauges["active"], gauges["max"], gauges["waiting"]) == ("0", "16", "0"), metrics
        process.send_signal(signal.SIGTERM)
        code = process.wait(timeout=90)  # the supervisor drains the OpenAI server and Triton, then exits
        assert code == 0, f"exit status {code}; end of the log:\n{log.read_text()[-4000:]}"
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=30)
    text = log.read_text()
    assert "serve: checkpoint LlamaForCausalLM fp8 verified; model tensorrt_llm rendered" in text
    assert "Started HTTPService at 127.0.0.1" in text
    assert leftover_processes(str(pod["work"])) == []


def test_a_tampered_checkpoint_is_refused_by_name_and_nothing_starts(pod, s3):
    tampered_uri = CHECKPOINT_URI.replace("/1/", "/2/")
    with pytest.MonkeyPatch.context() as patch:
        for name, value in s3.items():
            patch.setenv(name, value)
        upload(_fp8_checkpoint(pod["work"] / "source"), tampered_uri, METADATA)
        key = tampered_uri.removeprefix(f"s3://{BUCKET}/") + "model.safetensors"
        # Same size, other bytes: only the SHA-256 can tell.
        boto3.client("s3").put_object(Bucket=BUCKET, Key=key, Body=b"\x01" * 4096)
    result = subprocess.run(
        _serve(pod, listen(), free_port(), checkpoint_uri=tampered_uri),
        env=pod["env"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 3, result.stderr
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("inferctl serve: engine artifact refused")
    assert "model.safetensors" in result.stderr and "sha256" in result.stderr
    assert not (pod["work"] / "repository").exists()
    assert leftover_processes(str(pod["work"])) == []


def test_prepare_only_renders_and_prints_the_server_command_without_serving(pod):
    result = subprocess.run(
        [*_serve(pod, listen(), free_port()), "--prepare-only"],
        env=pod["env"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    argv = json.loads(result.stdout)
    assert argv[0].endswith("tritonserver") and "--strict-readiness=true" in argv
    model = pod["work"] / "repository" / "tensorrt_llm"
    assert (model / "config.pbtxt").is_file() and (model / "1" / "model.yaml").is_file()
    assert leftover_processes(str(pod["work"])) == []


def test_with_serving_auth_the_openai_server_reaches_the_restricted_triton_with_the_key(pod):
    """serving.auth restricts Triton's inference API to one header and key; the pod's OpenAI server must carry
    it on loopback (it reads the key where the settings keep it), and a keyless call is refused by Triton."""
    from openai import OpenAI

    serving = json.loads(pod["settings"].read_text())
    serving["auth"] = {**serving["auth"], "enabled": True, "keyEnv": "TRITON_TEST_KEY"}
    serving["auth"]["keyFile"] = None
    pod["settings"].write_text(json.dumps(serving))
    env = {**pod["env"], "TRITON_TEST_KEY": "k3y-for-triton-0123456789"}
    ports, openai_port = listen(), free_port()
    log = pod["work"] / "serve.log"
    with open(log, "wb") as output:
        process = subprocess.Popen(
            _serve(pod, ports, openai_port),
            env=env,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=die_with_parent(),
        )
    url = f"http://127.0.0.1:{openai_port}"
    try:
        _wait_healthy(process, url, log)
        client = OpenAI(base_url=f"{url}/v1", api_key="unused-behind-the-edge", max_retries=0, timeout=60)
        answer = client.chat.completions.create(
            model="Llama-3.1-8B", messages=[{"role": "user", "content": "hello with a key"}], max_tokens=4
        )
        assert answer.choices[0].message.content and answer.usage.completion_tokens > 0
        keyless = urllib.request.Request(
            f"http://127.0.0.1:{ports.http_port}/v2/models/tensorrt_llm/generate",
            data=json.dumps({"text_input": "hi", "sampling_param_max_tokens": 2}).encode(),
            headers={"Content-Type": "application/json"},
        )
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(keyless, timeout=10)
        assert refused.value.code in (401, 403), refused.value.code
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=90)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=30)
    assert "k3y-for-triton-0123456789" not in log.read_text()
