"""The GPU pod's start with real artifacts in an in-process moto S3: download -> verify -> the checkpoint
against the settings -> GPUs -> render -> the two processes; every refusal starts and renders nothing."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import boto3
import pytest
import yaml
from moto import mock_aws

from inference_platform.artifacts import ModelMetadata, upload
from inference_platform.errors import CommandError
from inference_platform.inference_image.accelerators import VisibleAccelerators
from inference_platform.inference_image.entrypoint import EntrypointOptions
from inference_platform.inference_image.llmapi.launch import checkpoint_problems, prepare_llmapi_launch
from inference_platform.inference_image.openai_api.__main__ import parser as openai_parser
from inference_platform.inference_image.server_args import Listen

BUCKET = "inference-models"
FP8_URI = f"s3://{BUCKET}/llama-3.1-8b-instruct-fp8/1/"
BF16_URI = f"s3://{BUCKET}/llama-3.1-8b-instruct/1/"
ENGINE_URI = f"s3://{BUCKET}/llama-3.1-8b/engine/1/"
TOKENIZER_URI = f"s3://{BUCKET}/llama-3.1-8b/tokenizer/1/"
OTHER_TOKENIZER_URI = f"s3://{BUCKET}/llama-3.1-8b/tokenizer/2/"
DRAFT_URI = f"s3://{BUCKET}/eagle3-llama-3.1-8b/1/"
BOGUS_TOKENIZER_URI = f"s3://{BUCKET}/llama-3.1-8b/tokenizer/3/"
KEY = "launch-test-key-0123456789abcdef"
AWS_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_REGION": "us-east-1",
    "AWS_EC2_METADATA_DISABLED": "true",
}
L4 = VisibleAccelerators("nvidia", "sm89", 1, 1, ("NVIDIA L4",))
GIB = 2**30


def _metadata(**fields) -> ModelMetadata:
    base = {
        "architecture": "LlamaForCausalLM",
        "precision": "fp8",
        "accelerator": "nvidia-l4",
        "builder": "modelopt",
        "builder_version": "0.15.1",
    }
    return ModelMetadata(**(base | fields))


def _checkpoint(root: Path, quant_algo: str | None) -> Path:
    """A Hugging Face checkpoint's shape (weights are opaque bytes here): what the launch checks."""
    root.mkdir(parents=True)
    (root / "config.json").write_text(json.dumps({"architectures": ["LlamaForCausalLM"]}))
    (root / "model.safetensors").write_bytes(b"\x00" * 64)
    if quant_algo is not None:
        quant = {"producer": {"name": "modelopt"}, "quantization": {"quant_algo": quant_algo}}
        (root / "hf_quant_config.json").write_text(json.dumps(quant))
    return root


@pytest.fixture(scope="module")
def bucket(tmp_path_factory, tokenizer_dir):
    work = tmp_path_factory.mktemp("sources")
    with pytest.MonkeyPatch.context() as patch:
        for name, value in AWS_ENV.items():
            patch.setenv(name, value)
        patch.setenv("AWS_CONFIG_FILE", str(work / "aws-config"))
        patch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(work / "aws-credentials"))
        with mock_aws():
            boto3.client("s3").create_bucket(Bucket=BUCKET)
            upload(_checkpoint(work / "fp8", "FP8"), FP8_URI, _metadata())
            upload(_checkpoint(work / "bf16", None), BF16_URI, _metadata(precision="bf16"))
            engine = work / "engine"
            engine.mkdir()
            (engine / "config.json").write_text("{}")
            (engine / "rank0.engine").write_bytes(b"engine")
            upload(engine, ENGINE_URI, _metadata())
            upload(tokenizer_dir, TOKENIZER_URI, _metadata())
            upload(_checkpoint(work / "draft", None), DRAFT_URI, _metadata(precision="bf16"))
            upload(tokenizer_dir, OTHER_TOKENIZER_URI, _metadata(builder_version="0.15.2"))
            bogus = work / "bogus"
            bogus.mkdir()
            (bogus / "vocab.txt").write_text("a\n")
            upload(bogus, BOGUS_TOKENIZER_URI, _metadata())
            yield


def _options(tmp_path: Path, **fields) -> EntrypointOptions:
    base = {
        "engine_uri": FP8_URI,
        "tokenizer_uri": TOKENIZER_URI,
        "models_dir": tmp_path / "models",
        "repository_dir": tmp_path / "repository",
        "tritonserver": "/opt/tritonserver/bin/tritonserver",
        "listen": Listen(),
    }
    return EntrypointOptions(**(base | fields))


def _launch(serving, tmp_path, *, visible=L4, memory=16 * GIB, **fields):
    return prepare_llmapi_launch(serving, _options(tmp_path, **fields), probe=lambda: visible, memory=lambda: memory)


