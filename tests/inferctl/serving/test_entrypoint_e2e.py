"""The image entrypoint end to end: artifacts in S3 (moto server) -> ``inferctl serve`` downloads,
verifies, checks the engine against the (fake) visible GPU, renders, execs the real tritonserver with
the stand-in -> smoke passes with the API key; a corrupted artifact is refused by name, nothing starts."""

from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import boto3
import pytest
from inference_platform.artifacts import ModelMetadata, upload
from inference_platform.inferctl.serving import local_triton
from inference_platform.inferctl.serving.smoke import SmokeConfig, SmokeReport, run_smoke
from inference_platform.inferctl.serving.smoke_grpc import stream_generate
from inference_platform.inferctl.serving.smoke_http import SmokeFailure
from inference_platform.inference_image.testing.assets import STAND_IN_MARKER, write_engine
from inference_platform.infra.settings.serving import SloSettings
from inference_platform.offline_plan import stack_settings
from moto.server import ThreadedMotoServer

from tests.inferctl.serving.conftest import leftover_processes, listen
from tests.inferctl.serving.test_serve_local import INFERCTL, wait_ready

pytestmark = [pytest.mark.triton, pytest.mark.motoserver]

BUCKET = "inference-models-e2e"
ENGINE_URI = f"s3://{BUCKET}/llama-3.1-8b/fp8-sm89-tp1/engine/"
TOKENIZER_URI = f"s3://{BUCKET}/llama-3.1-8b/fp8-sm89-tp1/tokenizer/"
API_KEY = "e2e-api-key-0123456789abcdef"
STREAMS_BEFORE_DRAIN = 48
# What nvidia-smi prints on a g6.xlarge node for the query the entrypoint makes.
FAKE_NVIDIA_SMI = "#!/bin/sh\necho '0, NVIDIA L4, 8.9'\n"
METADATA = ModelMetadata(
    architecture="LlamaForCausalLM",
    precision="fp8",
    accelerator="nvidia-l4",
    builder="tensorrt-llm",
    builder_version="0.20.0",
)


@pytest.fixture(scope="module")
def s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """A moto S3 server on 127.0.0.1 holding the stand-in engine and the tokenizer; yields the AWS env."""
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
        from inference_platform.inference_image.testing.assets import write_tokenizer

        boto3.client("s3").create_bucket(Bucket=BUCKET)
        upload(write_engine(home / "engine"), ENGINE_URI, METADATA)
        upload(write_tokenizer(home / "tokenizer"), TOKENIZER_URI, METADATA)
        yield env
    stopper = threading.Thread(target=server.stop, daemon=True)
    stopper.start()
    stopper.join(15)


@pytest.fixture
def pod(tmp_path: Path, s3: dict[str, str]) -> dict[str, object]:
    """What the rollout gives the container: the settings file, the mounted key, a GPU, the server."""
    dev = stack_settings.load("dev").serving.model_dump(by_alias=True, mode="json")
    key_file = tmp_path / "secrets" / "api-key"
    key_file.parent.mkdir()
    key_file.write_text(API_KEY + "\n")
    dev["auth"] = {**dev["auth"], "enabled": True, "keyFile": str(key_file)}
    settings = tmp_path / "serving.json"
    settings.write_text(json.dumps(dev))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "nvidia-smi").write_text(FAKE_NVIDIA_SMI)
    (bin_dir / "nvidia-smi").chmod(0o755)
    triton = local_triton.prepare(tmp_path / "triton")
    env = {**triton.env, **s3, "NVIDIA_VISIBLE_DEVICES": "0"}
    env["PATH"] = f"{bin_dir}{os.pathsep}{env['PATH']}"
    return {"settings": settings, "env": env, "triton": triton, "work": tmp_path}


def _serve(pod: dict[str, object], ports, *, engine_uri: str = ENGINE_URI) -> list[str]:
    work = pod["work"]
    triton = pod["triton"]
    return [
        *INFERCTL,
        "serve",
        f"--settings={pod['settings']}",
        f"--engine-uri={engine_uri}",
        f"--tokenizer-uri={TOKENIZER_URI}",
        f"--models-dir={work / 'models'}",
        f"--repository-dir={work / 'repository'}",
        f"--tritonserver={triton.binary}",
        f"--backend-dir={triton.backend_dir}",
        "--address=127.0.0.1",
        f"--http-port={ports.http_port}",
        f"--grpc-port={ports.grpc_port}",
        f"--metrics-port={ports.metrics_port}",
        "--cpu-stand-in",
        "--stand-in-token-delay-ms=3",
    ]


