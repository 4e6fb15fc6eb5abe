"""The entrypoint's order of checks with real artifacts in an in-process moto S3: download -> verify
-> metadata and files -> accelerators -> render -> argv; every refusal starts nothing."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import boto3
import pytest
from inference_platform.artifacts import ModelMetadata, upload
from inference_platform.inference_image.accelerators import VisibleAccelerators
from inference_platform.inference_image.entrypoint import EntrypointOptions, exec_launch, prepare_launch
from inference_platform.inference_image.testing.assets import write_engine
from inference_platform.inference_image.testing.cpu_llm.options import StandIn
from moto import mock_aws

from inference_platform.errors import CommandError

BUCKET = "inference-models"
ENGINE_URI = f"s3://{BUCKET}/llama-3.1-8b/engine/1/"
CORRUPT_URI = f"s3://{BUCKET}/llama-3.1-8b/engine/2/"
CORRUPT_KEY = "llama-3.1-8b/engine/2/rank0.engine"
TOKENIZER_URI = f"s3://{BUCKET}/llama-3.1-8b/tokenizer/1/"
PLAIN_TOKENIZER_URI = f"s3://{BUCKET}/llama-3.1-8b/tokenizer/2/"
BOGUS_TOKENIZER_URI = f"s3://{BUCKET}/llama-3.1-8b/tokenizer/3/"
AWS_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_REGION": "us-east-1",
    "AWS_EC2_METADATA_DISABLED": "true",
}
L4 = VisibleAccelerators("nvidia", "sm89", 1, 1, ("NVIDIA L4",))
KEY = "entrypoint-test-key-0123456789"


def _metadata(**fields) -> ModelMetadata:
    base = {
        "architecture": "LlamaForCausalLM",
        "precision": "fp8",
        "accelerator": "nvidia-l4",
        "builder": "tensorrt-llm",
        "builder_version": "0.20.0",
    }
    return ModelMetadata(**(base | fields))


@pytest.fixture(scope="module")
def bucket(tmp_path_factory, tokenizer_dir):
    """One in-process S3 for the module: the engine twice (one copy gets corrupted), the tokenizer with
    and without xgrammar's tokenizer info."""
    work = tmp_path_factory.mktemp("sources")
    with pytest.MonkeyPatch.context() as patch:
        for name, value in AWS_ENV.items():
            patch.setenv(name, value)
        patch.setenv("AWS_CONFIG_FILE", str(work / "aws-config"))
        patch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(work / "aws-credentials"))
        with mock_aws():
            boto3.client("s3").create_bucket(Bucket=BUCKET)
            engine = write_engine(work / "engine")
            upload(engine, ENGINE_URI, _metadata())
            upload(engine, CORRUPT_URI, _metadata())
            boto3.client("s3").put_object(Bucket=BUCKET, Key=CORRUPT_KEY, Body=b"tampered")
            upload(tokenizer_dir, PLAIN_TOKENIZER_URI, _metadata())
            guided = work / "tokenizer"
            shutil.copytree(tokenizer_dir, guided)
            (guided / "xgrammar_tokenizer_info.json").write_text(json.dumps({"vocab_type": "BYTE_LEVEL"}))
            upload(guided, TOKENIZER_URI, _metadata())
            bogus = work / "bogus"
            bogus.mkdir()
            (bogus / "vocab.txt").write_text("a\n")
            upload(bogus, BOGUS_TOKENIZER_URI, _metadata())
            yield


@pytest.fixture
def store(bucket, tmp_path):
    return tmp_path


def _options(tmp_path: Path, **fields) -> EntrypointOptions:
    base = {
        "engine_uri": ENGINE_URI,
        "tokenizer_uri": TOKENIZER_URI,
        "models_dir": tmp_path / "models",
        "repository_dir": tmp_path / "repository",
        "tritonserver": "/opt/tritonserver/bin/tritonserver",
    }
    return EntrypointOptions(**(base | fields))


def test_verified_artifacts_become_a_repository_and_a_server_command(store, serving):
    launch = prepare_launch(serving["dev"], _options(store), probe=lambda: L4)
    assert (store / "models" / "engine" / ".complete").is_file()
    assert (store / "models" / "tokenizer" / "tokenizer.json").is_file()
    config = (store / "repository" / "tensorrt_llm" / "config.pbtxt").read_text()
    assert f'string_value: "{store / "models" / "engine"}"' in config
    assert launch.argv[0] == "/opt/tritonserver/bin/tritonserver"
    assert f"--model-repository={store / 'repository'}" in launch.argv and "--strict-readiness=true" in launch.argv
    assert launch.engine_manifest.metadata.accelerator_arch == "sm89"
    calls = []
    exec_launch(launch, execvp=lambda path, argv: calls.append((path, argv)))
    assert calls == [(launch.argv[0], launch.argv)]


def test_a_corrupted_artifact_is_refused_by_name_and_nothing_is_rendered(store, serving):
    options = _options(store, engine_uri=CORRUPT_URI)
    with pytest.raises(CommandError) as err:
        prepare_launch(serving["dev"], options, probe=lambda: pytest.fail("probed after a failed download"))
    assert err.value.exit_code == 3
    assert "engine artifact refused, nothing served" in str(err.value) and "rank0.engine" in str(err.value)
    assert not (store / "repository").exists()
    assert not (store / "models" / "engine" / ".complete").exists()