def test_a_verified_checkpoint_becomes_the_llm_api_model_and_two_drained_processes(bucket, serving, tmp_path):
    launch = _launch(serving["dev"], tmp_path)
    model = tmp_path / "repository" / "tensorrt_llm"
    args = yaml.safe_load((model / "1" / "model.yaml").read_text())
    assert args["model"] == str(tmp_path / "models" / "checkpoint")
    assert args["tokenizer"] == str(tmp_path / "models" / "tokenizer")
    assert (model / "config.pbtxt").is_file() and (model / "1" / "model.py").is_file()
    assert launch.models == ["tensorrt_llm"]
    server, front_end = launch.children
    assert server.name == "tritonserver" and server.drain_first and front_end.drain_first
    assert server.argv[0] == "/opt/tritonserver/bin/tritonserver"
    assert f"--model-repository={tmp_path / 'repository'}" in server.argv
    assert front_end.argv[:3] == [sys.executable, "-m", "inference_platform.inference_image.openai_api"]
    assert f"--model-dir={model}" in front_end.argv and "--served-model-name=Llama-3.1-8B" in front_end.argv
    assert "--triton-url=http://127.0.0.1:8000" in front_end.argv and "--port=9000" in front_end.argv


def test_a_fallback_models_server_is_told_the_names_it_answers(bucket, serving, tmp_path):
    """serving.fallbackFor (set from models.fallbacks) reaches the OpenAI server as --answers-for, one per name, and
    the server's own parser takes them; without it, none."""
    from inference_platform.inference_image.openai_api.__main__ import parser

    dev = serving["dev"]
    backing = dev.model_copy(update={"fallback_for": ["Llama-3.1-70B", "Qwen2.5-7B-Instruct"]})
    front_end = _launch(backing, tmp_path).children[1]
    answers = [a for a in front_end.argv if a.startswith("--answers-for")]
    assert answers == ["--answers-for=Llama-3.1-70B", "--answers-for=Qwen2.5-7B-Instruct"]
    assert parser().parse_args(front_end.argv[3:]).answers_for == ["Llama-3.1-70B", "Qwen2.5-7B-Instruct"]
    plain = _launch(dev, tmp_path / "plain").children[1]
    assert not [a for a in plain.argv if a.startswith("--answers-for")]


def test_the_openai_server_drains_for_as_long_as_triton(bucket, serving, tmp_path):
    """serving.server.exitTimeoutSeconds reaches both processes: the OpenAI server's own 30 s default would cut a
    longer drain while Triton still serves it."""
    dev = serving["dev"]
    long_drain = dev.model_copy(update={"server": dev.server.model_copy(update={"exit_timeout_seconds": 300})})
    server, front_end = _launch(long_drain, tmp_path).children
    assert "--exit-timeout-secs=300" in server.argv and "--shutdown-timeout=300" in front_end.argv
    assert openai_parser().parse_args(front_end.argv[3:]).shutdown_timeout == 300


@pytest.mark.parametrize(
    ("fields", "update", "message"),
    [
        ({"engine_uri": BF16_URI}, {}, "quantization none: serving.precision fp8 needs a Model Optimizer FP8"),
        ({"engine_uri": ENGINE_URI}, {}, "rank*.engine files: a TensorRT engine"),
        ({}, {"precision": "bf16"}, "quantization FP8: serving.precision bf16 needs an unquantized checkpoint"),
        ({}, {"precision": "bf16"}, "manifest precision fp8 (serving.precision bf16)"),
    ],
)
def test_a_checkpoint_that_does_not_match_the_settings_is_refused(bucket, serving, tmp_path, fields, update, message):
    with pytest.raises(CommandError) as err:
        _launch(serving["dev"].model_copy(update=update), tmp_path, **fields)
    assert err.value.exit_code == 2 and message in str(err.value)
    assert not (tmp_path / "repository").exists()


def test_too_few_gpus_for_the_ranks_are_refused_before_rendering(bucket, serving, tmp_path):
    tp2 = serving["dev"].model_copy(update={"tensor_parallel": 2})
    with pytest.raises(CommandError) as err:
        _launch(tp2, tmp_path)
    assert err.value.exit_code == 2 and not (tmp_path / "repository").exists()


def test_a_tampered_checkpoint_serves_nothing(bucket, serving, tmp_path):
    boto3.client("s3").put_object(Bucket=BUCKET, Key="llama-3.1-8b-instruct/1/model.safetensors", Body=b"tampered")
    with pytest.raises(CommandError) as err:
        _launch(serving["dev"].model_copy(update={"precision": "bf16"}), tmp_path, engine_uri=BF16_URI)
    assert err.value.exit_code == 3 and "artifact refused, nothing served" in str(err.value)
    assert not (tmp_path / "repository").exists()