def test_the_entrypoint_serves_verified_artifacts_and_smoke_passes(pod):
    ports = listen()
    log = pod["work"] / "serve.log"
    with open(log, "wb") as output:
        process = subprocess.Popen(
            _serve(pod, ports), env=pod["env"], stdout=output, stderr=subprocess.STDOUT, start_new_session=True
        )
    url = f"http://127.0.0.1:{ports.http_port}"
    try:
        wait_ready(process, url)
        config = SmokeConfig(
            url=url,
            grpc_url=f"127.0.0.1:{ports.grpc_port}",
            headers={"x-api-key": API_KEY},
            models=["ensemble", "preprocessing", "postprocessing", "tensorrt_llm", "tensorrt_llm_bls"],
            slo=SloSettings(
                ttft_p50_ms=60_000, ttft_p95_ms=60_000, itl_p50_ms=60_000, min_output_tokens_per_second=0.001
            ),
            guided=True,
            requests=2,
            max_tokens=16,
        )
        report = run_smoke(config, SmokeReport())
        assert len(report.checks) == 8 and report.slo_misses == []
        with pytest.raises(SmokeFailure, match="expecting header 'x-api-key'"):
            run_smoke(SmokeConfig(**{**config.__dict__, "headers": {}}), SmokeReport())
        # Many finished gRPC streams, then the drain. A client that cancelled its finished streams now and
        # then leaked request state that pinned the ensemble, so the drain hit Triton's exit timeout (the
        # old flake); with this many streams the old client failed here every time (smoke_grpc).
        for _ in range(STREAMS_BEFORE_DRAIN):
            text, _timing = stream_generate(f"127.0.0.1:{ports.grpc_port}", headers={"x-api-key": API_KEY},
                                            prompt="drain", max_tokens=1, stream=True, timeout=60)  # fmt: skip
            assert text
        process.send_signal(signal.SIGTERM)
        code = process.wait(timeout=60)  # the exec'd tritonserver itself drains and exits
        assert code == 0, f"exit status {code}; end of the server log:\n{log.read_text()[-4000:]}"
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=30)
    text = log.read_text()
    assert "serve: engine nvidia-l4 TP1 verified" in text and "Started HTTPService at 127.0.0.1" in text
    assert API_KEY not in text
    assert leftover_processes(str(pod["work"])) == []


def test_a_corrupted_artifact_is_refused_by_name_and_nothing_starts(pod, s3):
    corrupt = ENGINE_URI.replace("/engine/", "/engine-corrupt/")
    engine = write_engine(pod["work"] / "engine-src")
    with pytest.MonkeyPatch.context() as patch:
        for name, value in s3.items():
            patch.setenv(name, value)
        upload(engine, corrupt, METADATA)
        key = corrupt.removeprefix(f"s3://{BUCKET}/") + "rank0.engine"
        # Same size, other bytes: only the SHA-256 can tell.
        tampered = bytes(reversed(STAND_IN_MARKER))
        boto3.client("s3").put_object(Bucket=BUCKET, Key=key, Body=tampered)
    ports = listen()
    result = subprocess.run(
        _serve(pod, ports, engine_uri=corrupt), env=pod["env"], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 3
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("inferctl serve: engine artifact refused")
    assert "rank0.engine" in result.stderr and "sha256" in result.stderr
    assert not (pod["work"] / "repository").exists()
    assert "tritonserver" not in result.stdout + result.stderr.split("rank0.engine")[1]
    assert leftover_processes(str(pod["work"])) == []
    shutil.rmtree(pod["work"] / "models")


def test_prepare_only_renders_and_prints_the_command_without_serving(pod):
    result = subprocess.run(
        [*_serve(pod, listen()), "--prepare-only"], env=pod["env"], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    argv = json.loads(result.stdout)
    assert argv[0].endswith("tritonserver") and "--strict-readiness=true" in argv
    assert API_KEY not in result.stdout and any(a.endswith("x-api-key=<redacted>") for a in argv)
    assert sys.executable not in argv
    assert (pod["work"] / "repository" / "ensemble" / "config.pbtxt").is_file()
    assert leftover_processes(str(pod["work"])) == []
