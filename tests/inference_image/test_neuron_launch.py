"""The Neuron pod's start with real artifacts in an in-process moto S3: download -> verify -> the compiled model
against the settings -> NeuronCores -> the one-model repository -> Triton and the same OpenAI server as on GPUs
(fronting neuron_llm), under the drain supervisor. The server's own config reader accepts what was rendered."""

from __future__ import annotations

import json

import boto3
import pytest
from moto import mock_aws

from inference_platform.artifacts import ModelMetadata, upload
from inference_platform.errors import CommandError
from inference_platform.inference_image.accelerators import VisibleAccelerators
from inference_platform.inference_image.entrypoint import EntrypointOptions, prepare_launch
from inference_platform.inference_image.openai_api.config import from_model_dir
from inference_platform.inference_image.server_args import Listen
from inference_platform.inference_image.testing.cpu_llm_api.local import Timing
from inference_platform.settings import stack_files

BUCKET = "inference-models"
ENGINE_URI = f"s3://{BUCKET}/llama-3.1-8b/neuron-tp8/1/"
TOKENIZER_URI = f"s3://{BUCKET}/llama-3.1-8b/tokenizer/1/"
INF2 = VisibleAccelerators("neuron", "neuron-v2", 4, 8, ("Inferentia2",))
AWS_ENV = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_REGION": "us-east-1",
           "AWS_EC2_METADATA_DISABLED": "true"}  # fmt: skip


@pytest.fixture
def launched(tmp_path, tokenizer_dir, monkeypatch):
    npu = stack_files.load("npu").serving
    # The stack pins its published manifests; this test publishes its own (the pin check is tested with the GPU launch).
    unpinned = npu.artifacts.model_copy(update={"engine_manifest_sha256": None, "tokenizer_manifest_sha256": None})
    serving = npu.model_copy(update={"artifacts": unpinned})
    for name, value in AWS_ENV.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "aws-credentials"))
    compiled = tmp_path / "compiled"
    compiled.mkdir()
    (compiled / "neuron_config.json").write_text(json.dumps({"architectures": ["LlamaForCausalLM"]}))
    (compiled / "model.pt").write_bytes(b"\x00" * 64)
    meta = {"architecture": "LlamaForCausalLM", "precision": serving.precision, "accelerator": "neuron-inferentia2",
            "tensor_parallel_size": serving.tensor_parallel, "builder": "neuronx-distributed-inference",
            "builder_version": "0.6"}  # fmt: skip
    options = EntrypointOptions(engine_uri=ENGINE_URI, tokenizer_uri=TOKENIZER_URI, models_dir=tmp_path / "models",
                                repository_dir=tmp_path / "repository", listen=Listen(address="127.0.0.1"))  # fmt: skip
    with mock_aws():
        boto3.client("s3").create_bucket(Bucket=BUCKET)
        upload(compiled, ENGINE_URI, ModelMetadata(**meta))
        upload(tokenizer_dir, TOKENIZER_URI, ModelMetadata(**meta))
        yield serving, options, lambda **kw: prepare_launch(serving, kw.pop("options", options), probe=lambda: INF2,
                                                            environ={}, **kw)  # fmt: skip


def test_a_neuron_pod_runs_triton_and_the_openai_server_on_one_contract(launched):
    serving, options, launch_with = launched
    launch = launch_with()
    assert launch.models == ["neuron_llm"] and [c.name for c in launch.children] == ["tritonserver", "openai"]
    assert all(c.drain_first for c in launch.children)
    triton, front_end = launch.children
    assert f"--model-repository={options.repository_dir}" in triton.argv
    assert front_end.argv[-2:] == [f"--model-dir={options.repository_dir / 'neuron_llm'}", "--triton-model=neuron_llm"]
    # The same drain budget for both processes (serving.server.exitTimeoutSeconds), not the server's 30 s default.
    drain = serving.exit_timeout_seconds
    assert f"--exit-timeout-secs={drain}" in triton.argv and f"--shutdown-timeout={drain}" in front_end.argv
    # What the OpenAI server reads at start accepts the Neuron repository as it accepts the GPU one.
    config = from_model_dir(options.repository_dir / "neuron_llm", served_model=serving.model,
                            tokenizer_dir=options.models_dir / "tokenizer")  # fmt: skip
    assert (config.max_input_len, config.max_seq_len, config.decoupled) == (
        serving.max_input_len, serving.max_seq_len, serving.streaming
    )  # fmt: skip


def test_the_cpu_stand_in_is_refused_on_neuron(launched):
    _, options, launch_with = launched
    import dataclasses

    with pytest.raises(CommandError, match="stand-in"):
        launch_with(options=dataclasses.replace(options, stand_in=Timing()))