def test_multi_node_runs_the_world_under_mpirun_with_the_llm_api_launcher(bucket, serving, tmp_path):
    unpinned = serving["prod"].artifacts.model_copy(
        update={"engine_manifest_sha256": None, "tokenizer_manifest_sha256": None}
    )
    world = serving["prod"].model_copy(
        update={"nodes": 2, "tensor_parallel": 8, "pipeline_parallel": 2, "artifacts": unpinned}
    )
    h100 = VisibleAccelerators("nvidia", "sm90", 8, 8)
    with pytest.raises(CommandError, match="give that many hosts"):
        _launch(world, tmp_path / "a", visible=h100, memory=320 * GIB)
    launch = _launch(world, tmp_path / "b", visible=h100, memory=320 * GIB, hosts=("leader", "worker-1"))
    mpirun, front_end = launch.children
    assert front_end.name == "openai"
    assert mpirun.argv[:4] == ["mpirun", "--host", "leader:8,worker-1:8", "--map-by"]
    assert "trtllm-llmapi-launch" in mpirun.argv and mpirun.pidfile is not None
    args = yaml.safe_load((tmp_path / "b" / "repository" / "tensorrt_llm" / "1" / "model.yaml").read_text())
    # The host tier: 0.25 of the container's 320 GiB over the node's 8 ranks.
    assert args["kv_cache_config"]["host_cache_size"] == 10 * GIB


def test_the_checkpoint_check_names_every_problem(tmp_path):
    from inference_platform.settings import stack_files

    empty = tmp_path / "empty"
    empty.mkdir()
    problems = checkpoint_problems(stack_files.load("dev").serving, empty)
    assert any("no config.json" in p for p in problems) and any("no *.safetensors" in p for p in problems)
    assert any("quantization none" in p for p in problems)


def test_only_the_pinned_manifests_are_served(bucket, serving, tmp_path):
    """serving.artifacts pins each manifest's SHA-256: another valid version is refused, nothing rendered."""
    first = _launch(serving["dev"].model_copy(update={"artifacts": _unpinned(serving["dev"])}), tmp_path / "a")
    pins = serving["dev"].artifacts.model_copy(
        update={
            "engine_manifest_sha256": first.checkpoint_manifest.sha256,
            "tokenizer_manifest_sha256": first.tokenizer_manifest.sha256,
        }
    )
    pinned = serving["dev"].model_copy(update={"artifacts": pins})
    assert _launch(pinned, tmp_path / "b").checkpoint_manifest == first.checkpoint_manifest
    with pytest.raises(CommandError) as err:
        _launch(pinned, tmp_path / "c", tokenizer_uri=OTHER_TOKENIZER_URI)
    assert err.value.exit_code == 3 and "serving.artifacts.tokenizerManifestSha256" in str(err.value)
    assert not (tmp_path / "c" / "repository").exists()


def test_auth_reads_the_mounted_key_and_a_restart_replaces_the_repository(bucket, serving, tmp_path):
    key_file = tmp_path / "api-key"
    auth = serving["dev"].auth.model_copy(update={"enabled": True, "key_file": str(key_file)})
    settings = serving["dev"].model_copy(update={"auth": auth, "artifacts": _unpinned(serving["dev"])})
    with pytest.raises(CommandError, match=r"cannot be read .* is the secrets CSI volume mounted"):
        _launch(settings, tmp_path)
    key_file.write_text(KEY + "\n")
    launch = _launch(settings, tmp_path)
    assert any(a.endswith(f"x-api-key={KEY}") for a in launch.argv if a.startswith("--http-restricted-api="))
    (tmp_path / "repository" / "leftover").mkdir()
    _launch(settings, tmp_path)
    assert not (tmp_path / "repository" / "leftover").exists()


def test_a_tokenizer_that_is_not_one_is_refused(bucket, serving, tmp_path):
    settings = serving["dev"].model_copy(update={"artifacts": _unpinned(serving["dev"])})
    with pytest.raises(CommandError, match=r"tokenizer artifact: .* holds none of tokenizer.json"):
        _launch(settings, tmp_path, tokenizer_uri=BOGUS_TOKENIZER_URI)
    assert not (tmp_path / "repository").exists()


def _unpinned(serving):
    return serving.artifacts.model_copy(update={"engine_manifest_sha256": None, "tokenizer_manifest_sha256": None})


def test_an_eagle3_head_is_a_verified_artifact_handed_to_the_llm_api(bucket, serving, tmp_path):
    spec = serving["dev"].speculative.model_copy(
        update={"method": "eagle3", "max_draft_len": 3, "draft_model": DRAFT_URI}
    )
    eagle = serving["dev"].model_copy(update={"speculative": spec})
    _launch(eagle, tmp_path)
    args = yaml.safe_load((tmp_path / "repository" / "tensorrt_llm" / "1" / "model.yaml").read_text())
    assert args["speculative_config"] == {
        "decoding_type": "Eagle3",
        "max_draft_len": 3,
        "speculative_model": str(tmp_path / "models" / "draft"),
    }
    assert (tmp_path / "models" / "draft" / "config.json").is_file()
    pinned = eagle.model_copy(
        update={"artifacts": eagle.artifacts.model_copy(update={"draft_manifest_sha256": "0" * 64})}
    )
    with pytest.raises(CommandError) as err:
        _launch(pinned, tmp_path / "pinned")
    assert err.value.exit_code == 3 and "serving.artifacts.draftManifestSha256" in str(err.value)