def test_only_the_pinned_manifests_are_served(store, serving):
    """serving.artifacts pins each manifest's SHA-256: a self-consistent replacement is refused."""
    first = prepare_launch(serving["dev"], _options(store), probe=lambda: L4)
    artifacts = serving["dev"].artifacts.model_copy(
        update={
            "engine_manifest_sha256": first.engine_manifest.sha256,
            "tokenizer_manifest_sha256": first.tokenizer_manifest.sha256,
        }
    )
    pinned = serving["dev"].model_copy(update={"artifacts": artifacts})
    assert prepare_launch(pinned, _options(store), probe=lambda: L4).engine_manifest == first.engine_manifest
    shutil.rmtree(store / "repository")
    # Another published version (the plain tokenizer) is a valid artifact, but not the pinned one.
    with pytest.raises(CommandError) as err:
        prepare_launch(pinned, _options(store, tokenizer_uri=PLAIN_TOKENIZER_URI), probe=lambda: L4)
    assert err.value.exit_code == 3
    assert f"not the pinned {first.tokenizer_manifest.sha256}" in str(err.value)
    assert "serving.artifacts.tokenizerManifestSha256" in str(err.value)
    assert not (store / "repository").exists()


@pytest.mark.parametrize(
    ("visible", "message"),
    [
        (VisibleAccelerators("nvidia", "sm90", 1, 1, ("NVIDIA H100",)), "built for sm89"),
        (VisibleAccelerators("nvidia", "sm89", 2, 2, ("NVIDIA L4",) * 2), "runs 1 rank"),
        (VisibleAccelerators("none", None, 0, 0), "request nvidia.com/gpu"),
    ],
)
def test_an_engine_for_other_accelerators_is_refused(store, serving, visible, message):
    with pytest.raises(CommandError, match=message):
        prepare_launch(serving["dev"], _options(store), probe=lambda: visible)
    assert not (store / "repository").exists()


def test_an_engine_built_for_other_settings_is_refused(store, serving):
    settings = serving["dev"].model_copy(update={"tensor_parallel": 2, "precision": "bf16"})
    with pytest.raises(CommandError) as err:
        prepare_launch(settings, _options(store), probe=lambda: L4)
    assert "tensor parallel 1 (serving.tensorParallel 2)" in str(err.value)
    assert "precision fp8 (serving.precision bf16)" in str(err.value)


def test_guided_decoding_needs_the_xgrammar_tokenizer_info_on_the_real_backend(store, serving):
    plain = _options(store, tokenizer_uri=PLAIN_TOKENIZER_URI)
    with pytest.raises(CommandError, match=r"lacks xgrammar_tokenizer_info.json"):
        prepare_launch(serving["dev"], plain, probe=lambda: L4)
    stand_in = _options(store, tokenizer_uri=PLAIN_TOKENIZER_URI, stand_in=StandIn())
    launch = prepare_launch(serving["dev"], stand_in, probe=lambda: L4)
    assert (launch.repository / "tensorrt_llm" / "1" / "model.py").is_file()  # the stand-in, by request


def test_auth_reads_the_mounted_key_and_refuses_without_it(store, serving, tmp_path):
    key_file = tmp_path / "api-key"
    auth = serving["dev"].auth.model_copy(update={"enabled": True, "key_file": str(key_file)})
    settings = serving["dev"].model_copy(update={"auth": auth})
    options = _options(store, stand_in=StandIn())
    with pytest.raises(CommandError, match=r"cannot be read .* is the secrets CSI volume mounted"):
        prepare_launch(settings, options, probe=lambda: L4)
    key_file.write_text(KEY + "\n")
    launch = prepare_launch(settings, options, probe=lambda: L4)
    assert any(a.endswith(f"x-api-key={KEY}") for a in launch.argv if a.startswith("--http-restricted-api="))
    env_auth = auth.model_copy(update={"key_file": None, "key_env": "INFERENCE_API_KEY"})
    env_settings = settings.model_copy(update={"auth": env_auth})
    with pytest.raises(CommandError, match="environment variable INFERENCE_API_KEY"):
        prepare_launch(env_settings, options, probe=lambda: L4, environ={"INFERENCE_API_KEY": "short"})


def test_a_restart_replaces_the_previous_repository(store, serving):
    options = _options(store, stand_in=StandIn())
    prepare_launch(serving["dev"], options, probe=lambda: L4)
    (store / "repository" / "leftover").mkdir()
    prepare_launch(serving["dev"], options, probe=lambda: L4)
    assert not (store / "repository" / "leftover").exists()


def test_a_tokenizer_that_is_not_one_is_refused(store, serving):
    options = _options(store, tokenizer_uri=BOGUS_TOKENIZER_URI, stand_in=StandIn())
    with pytest.raises(CommandError, match=r"tokenizer artifact: .* holds none of tokenizer.json"):
        prepare_launch(serving["dev"], options, probe=lambda: L4)
