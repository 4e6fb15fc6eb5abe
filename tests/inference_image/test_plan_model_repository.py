"""`inferctl plan` writes the model repository the pods will load, rendered as the entrypoint renders it."""

from __future__ import annotations

from pathlib import Path

import pytest
from google.protobuf import text_format
from inference_platform.inferctl.plan.command import write_outputs
from inference_platform.inference_image.defaults import MODELS_DIR
from inference_platform.inference_image.model_repository import nvidia_keys
from inference_platform.inference_image.repository import render_repository
from inference_platform.offline_plan.model_repository import serving_json, write_model_repository
from tritonclient.grpc import model_config_pb2

MODELS = {"preprocessing", "tensorrt_llm", "postprocessing", "stream_gate", "ensemble", "tensorrt_llm_bls"}


def _tree(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): p.read_text() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("stack", ["dev", "prod", "npu"])
def test_each_stacks_plan_holds_the_repository_its_pods_render(stack_plan, serving, tmp_path, stack):
    plan = stack_plan(stack)
    write_outputs(plan, tmp_path / "out")
    written = tmp_path / "out" / stack / "model-repository"
    expected = tmp_path / "expected"
    # What the entrypoint renders from the same settings, at its paths.
    render_repository(
        serving[stack], expected, engine_dir=MODELS_DIR / "engine", tokenizer_dir=MODELS_DIR / "tokenizer"
    )
    assert _tree(written) == _tree(expected)
    llm = serving[stack].llm_model_name
    assert {p.name for p in written.iterdir()} == MODELS - {"tensorrt_llm"} | {llm}
    if llm == "tensorrt_llm":
        config = text_format.Parse((written / llm / "config.pbtxt").read_text(), model_config_pb2.ModelConfig())
        assert sorted(config.parameters) == sorted(nvidia_keys.TENSORRT_LLM)
        assert config.parameters["gpt_model_path"].string_value == str(MODELS_DIR / "engine")
        assert config.backend == "tensorrtllm"


def test_a_second_plan_replaces_the_repository(stack_plan, tmp_path):
    out = tmp_path / "model-repository"
    (out / "stale").mkdir(parents=True)
    write_model_repository(stack_plan("dev").run.resources, out)
    assert not (out / "stale").exists() and (out / "ensemble" / "config.pbtxt").is_file()


def test_a_plan_without_serving_writes_nothing(tmp_path):
    out = tmp_path / "model-repository"
    out.mkdir()
    assert serving_json([]) is None
    assert write_model_repository([], out) == []
    assert not out.exists()
